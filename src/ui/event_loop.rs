//! One loop, one `select!`: terminal input, fleet updates, link changes, a 1 Hz tick for
//! countdowns and ages, and SIGTERM/SIGHUP. Drain what is pending, draw once; no fixed frame
//! rate, and nothing here waits on the network.

use std::time::Duration;

use chrono::Utc;
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;
use ratatui::DefaultTerminal;
use tokio::sync::mpsc;

use super::alerting::{Alerting, SAVE_EVERY, save_memory, toggle_silence};
use super::app::{Action, App};
use super::jobs::{self, JobMsg};
use super::teardown_modal::{ModalAction, Phase, TeardownModal};
use super::theme::Theme;
use super::{Ctx, draw};
use crate::demo::Demo;
use crate::fleet::Update;
use crate::monitor::feed::{Feed, LinkChanges};
use crate::monitor::{FleetState, HostState};
use crate::teardown::{GuardEvent, QueueNote, RunLooks, queue_note};
use crate::transport::Pool;

/// Where the fleet's readings come from.
pub enum Source {
    Demo(Demo),
    Live {
        feed: Feed,
        /// For the teardown checks: provider CLIs and the ssh config.
        fleet: std::sync::Arc<crate::config::FleetConfig>,
    },
}

impl Source {
    /// Starts the live feed on `pool` (see `monitor::feed`).
    pub fn live(pool: Pool, fleet: &crate::config::FleetConfig) -> Source {
        Source::Live {
            feed: Feed::start(pool, fleet),
            fleet: std::sync::Arc::new(fleet.clone()),
        }
    }

    /// The channels, moved out so the loop can wait on them while it also uses the source.
    fn take_channels(&mut self) -> (Option<mpsc::Receiver<Update>>, Option<LinkChanges>) {
        match self {
            Source::Live { feed, .. } => (feed.updates.take(), feed.links.take()),
            Source::Demo(_) => (None, None),
        }
    }

    async fn shutdown(self) {
        if let Source::Live { feed, .. } = self {
            feed.shutdown().await;
        }
    }
}

/// Receives from a channel the source may not have (the demo has none): never resolves then.
async fn recv_or_wait<T>(rx: Option<&mut mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

pub async fn run(
    terminal: &mut DefaultTerminal,
    mut app: App,
    mut state: FleetState,
    mut source: Source,
    theme: Theme,
    poll: Duration,
) -> std::io::Result<FleetState> {
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut demo_poll = tokio::time::interval(poll);
    demo_poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let (mut updates, mut links) = source.take_channels();
    let (job_tx, mut job_rx) = mpsc::channel::<JobMsg>(64);
    if matches!(source, Source::Live { .. }) {
        let hosts = state.hosts.iter().map(|h| h.config.clone()).collect();
        jobs::spawn_verified(hosts, job_tx.clone());
    }
    let mut dirty = true;
    let mut last_saved = tokio::time::Instant::now();
    let mut alerts = Alerting::new(&source);
    // Data arriving faster than this is drawn together; keys are drawn at once.
    let frame_gap = Duration::from_millis(50);
    let mut last_draw = tokio::time::Instant::now() - frame_gap;
    let mut key_pressed = false;
    let mut stop_after_destroy = false;
    if let Source::Live { fleet, .. } = &source {
        jobs::spawn_unfinished(std::sync::Arc::clone(fleet), &state, job_tx.clone());
    }
    loop {
        if dirty && (key_pressed || last_draw.elapsed() >= frame_gap) {
            let ctx = Ctx {
                app: &app,
                state: &state,
                theme: &theme,
                now: Utc::now(),
                poll,
            };
            terminal.draw(|frame| draw(frame, &ctx))?;
            dirty = false;
            key_pressed = false;
            last_draw = tokio::time::Instant::now();
        }
        tokio::select! {
            () = tokio::time::sleep_until(last_draw + frame_gap), if dirty => {}
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind == KeyEventKind::Press => {
                    key_pressed = true;
                    match app.handle_key(key, &state) {
                        Action::Quit => break,
                        Action::None => {}
                        Action::Refresh => refresh(&mut app, &mut state, &mut source),
                        Action::Pull(host) => start_pull(&mut app, &state, &source, &host, &job_tx),
                        Action::Teardown(host) => open_teardown(&mut app, &state, &source, &host, &job_tx),
                        Action::Silence(host) => toggle_silence(&mut app, &source, &host),
                        Action::FinalCheck { host, opening } => {
                            if let Some(h) = state.host(&host) {
                                let demo = matches!(source, Source::Demo(_));
                                jobs::spawn_final_check(session_of(&source, &host), h.config.clone(), opening, demo, job_tx.clone());
                            }
                        }
                        Action::Destroy { host, pull_id } => {
                            if let Some(job) = teardown_ctx(&state, &source, &host) {
                                jobs::spawn_destroy(job, pull_id, job_tx.clone());
                            }
                        }
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
            Some(update) = recv_or_wait(updates.as_mut()) => {
                let now = Utc::now();
                state.observe(&update.host, update.observation, now);
                // A hundred hosts report at about the same moment: take everything already
                // queued, then draw once.
                if let Some(rx) = updates.as_mut() {
                    while let Ok(more) = rx.try_recv() {
                        state.observe(&more.host, more.observation, now);
                    }
                }
                dirty = true;
            }
            Some((host, link)) = recv_or_wait(links.as_mut()) => {
                state.set_link(&host, link, Utc::now());
                dirty = true;
            }
            Some(msg) = job_rx.recv() => {
                if let Some((host, pull_id)) = job_done(&mut app, &mut state, msg) {
                    if let Some(job) = teardown_ctx(&state, &source, &host) {
                        jobs::spawn_destroy(job, pull_id, job_tx.clone());
                    }
                }
                dirty = true;
            }
            _ = tick.tick() => {
                state.tick(Utc::now());
                if matches!(source, Source::Live { .. }) {
                    app.silenced = crate::alerts::silences::path()
                        .map(|p| crate::alerts::silences::load(&p, Utc::now()))
                        .unwrap_or_default();
                }
                // Cost and last-seen are saved every minute, not only on quit: a crash or a
                // killed terminal loses at most a minute of accrual.
                if let Some(alerts) = alerts.as_mut() {
                    alerts.tick(&state, &app, &job_tx);
                }
                if matches!(source, Source::Live { .. }) && last_saved.elapsed() >= SAVE_EVERY {
                    last_saved = tokio::time::Instant::now();
                    save_memory(&state);
                }
                if let Some(modal) = &mut app.modal {
                    if let Some(h) = state.host(&modal.host) {
                        modal.guard.handle(GuardEvent::RunLooks(RunLooks::of(&h.run)));
                        modal.set_queue(queue_note_of(&state, h));
                        // A check older than its limit no longer counts: look again.
                        if modal.age(std::time::Instant::now()) {
                            if let Some(job) = teardown_ctx(&state, &source, &modal.host) {
                                let run = RunLooks::of(&h.run);
                                jobs::spawn_check(session_of(&source, &modal.host), job, modal.guard.opening(), run, job_tx.clone());
                            }
                        }
                    }
                }
                dirty = true;
            }
            _ = demo_poll.tick(), if matches!(source, Source::Demo(_)) => {
                if let Source::Demo(demo) = &mut source {
                    demo.advance(&mut state, Utc::now());
                }
                dirty = true;
            }
            // A destroy running now is waited for (it is bounded by its timeout and confirm
            // window), so its outcome is recorded before rigwatch exits.
            _ = sigterm.recv() => if stop_now(&mut app, &mut stop_after_destroy) { break } else { dirty = true },
            _ = sighup.recv() => if stop_now(&mut app, &mut stop_after_destroy) { break } else { dirty = true },
        }
        if stop_after_destroy && !destroying(&app) {
            break;
        }
    }
    source.shutdown().await;
    Ok(state)
}

const WAITS: &str =
    "a destroy is running: rigwatch exits once it has ended and its outcome is recorded";

fn destroying(app: &App) -> bool {
    app.modal
        .as_ref()
        .is_some_and(|m| m.phase == Phase::Running)
}

/// SIGTERM or SIGHUP: true to quit now; while a destroy runs, says so and marks the loop to quit
/// once its outcome is recorded.
fn stop_now(app: &mut App, after_destroy: &mut bool) -> bool {
    if !destroying(app) {
        return true;
    }
    *after_destroy = true;
    app.notice = Some(WAITS.into());
    false
}

fn refresh(app: &mut App, state: &mut FleetState, source: &mut Source) {
    let now = Utc::now();
    match source {
        Source::Demo(demo) => {
            demo.advance(state, now);
            app.notice = Some("refreshed: one more replayed reading per box".into());
        }
        Source::Live { .. } => {
            state.tick(now);
            app.notice = Some(
                "streams are live: every box reports each period; links reconnect on their own"
                    .into(),
            );
        }
    }
}

fn teardown_ctx(state: &FleetState, source: &Source, host: &str) -> Option<jobs::TeardownCtx> {
    let h = state.host(host)?;
    Some(jobs::TeardownCtx {
        host: h.config.clone(),
        profile: state.profile(&h.config.profile).cloned(),
        fleet: match source {
            Source::Live { fleet, .. } => Some(std::sync::Arc::clone(fleet)),
            Source::Demo(_) => None,
        },
    })
}

fn session_of(source: &Source, host: &str) -> Option<std::sync::Arc<crate::transport::Session>> {
    match source {
        Source::Live { feed, .. } => feed.pool.get(host).and_then(|l| l.session()),
        Source::Demo(_) => None,
    }
}

fn start_pull(
    app: &mut App,
    state: &FleetState,
    source: &Source,
    host: &str,
    tx: &mpsc::Sender<JobMsg>,
) {
    let Some(h) = state.host(host) else {
        return;
    };
    if app.pulls.contains_key(host) {
        app.notice = Some(format!("pull {host}: already running"));
        return;
    }
    if h.config.pull.is_none() {
        app.notice = Some(format!(
            "pull {host}: no [host.pull] paths in fleet.toml say what to bring home"
        ));
        return;
    }
    let Some(session) = session_of(source, host) else {
        app.notice = Some(format!(
            "pull {host}: {}",
            if app.demo {
                "demo boxes are replays: there is nothing to pull"
            } else {
                "the link is down; it resumes from the .part files once it is back"
            }
        ));
        return;
    };
    let progress = std::sync::Arc::new(crate::pull::Progress::default());
    app.pulls
        .insert(host.to_string(), std::sync::Arc::clone(&progress));
    if let Some(modal) = &mut app.modal {
        if modal.host == host {
            modal.guard.handle(GuardEvent::Invalidated);
        }
    }
    jobs::spawn_pull(session, h.config.clone(), progress, tx.clone());
}

fn open_teardown(
    app: &mut App,
    state: &FleetState,
    source: &Source,
    host: &str,
    tx: &mpsc::Sender<JobMsg>,
) {
    let (Some(h), Some(job)) = (state.host(host), teardown_ctx(state, source, host)) else {
        return;
    };
    let run = RunLooks::of(&h.run);
    // Each opening has its own number: a check taken for an earlier one never counts here.
    app.openings += 1;
    let mut modal = TeardownModal::new(host, app.openings);
    modal.guard.handle(GuardEvent::RunLooks(run));
    modal.set_queue(queue_note_of(state, h));
    app.modal = Some(modal);
    jobs::spawn_check(session_of(source, host), job, app.openings, run, tx.clone());
}

fn queue_note_of(state: &FleetState, h: &HostState) -> Option<QueueNote> {
    queue_note(
        h.config.queue.is_some(),
        state.queue_summary(&h.config.name),
    )
}

/// Applies a job's answer; Some((host, pull id)) when the final look let the guard fire.
fn job_done(app: &mut App, state: &mut FleetState, msg: JobMsg) -> Option<(String, i64)> {
    match msg {
        JobMsg::Notice(text) => app.notice = Some(text),
        JobMsg::Checked {
            host,
            opening,
            words,
            plan,
            currentness,
        } => {
            if let Some(modal) = app.modal.as_mut().filter(|m| m.host == host) {
                modal.checked(opening, words, plan, currentness);
            }
        }
        JobMsg::FinalChecked {
            host,
            opening,
            currentness,
        } => {
            let modal = app.modal.as_mut().filter(|m| m.host == host)?;
            if let ModalAction::Destroy { pull_id } = modal.final_checked(opening, currentness) {
                return Some((host, pull_id));
            }
        }
        JobMsg::Pulled {
            host,
            summary,
            verified,
        } => {
            app.pulls.remove(&host);
            app.notice = Some(summary);
            if let Some(cells) = verified {
                state.set_verified(&host, cells, Utc::now());
            }
        }
        JobMsg::Verified(by_host) => {
            for (host, cells) in by_host {
                state.set_verified(&host, cells, Utc::now());
            }
        }
        JobMsg::Destroyed {
            host,
            outcome,
            output,
            last,
        } => {
            if let Some(modal) = app.modal.as_mut().filter(|m| m.host == host) {
                modal.phase = Phase::Finished { outcome, last };
                modal.messages = output;
            }
        }
    }
    None
}
