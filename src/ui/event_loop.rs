//! One loop, one `select!`: terminal input, the runtime's steps (readings, link changes, the
//! 1 Hz judgement for countdowns and ages), jobs' answers, and SIGTERM/SIGHUP. Drain what is
//! pending, draw once; no fixed frame rate, and nothing here waits on the network.

use std::time::Duration;

use chrono::Utc;
use crossterm::event::{Event, KeyEventKind};
use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc;

use super::alerting::toggle_silence;
use super::app::{Action, App};
use super::jobs::{self, JobMsg};
use super::teardown_modal::TeardownModal;
use super::theme::Theme;
use super::{Ctx, draw};
use crate::demo::teardown::DemoIo;
use crate::fleet::{FleetState, HostState};
use crate::runtime::{Runtime, Sender, Step};
use crate::teardown::{
    Dialog, Effect, Event as DialogEvent, LiveIo, QueueNote, QueueSeen, RunLooks, Stage,
    TeardownIo, queue_note,
};

/// The dashboard's loop over any ratatui backend and any stream of terminal events, so the
/// same loop runs in a terminal and in tests on a `TestBackend`.
pub async fn run<B, E>(
    terminal: &mut Terminal<B>,
    mut keys: E,
    mut app: App,
    runtime: &mut Runtime,
    theme: Theme,
    poll: Duration,
) -> std::io::Result<()>
where
    B: Backend,
    E: Stream<Item = std::io::Result<Event>> + Unpin,
{
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let (job_tx, mut job_rx) = mpsc::channel::<JobMsg>(64);
    if let Some(fleet) = runtime.fleet() {
        let hosts = runtime
            .state
            .hosts
            .iter()
            .map(|h| h.config.clone())
            .collect();
        jobs::spawn_verified(hosts, job_tx.clone());
        jobs::spawn_unfinished(std::sync::Arc::clone(fleet), &runtime.state, job_tx.clone());
    }
    let mut dirty = true;
    // Data arriving faster than this is drawn together; keys are drawn at once.
    let frame_gap = Duration::from_millis(50);
    let mut last_draw = tokio::time::Instant::now() - frame_gap;
    let mut key_pressed = false;
    let mut stop_after_destroy = false;
    let mut told_sender = None;
    loop {
        if dirty && (key_pressed || last_draw.elapsed() >= frame_gap) {
            let ctx = Ctx {
                app: &app,
                state: &runtime.state,
                theme: &theme,
                now: Utc::now(),
                poll,
            };
            terminal
                .draw(|frame| draw(frame, &ctx))
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            dirty = false;
            key_pressed = false;
            last_draw = tokio::time::Instant::now();
        }
        tokio::select! {
            () = tokio::time::sleep_until(last_draw + frame_gap), if dirty => {}
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) if key.kind == KeyEventKind::Press => {
                    key_pressed = true;
                    let state = &runtime.state;
                    match app.handle_key(key, state) {
                        Action::Quit => break,
                        Action::None => {}
                        Action::Refresh => app.notice = Some(runtime.refresh(Utc::now()).into()),
                        Action::Pull(host) => start_pull(&mut app, runtime, &host, &job_tx),
                        Action::Teardown(host) => open_teardown(&mut app, runtime, &host, &job_tx),
                        Action::Silence(host) => toggle_silence(&mut app, runtime.is_demo(), &host),
                        Action::Dialog { host, effects } => carry_out(runtime, &host, effects, &job_tx),
                    }
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
            step = runtime.step() => {
                match step {
                    Step::Notice(why) => app.notice = Some(why),
                    Step::Readings => {}
                    Step::Ticked(_) => {
                        app.silenced = runtime.silenced().clone();
                        let sender = runtime.sender().clone();
                        if told_sender.as_ref() != Some(&sender) {
                            if let Sender::Other(who) = &sender {
                                if !runtime.is_demo() {
                                    app.notice = Some(format!("alerts are sent by {who}; this dashboard shows them and sends nothing"));
                                }
                            }
                            told_sender = Some(sender);
                        }
                        age_modal(&mut app, runtime, &job_tx);
                    }
                }
                dirty = true;
            }
            Some(msg) = job_rx.recv() => {
                if let Some((host, effects)) = job_done(&mut app, &mut runtime.state, msg) {
                    carry_out(runtime, &host, effects, &job_tx);
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
    Ok(())
}

/// The open teardown dialog follows the run's state and the queue, and ages its check (a check
/// older than its limit no longer counts and is taken again).
fn age_modal(app: &mut App, runtime: &Runtime, tx: &mpsc::Sender<JobMsg>) {
    let state = &runtime.state;
    let Some(modal) = &mut app.modal else { return };
    let Some(h) = state.host(modal.host()) else {
        return;
    };
    let dialog = &mut modal.dialog;
    let mut effects = dialog.handle(DialogEvent::Run(RunLooks::of(&h.run)));
    effects.extend(dialog.handle(DialogEvent::Queue(queue_note_of(state, h))));
    effects.extend(dialog.handle(DialogEvent::Tick(std::time::Instant::now())));
    carry_out(runtime, &h.config.name, effects, tx);
}

const WAITS: &str =
    "a destroy is running: rigwatch exits once it has ended and its outcome is recorded";

fn destroying(app: &App) -> bool {
    app.modal
        .as_ref()
        .is_some_and(|m| matches!(m.dialog.stage(), Stage::Destroying { .. }))
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

/// The teardown dialog's I/O for `host`: the live box, or the demo's replay. The only place the
/// dashboard tells them apart for a teardown.
fn teardown_io(runtime: &Runtime, host: &str) -> Option<std::sync::Arc<dyn TeardownIo>> {
    let state = &runtime.state;
    let h = state.host(host)?;
    let profile = state.profile(&h.config.profile).cloned();
    Some(match runtime.fleet() {
        Some(fleet) => std::sync::Arc::new(LiveIo {
            session: runtime.session(host),
            host: h.config.clone(),
            profile,
            fleet: std::sync::Arc::clone(fleet),
            ledger: crate::ledger::default_path(),
        }),
        None => std::sync::Arc::new(DemoIo {
            host: h.config.clone(),
            profile,
        }),
    })
}

/// Hands the dialog's effects to the one executor, each as its own task.
fn carry_out(runtime: &Runtime, host: &str, effects: Vec<Effect>, tx: &mpsc::Sender<JobMsg>) {
    if effects.is_empty() {
        return;
    }
    let Some(io) = teardown_io(runtime, host) else {
        return;
    };
    for effect in effects {
        jobs::spawn_teardown(
            std::sync::Arc::clone(&io),
            host.to_string(),
            effect,
            tx.clone(),
        );
    }
}

fn start_pull(app: &mut App, runtime: &Runtime, host: &str, tx: &mpsc::Sender<JobMsg>) {
    let Some(h) = runtime.state.host(host) else {
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
    let Some(session) = runtime.session(host) else {
        app.notice = Some(format!(
            "pull {host}: {}",
            if runtime.is_demo() {
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
    if let Some(modal) = app.modal.as_mut().filter(|m| m.host() == host) {
        modal.dialog.handle(DialogEvent::Invalidated);
    }
    jobs::spawn_pull(session, h.config.clone(), progress, tx.clone());
}

fn open_teardown(app: &mut App, runtime: &Runtime, host: &str, tx: &mpsc::Sender<JobMsg>) {
    let state = &runtime.state;
    let Some(h) = state.host(host) else {
        return;
    };
    // Each opening has its own number: a check taken for an earlier one never counts here.
    app.openings += 1;
    let mut dialog = Dialog::new(host, app.openings);
    dialog.handle(DialogEvent::Run(RunLooks::of(&h.run)));
    dialog.handle(DialogEvent::Queue(queue_note_of(state, h)));
    let effects = dialog.handle(DialogEvent::Opened);
    app.modal = Some(TeardownModal::new(dialog));
    carry_out(runtime, host, effects, tx);
}

fn queue_note_of(state: &FleetState, h: &HostState) -> Option<QueueNote> {
    queue_note(match &h.config.queue {
        None => QueueSeen::NotConfigured,
        Some(q) => match state.queue_summary(&h.config.name) {
            Some(summary) => QueueSeen::Read(summary),
            None => QueueSeen::Unread {
                file: &q.file,
                why: None,
            },
        },
    })
}

/// Applies a job's answer; Some((host, effects)) when the teardown dialog asks for more.
fn job_done(app: &mut App, state: &mut FleetState, msg: JobMsg) -> Option<(String, Vec<Effect>)> {
    match msg {
        JobMsg::Notice(text) => app.notice = Some(text),
        JobMsg::Teardown { host, event } => {
            // An answer for a dialog since closed (or another host's) has no one to go to; one
            // for an earlier opening of this host's dialog is ignored by the dialog itself.
            let modal = app.modal.as_mut().filter(|m| m.host() == host)?;
            return Some((host, modal.dialog.handle(event)));
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
    }
    None
}
