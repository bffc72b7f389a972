//! The dashboard, live (`rigwatch`) or on the demo fleet (`rigwatch demo`), and `screenshot`,
//! which renders real frames of the demo fleet to SVG.

use chrono::Utc;
use color_eyre::eyre::WrapErr;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use crate::config::FleetConfig;
use crate::runtime::Runtime;
use crate::transport::Pool;
use crate::ui::app::App;
use crate::ui::theme::Theme;
use crate::ui::{DEMO_POLL, demo_frames, svg};

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

pub async fn live(
    fleet: &FleetConfig,
    profiles: Vec<crate::clocks::Profile>,
    theme: Theme,
) -> color_eyre::Result<ExitCode> {
    if let Err(e) = require_terminal() {
        eprintln!("rigwatch: {e}");
        return Ok(ExitCode::from(2));
    }
    // Cost so far and "last seen up" carry over between runs, shared with `status`.
    let mut runtime = Runtime::live(
        Pool::start_for_pulls(fleet),
        fleet,
        &profiles,
        "rigwatch dashboard",
    );
    let shown =
        crate::ui::run_terminal(App::new(runtime.is_demo()), &mut runtime, theme, fleet.poll).await;
    let (_, saved) = runtime.shutdown().await;
    shown.wrap_err("terminal I/O")?;
    saved.map_err(|why| color_eyre::eyre::eyre!(why))?;
    Ok(ExitCode::SUCCESS)
}

pub async fn demo(theme: Theme, copies: usize) -> color_eyre::Result<ExitCode> {
    if let Err(e) = require_terminal() {
        eprintln!("rigwatch: {e}");
        return Ok(ExitCode::from(2));
    }
    let mut runtime = Runtime::demo(copies, chrono::Duration::seconds(30), Utc::now());
    let shown =
        crate::ui::run_terminal(App::new(runtime.is_demo()), &mut runtime, theme, DEMO_POLL).await;
    // The demo saves nothing, so there is no failure to report.
    let _ = runtime.shutdown().await;
    shown.wrap_err("terminal I/O")?;
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
