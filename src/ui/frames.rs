//! The terminal's lifetime around the event loop, and fixed frames of the demo fleet for
//! screenshots and snapshot tests.

use std::time::Duration;

use chrono::{DateTime, Utc};
use ratatui::buffer::Buffer;

use super::app::{App, View};
use super::event_loop::Ended;
use super::theme::Theme;
use super::{Ctx, render_buffer};
use crate::demo::Demo;
use crate::fleet::FleetState;
use crate::runtime::Runtime;

pub use crate::runtime::DEMO_POLL;

/// Takes the terminal (alternate screen, raw mode, a panic hook that gives it back), runs the
/// loop, and restores the terminal however the loop ended.
pub async fn run_terminal(
    mut app: App,
    runtime: &mut Runtime,
    theme: Theme,
    poll: Duration,
) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    // Clicks and the wheel (Shift-drag still selects text in most terminals).
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
    let result = loop {
        // A stream per turn: dropping it stops crossterm's reader, so the person's ssh gets
        // every key typed while it runs.
        let keys = crossterm::event::EventStream::new();
        match super::run(&mut terminal, keys, app, runtime, theme, poll).await {
            Ok(Ended::Handover {
                app: back,
                target,
                argv,
            }) => {
                app = *back;
                match super::handover::give_terminal(&mut terminal, &target, &argv).await {
                    Ok(said) => app.notice = Some(said),
                    Err(e) => break Err(e),
                }
            }
            Ok(Ended::Quit) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    ratatui::restore();
    result
}

/// 03:00 UTC on the day the captures were taken: the night the tool is for.
pub fn screenshot_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T03:00:00Z")
        .map_or(DateTime::<Utc>::UNIX_EPOCH, |t| t.with_timezone(&Utc))
}

/// The frames the screenshots and snapshot tests show, by name.
pub fn demo_frames(theme: &Theme, width: u16, height: u16) -> Vec<(&'static str, Buffer)> {
    let now = screenshot_time();
    let (_, state) = Demo::start(now);
    let render = |app: &App| {
        render_buffer(
            &Ctx {
                app,
                state: &state,
                theme,
                now,
                poll: DEMO_POLL,
            },
            width,
            height,
        )
    };
    let mut detail = App::new(true);
    detail.selected = Some("h100-zombie".into());
    detail.view = View::Detail;
    let mut help = App::new(true);
    help.help = true;
    vec![
        ("overview", render(&App::new(true))),
        ("detail", render(&detail)),
        ("help", render(&help)),
        (
            "teardown-refused",
            render(&teardown(&state, "h100-train", now)),
        ),
        (
            "teardown-ready",
            render(&teardown(&state, crate::demo::teardown::READY, now)),
        ),
    ]
}

/// The teardown modal on a demo box as its check leaves it: refused without a pull on
/// record, or asking for the typed name. The dialog walks as on screen, its check taken by the
/// demo's I/O at `now`.
fn teardown(state: &FleetState, host: &str, now: DateTime<Utc>) -> App {
    use crate::teardown::{Dialog, Effect, RunLooks};
    let mut app = App::new(true);
    app.selected = Some(host.into());
    let Some(h) = state.host(host) else {
        return app;
    };
    let io = crate::demo::teardown::DemoIo {
        host: h.config.clone(),
        profile: state.profile(&h.config.profile).cloned(),
    };
    let target = crate::target::Target::Box(host.to_string());
    let (mut dialog, opened) = Dialog::open(target, 1, RunLooks::of(&h.run), None);
    for effect in opened {
        if let Effect::Check { opening, run } = effect {
            let answer = io
                .check_at(run, now)
                .answer(opening, std::time::Instant::now());
            dialog.handle(answer);
        }
    }
    app.modal = Some(super::teardown_modal::TeardownModal::new(dialog));
    app
}
