//! One loop, one `select!`: terminal input, the runtime's steps (readings, link changes, the
//! 1 Hz judgement for countdowns and ages, pulls' and the teardown's answers), and
//! SIGTERM/SIGHUP. Drain what is
//! pending, draw once; no fixed frame rate, and nothing here waits on the network.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use crossterm::event::{Event, KeyEventKind};
use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;

use super::app::{Action, App, View};
use super::teardown_modal::TeardownModal;
use super::theme::Theme;
use super::{Ctx, draw};
use crate::pull::Progress;
use crate::runtime::{Runtime, Sender, Step};
use crate::target::Target;
use crate::teardown::{Dialog, Event as DialogEvent, Stage, looks_of};

/// Why the dashboard's loop ended.
#[derive(Debug)]
pub enum Ended {
    Quit,
    /// The person asked for their own `ssh` (`s`, `l`, `L`): the caller gives the terminal to
    /// `argv` and runs the loop again with `app` once it ends.
    Handover {
        app: Box<App>,
        target: Target,
        argv: Vec<std::ffi::OsString>,
    },
}

/// The dashboard's loop over any ratatui backend and any stream of terminal events, so the
/// same loop runs in a terminal and in tests on a `TestBackend`.
pub async fn run<B, E>(
    terminal: &mut Terminal<B>,
    mut keys: E,
    mut app: App,
    runtime: &mut Runtime,
    theme: Theme,
    poll: Duration,
) -> std::io::Result<Ended>
where
    B: Backend,
    E: Stream<Item = std::io::Result<Event>> + Unpin,
{
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut dirty = true;
    // Data arriving faster than this is drawn together; keys are drawn at once.
    let frame_gap = Duration::from_millis(50);
    let mut last_draw = tokio::time::Instant::now() - frame_gap;
    let mut key_pressed = false;
    let mut stop_after_destroy = false;
    let mut told_sender = None;
    // The details' records of pulls and teardowns, as the ledger has them now (a shell handed
    // over to may have pulled or torn down meanwhile).
    runtime.read_records();
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
                    let open = app.modal.as_ref().map(|m| m.dialog.target().clone());
                    let state = &runtime.state;
                    let action = app.handle_key(key, state);
                    // A dialog closed by this key lets go of what it held (its final check's
                    // hold on the box) at once, not when that check would have aged out.
                    if let (Some(target), None) = (&open, &app.modal) {
                        runtime.close_teardown(target);
                    }
                    match action {
                        Action::Quit => break,
                        Action::None => {}
                        Action::Refresh => app.notice = Some(runtime.refresh(Utc::now()).into()),
                        Action::Pull(target) => start_pull(&mut app, runtime, &target),
                        Action::Teardown(target) => open_teardown(&mut app, runtime, target),
                        Action::Silence(target) => {
                            app.notice = Some(runtime.toggle_silence(target.member()));
                            app.silenced = runtime.silenced().clone();
                        }
                        Action::Dialog { target, effects } => runtime.teardown(&target, effects),
                        Action::Copy(target) => app.notice = Some(copy(&target)),
                        Action::Kill { host, targets } => {
                            if let Err(why) = runtime.kill(&host, targets) {
                                killed(&mut app, &host, why);
                            }
                        }
                        Action::Handover { target, what } => match runtime.handover(&target, what) {
                            Ok(argv) => {
                                return Ok(Ended::Handover { app: Box::new(app), target, argv });
                            }
                            Err(why) => app.notice = Some(why),
                        },
                    }
                    dirty = true;
                }
                Some(Ok(Event::Mouse(mouse))) if app.modal.is_none() && app.kill.is_none() && !app.help => {
                    key_pressed = true;
                    if let Action::Quit = app.handle_mouse(mouse, &runtime.state) {
                        break;
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
                    Step::Killed { host, said } => killed(&mut app, &host, said),
                    Step::Readings => {}
                    Step::PullBegan { host, progress } => pull_began(&mut app, &host, progress),
                    Step::Pulled { host, summary } => {
                        app.pulls.remove(&host);
                        app.notice = Some(summary);
                    }
                    Step::Teardown { target, event } => {
                        // An answer for a dialog since closed (or another target's) has no one
                        // to go to; one for an earlier opening is ignored by the dialog itself.
                        if let Some(modal) = app.modal.as_mut().filter(|m| m.dialog.target() == target.as_ref()) {
                            let effects = modal.dialog.handle(event);
                            runtime.teardown(&target, effects);
                        }
                    }
                    Step::Ticked(_) => {
                        app.silenced = runtime.silenced().clone();
                        // Who holds a box is shown in its detail only: looked up while it is open.
                        app.holders = match app.view {
                            View::Detail => runtime.holders(),
                            _ => Default::default(),
                        };
                        let sender = runtime.sender().clone();
                        if told_sender.as_ref() != Some(&sender) {
                            if let Sender::Other(who) = &sender {
                                if !runtime.is_demo() {
                                    app.notice = Some(format!("alerts are sent by {who}; this dashboard shows them and sends nothing"));
                                }
                            }
                            told_sender = Some(sender);
                        }
                        age_modal(&mut app, runtime);
                    }
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
    Ok(Ended::Quit)
}

/// What `K` did on `host`: in its dialog when that is still open, and in the status bar.
fn killed(app: &mut App, host: &str, said: String) {
    if let Some(modal) = app.kill.as_mut().filter(|m| m.host == host) {
        modal.stage = super::kill_modal::KillStage::Done {
            said: said.clone(),
            at: Utc::now(),
        };
    }
    app.notice = Some(format!("K {host}: {said}"));
}

/// The open teardown dialog follows how its target looks (a box's run and queue, a job's
/// phase) and ages its check (a check older than its limit no longer counts and is taken
/// again).
fn age_modal(app: &mut App, runtime: &Runtime) {
    let Some(modal) = &mut app.modal else { return };
    let dialog = &mut modal.dialog;
    let mut effects = Vec::new();
    if let Some((run, queue)) = looks_of(&runtime.state, dialog.target()) {
        effects.extend(dialog.handle(DialogEvent::Run(run)));
        effects.extend(dialog.handle(DialogEvent::Queue(queue)));
    }
    effects.extend(dialog.handle(DialogEvent::Tick(std::time::Instant::now())));
    runtime.teardown(&dialog.target().clone(), effects);
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

/// A pull of a box, or for a cluster's job (a Kubernetes Job's pod; a Slurm cluster pulls
/// its login node whatever the job).
fn start_pull(app: &mut App, runtime: &Runtime, target: &Target) {
    let host = target.member();
    if app.pulls.contains_key(host) {
        app.notice = Some(format!("pull {host}: already running"));
        return;
    }
    match runtime.pull(target) {
        Err(why) => app.notice = Some(format!("pull {host}: {why}")),
        Ok(progress) => pull_began(app, host, progress),
    }
}

/// A pull of `host` has begun, this dashboard's or one another process asked it to run: its
/// gauge is shown, and a teardown dialog open on the host no longer stands on what it checked.
fn pull_began(app: &mut App, host: &str, progress: Arc<Progress>) {
    app.pulls.insert(host.to_string(), progress);
    if let Some(modal) = app.modal.as_mut().filter(|m| m.host() == host) {
        modal.dialog.handle(DialogEvent::Invalidated);
    }
}

/// `T`: the teardown dialog for a box or a cluster's job (named for it; a job still pending
/// or running asks again, as a live run does), opened the one way (`Dialog::open`) and its
/// first check handed to the runtime.
fn open_teardown(app: &mut App, runtime: &Runtime, target: Target) {
    let Some((run, queue)) = looks_of(&runtime.state, &target) else {
        app.notice = Some(format!("{target}: not in the fleet's state"));
        return;
    };
    // Each opening has its own number: a check taken for an earlier one never counts here.
    app.openings += 1;
    let (dialog, effects) = Dialog::open(target.clone(), app.openings, run, queue);
    match runtime.open_teardown(&target, effects) {
        Ok(()) => app.modal = Some(TeardownModal::new(dialog)),
        Err(why) => app.notice = Some(why),
    }
}

/// `y`: the target's name (a box's, a job's id) to the clipboard through the terminal (OSC 52),
/// what was sent said in a line: the terminal, or tmux without `set-clipboard on`, may refuse it
/// and nothing tells rigwatch whether it did.
fn copy(target: &Target) -> String {
    let name = match target {
        Target::Box(host) => host.as_str(),
        Target::Job(job) => job.id.as_str(),
    };
    let sequence = format!(
        "\x1b]52;c;{}\x07",
        data_encoding::BASE64.encode(name.as_bytes())
    );
    let mut out = std::io::stdout();
    let sent = crossterm::execute!(out, crossterm::style::Print(sequence));
    match sent {
        Ok(()) => format!(
            "y: {name} sent to the clipboard (OSC 52; a terminal that refuses it, or tmux \
             without set-clipboard on, copies nothing)"
        ),
        Err(e) => format!("y: {name} not copied: {e}"),
    }
}
