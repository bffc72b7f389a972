//! Command line: one file per subcommand, each with its own `run`.

mod check;
mod status;
mod status_report;
mod status_table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{self, FleetConfig};

/// Exit status for a config that cannot be used, distinct from "a host is not up" (1).
pub const EXIT_CONFIG: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "rigwatch",
    version,
    about = "Watch rented GPU boxes over pooled SSH",
    arg_required_else_help = true
)]
pub struct Cli {
    /// Fleet config; else $RIGWATCH_CONFIG, else $XDG_CONFIG_HOME/rigwatch/fleet.toml
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Connect to every host once and report its link: state, round trip, banner, auth
    Check(check::CheckArgs),
    /// Probe every host once: link, run, GPUs, disks and the signals that need you
    Status(status::StatusArgs),
}

pub fn run(cli: Cli) -> color_eyre::Result<ExitCode> {
    let fleet = match load_fleet(cli.config.as_deref()) {
        Ok(fleet) => fleet,
        Err(e) => {
            eprintln!("rigwatch: {e}");
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| color_eyre::eyre::eyre!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        match cli.command {
            Command::Check(args) => check::run(&fleet, &args).await,
            Command::Status(args) => status::run(&fleet, &args).await,
        }
    })
}

fn load_fleet(explicit: Option<&std::path::Path>) -> Result<FleetConfig, config::ConfigError> {
    let path = config::paths::locate_fleet(explicit)?;
    config::fleet::load(&path)
}
