//! The dashboard, live (`rigwatch`) or on the demo fleet (`rigwatch demo`), and `screenshot`,
//! which renders real frames of the demo fleet to SVG.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use color_eyre::eyre::{WrapErr, eyre};

use crate::config::FleetConfig;
use crate::demo::Demo;
use crate::monitor::FleetState;
use crate::transport::Pool;
use crate::ui::app::{App, View};
use crate::ui::theme::Theme;
use crate::ui::{Ctx, Source, buffer_text, render_buffer, svg};

/// The demo's poll period.
pub const DEMO_POLL: Duration = Duration::from_secs(2);

pub fn theme(name: Option<&str>) -> color_eyre::Result<Theme> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    Theme::resolve(
        name,
        no_color,
        crate::config::paths::config_dir().as_deref(),
    )
    .map_err(|e| eyre!(e))
}

fn require_terminal() -> Result<(), String> {
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        Ok(())
    } else {
        Err("the dashboard needs a terminal; for scripts and cron use `rigwatch status` (or `status --json`)".into())
    }
}

async fn run_tui(
    app: App,
    state: FleetState,
    source: Source,
    theme: Theme,
    poll: Duration,
) -> color_eyre::Result<()> {
    let mut terminal = ratatui::init();
    let result = crate::ui::run(&mut terminal, app, state, source, theme, poll).await;
    ratatui::restore();
    result.wrap_err("terminal I/O")
}

pub async fn live(fleet: &FleetConfig, theme: Theme) -> color_eyre::Result<ExitCode> {
    if let Err(e) = require_terminal() {
        eprintln!("rigwatch: {e}");
        return Ok(ExitCode::from(2));
    }
    let pool = Pool::start(fleet);
    let source = Source::live(pool, &fleet.hosts, fleet.poll);
    let state = FleetState::new(fleet.hosts.clone(), fleet.thresholds.clone());
    run_tui(App::new(false), state, source, theme, fleet.poll).await?;
    Ok(ExitCode::SUCCESS)
}

pub async fn demo(theme: Theme) -> color_eyre::Result<ExitCode> {
    if let Err(e) = require_terminal() {
        eprintln!("rigwatch: {e}");
        return Ok(ExitCode::from(2));
    }
    let (demo, state) = Demo::start(Utc::now());
    run_tui(App::new(true), state, Source::Demo(demo), theme, DEMO_POLL).await?;
    Ok(ExitCode::SUCCESS)
}

/// 03:00 UTC on the day the captures were taken: the night the tool is for.
pub fn screenshot_time() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T03:00:00Z")
        .map_or(DateTime::<Utc>::UNIX_EPOCH, |t| t.with_timezone(&Utc))
}

/// The frames the screenshots and snapshot tests show, by name.
pub fn demo_frames(
    theme: &Theme,
    width: u16,
    height: u16,
) -> Vec<(&'static str, ratatui::buffer::Buffer)> {
    let now = screenshot_time();
    let (_, state) = Demo::start(now);
    let mut frames = Vec::new();
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
    let overview = App::new(true);
    frames.push(("overview", render(&overview)));
    let mut detail = App::new(true);
    detail.selected = Some("h100-zombie".into());
    detail.view = View::Detail;
    frames.push(("detail", render(&detail)));
    let mut help = App::new(true);
    help.help = true;
    frames.push(("help", render(&help)));
    frames
}

pub fn screenshot(out: &Path, theme: &Theme) -> color_eyre::Result<ExitCode> {
    std::fs::create_dir_all(out).wrap_err_with(|| format!("creating {}", out.display()))?;
    for (name, buffer) in demo_frames(theme, 160, 48) {
        let path = out.join(format!("{name}.svg"));
        std::fs::write(&path, svg::to_svg(&buffer))
            .wrap_err_with(|| format!("writing {}", path.display()))?;
        let text = out.join(format!("{name}.txt"));
        std::fs::write(&text, buffer_text(&buffer))
            .wrap_err_with(|| format!("writing {}", text.display()))?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
