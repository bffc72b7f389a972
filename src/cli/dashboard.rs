//! The dashboard, live (`rigwatch`) or on the demo fleet (`rigwatch demo`), and `screenshot`,
//! which renders real frames of the demo fleet to SVG.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::WrapErr;

use crate::config::FleetConfig;
use crate::demo::Demo;
use crate::monitor::FleetState;
use crate::transport::Pool;
use crate::ui::app::App;
use crate::ui::theme::Theme;
use crate::ui::{DEMO_POLL, Source, demo_frames, svg};

pub fn theme(name: Option<&str>) -> color_eyre::Result<Theme> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    Theme::resolve(
        name,
        no_color,
        crate::config::paths::config_dir().as_deref(),
    )
    .map_err(super::usage)
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
) -> color_eyre::Result<FleetState> {
    crate::ui::run_terminal(app, state, source, theme, poll)
        .await
        .wrap_err("terminal I/O")
}

pub async fn live(
    fleet: &FleetConfig,
    profiles: Vec<crate::clocks::Profile>,
    theme: Theme,
) -> color_eyre::Result<ExitCode> {
    if let Err(e) = require_terminal() {
        eprintln!("rigwatch: {e}");
        return Ok(ExitCode::from(2));
    }
    let pool = Pool::start(fleet);
    let source = Source::live(pool, fleet);
    let mut state = FleetState::new(fleet.hosts.clone(), fleet.thresholds.clone())
        .with_profiles(profiles, fleet.balance)
        .with_poll(fleet.poll);
    // Cost so far and "last seen up" carry over between runs, shared with `status`.
    let memory_path = crate::monitor::memory::path();
    let mut memory = crate::monitor::memory::load(memory_path.as_deref());
    state.recall(&memory);
    let state = run_tui(App::new(false), state, source, theme, fleet.poll).await?;
    state.remember(&mut memory);
    if let Some(path) = &memory_path {
        crate::monitor::memory::save(path, &memory)
            .wrap_err_with(|| format!("saving {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn demo(theme: Theme, copies: usize) -> color_eyre::Result<ExitCode> {
    if let Err(e) = require_terminal() {
        eprintln!("rigwatch: {e}");
        return Ok(ExitCode::from(2));
    }
    let (demo, state) = Demo::start_sized(Utc::now(), copies.clamp(1, 100));
    run_tui(App::new(true), state, Source::Demo(demo), theme, DEMO_POLL).await?;
    Ok(ExitCode::SUCCESS)
}

pub fn screenshot(out: &Path, theme: &Theme) -> color_eyre::Result<ExitCode> {
    std::fs::create_dir_all(out).wrap_err_with(|| format!("creating {}", out.display()))?;
    for (name, buffer) in demo_frames(theme, 160, 48) {
        let path = out.join(format!("{name}.svg"));
        std::fs::write(&path, svg::to_svg(&buffer))
            .wrap_err_with(|| format!("writing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
