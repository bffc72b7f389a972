//! The terminal's lifetime around the event loop, and fixed frames of the demo fleet for
//! screenshots and snapshot tests.

use std::time::Duration;

use chrono::{DateTime, Utc};
use ratatui::buffer::Buffer;

use super::app::{App, View};
use super::theme::Theme;
use super::{Ctx, render_buffer};
use crate::demo::Demo;
use crate::fleet::FleetState;
use crate::runtime::Runtime;

pub use crate::runtime::DEMO_POLL;

/// Takes the terminal (alternate screen, raw mode, a panic hook that gives it back), runs the
/// loop, and restores the terminal however the loop ended.
pub async fn run_terminal(
    app: App,
    runtime: &mut Runtime,
    theme: Theme,
    poll: Duration,
) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let keys = crossterm::event::EventStream::new();
    let result = super::run(&mut terminal, keys, app, runtime, theme, poll).await;
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
/// record, or asking for the typed name.
fn teardown(state: &FleetState, host: &str, now: DateTime<Utc>) -> App {
    let mut app = App::new(true);
    app.selected = Some(host.into());
    let Some(h) = state.host(host) else {
        return app;
    };
    let job = super::jobs::TeardownCtx {
        host: h.config.clone(),
        profile: state.profile(&h.config.profile).cloned(),
        fleet: None,
    };
    let run = crate::teardown::RunLooks::of(&h.run);
    let mut modal = super::teardown_modal::TeardownModal::new(host, 1);
    modal
        .guard
        .handle(crate::teardown::GuardEvent::RunLooks(run));
    let (words, looks, currentness) = super::jobs::demo_check(&job, run, now);
    modal.checked(1, words, looks, currentness);
    app.modal = Some(modal);
    app
}
