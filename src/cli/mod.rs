//! Command line: one file per subcommand, each with its own `run`.

mod check;
mod check_clusters;
pub mod complete;
pub mod dashboard;
mod init;
mod ledger;
mod man;
mod one_host;
mod profiles;
mod pull;
mod roster;
mod silence;
mod status;
mod status_report;
mod status_table;
pub mod teardown;
mod teardown_job;
mod watch;
mod watch_io;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{self, FleetConfig};

/// Width of a table's host column: the longest name, at least as wide as its heading.
fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names.map(|n| n.chars().count()).max().unwrap_or(4).max(4)
}

/// Each queue host's cells that its latest pull brought home verified. A ledger that cannot be
/// read only costs the "verified" mark, so it is said on stderr and the roster goes on without.
fn verified_cells(
    hosts: &[crate::config::HostConfig],
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let path = crate::ledger::default_path();
    crate::monitor::verified::from_ledger(path.as_deref(), hosts).unwrap_or_else(|e| {
        eprintln!("rigwatch: cells not marked verified: {e}");
        std::collections::BTreeMap::new()
    })
}

/// Exit status for a config that cannot be used, or a usage mistake, distinct from "a host is
/// not up" (1).
pub const EXIT_CONFIG: u8 = 2;

/// A mistake the user can fix (an unknown host name, a theme that does not exist): main prints
/// it as one line and exits with EXIT_CONFIG.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `status` alone says a config or usage mistake with 3, as its 2 already means "needs action
/// now" (see status::exit_code).
pub const EXIT_STATUS_CONFIG: u8 = 3;

/// The one line a person reads for an error: the causes after colons, sanitized.
pub fn one_line(e: &color_eyre::Report) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        // Many of rigwatch's errors already say their source (`{host}: {stage}: {source}`);
        // printing the chain would say it twice.
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    crate::sanitize::line(&line.replace('\n', " "), 2000)
}

/// What clap found wrong with the command line, said as every other mistake is: one line on
/// stderr (clap's own words and its tip, without the usage block) and the usage exit code, 3
/// for `status`. Help and version go to stdout and exit 0, as clap prints them.
pub fn args_mistake(e: &clap::Error, args: &[std::ffi::OsString]) -> std::process::ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    {
        let _ = e.print();
        return std::process::ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let said: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect();
    let command = subcommand_of(args);
    let help = match &command {
        Some(c) => format!("rigwatch {c} --help"),
        None => "rigwatch --help".to_string(),
    };
    // A line ending in a colon introduces the next ("…were not provided: <HOST>").
    let mut one = String::new();
    for part in said {
        if !one.is_empty() {
            one.push_str(if one.ends_with(':') { " " } else { "; " });
        }
        one.push_str(part);
    }
    eprintln!(
        "rigwatch: {}; see `{help}`",
        crate::sanitize::line(&one, 600)
    );
    let status = command.as_deref() == Some("status");
    std::process::ExitCode::from(if status {
        EXIT_STATUS_CONFIG
    } else {
        EXIT_CONFIG
    })
}

/// The subcommand named on the command line (the first word that is not an option or the
/// value of `--config` / `--theme`).
fn subcommand_of(args: &[std::ffi::OsString]) -> Option<String> {
    let mut words = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        match word.as_str() {
            "--config" | "--theme" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            w => return Some(w.to_string()),
        }
    }
    None
}

/// A usage mistake as a report, so `?` carries it to main.
pub fn usage(message: String) -> color_eyre::Report {
    color_eyre::Report::new(UsageError(message))
}

#[derive(Debug, Parser)]
#[command(
    name = "rigwatch",
    version,
    about = "Watch rented GPU boxes over pooled SSH",
    long_about = "Watch rented GPU boxes over pooled SSH. With no command, opens the dashboard on \
                  the fleet config; `rigwatch demo` shows it on a built-in demo fleet."
)]
pub struct Cli {
    /// Fleet config; else $RIGWATCH_CONFIG, else $XDG_CONFIG_HOME/rigwatch/fleet.toml
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Colour theme: dark, light, high-contrast, or themes/NAME.toml in the config dir (NO_COLOR wins)
    #[arg(long, global = true, value_name = "NAME")]
    pub theme: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Connect to every host once and report its link: state, round trip, banner, auth
    Check(check::CheckArgs),
    /// Probe every host once: link, run, GPUs, disks and the signals that need you
    Status(status::StatusArgs),
    /// The dashboard on a built-in demo fleet replaying real captures: no config, no network
    Demo {
        /// Show the eight demo boxes this many times over (to see a big fleet)
        #[arg(long, default_value_t = 1, value_name = "N")]
        copies: usize,
    },
    /// Every cell of every queue in the fleet: done, running, pending, failed, missing or
    /// colliding, with the command that resumes a killed queue
    Roster(roster::RosterArgs),
    /// List the platform profiles, or explain one: `rigwatch profiles show runpod`
    Profiles(profiles::ProfilesArgs),
    /// Copy a host's [host.pull] paths home over SFTP: resumable, hashed on both ends, verified
    /// by loading, recorded in the ledger
    Pull(pull::PullArgs),
    /// Print the ledger: every pull (files, hashes, verification) and every teardown
    Ledger(ledger::LedgerArgs),
    /// Destroy a host, guarded: refused unless its last pull is verified-current, confirmed by
    /// typing its name. There is no flag to skip the guard
    Teardown(teardown::TeardownArgs),
    /// Watch the fleet with no terminal (tmux, systemd, cron): each alert that starts or clears
    /// is a JSON line on stdout and in the events file, sent to the sinks [[alert]] rules name
    Watch(watch::WatchArgs),
    /// Silence a host's alerts for a while (`silence gpu-1 2h`; 0 lifts it; alone: list)
    Silence(silence::SilenceArgs),
    /// Write a commented starter fleet.toml (never over an existing one), optionally with hosts
    /// imported read-only from ~/.ssh/config or the vast.ai / RunPod CLIs
    Init(init::InitArgs),
    /// Print a shell completion script that completes host names from fleet.toml:
    /// `rigwatch completions bash > ~/.local/share/bash-completion/completions/rigwatch`
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `rigwatch man > ~/.local/share/man/man1/rigwatch.1`
    Man,
    /// Render the demo dashboard's views to SVG files
    Screenshot {
        /// Folder to write overview.svg, detail.svg, help.svg into
        #[arg(long, default_value = "screenshots", value_name = "DIR")]
        out: PathBuf,
    },
}

/// With RIGWATCH_LOG set (`debug`, `info`, or a tracing filter such as `rigwatch=debug`), a log
/// for bug reports goes to rigwatch.log in the state dir, and never to the screen, where it would
/// tear the dashboard. The guard flushes it when dropped at exit.
fn start_log() -> color_eyre::Result<Option<tracing_appender::non_blocking::WorkerGuard>> {
    let Some(filter) = std::env::var("RIGWATCH_LOG").ok().filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .map_err(|e| usage(format!("RIGWATCH_LOG={filter:?} is not a log filter: {e}")))?;
    let dir = config::paths::state_dir().ok_or_else(|| {
        usage("RIGWATCH_LOG is set but there is no home or XDG_STATE_HOME to log in".into())
    })?;
    // Made private before the appender opens it (it would make it 0644 in a 0755 folder).
    config::paths::private_file(&dir.join("rigwatch.log"))?;
    let (writer, guard) =
        tracing_appender::non_blocking(tracing_appender::rolling::never(&dir, "rigwatch.log"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .init();
    tracing::info!(
        "rigwatch {} started: {:?}",
        env!("CARGO_PKG_VERSION"),
        std::env::args().collect::<Vec<_>>()
    );
    Ok(Some(guard))
}

pub fn run(cli: Cli) -> color_eyre::Result<ExitCode> {
    let _log = start_log()?;
    if matches!(cli.command, Some(Command::Status(_))) {
        return match run_command(cli) {
            Err(e) if e.downcast_ref::<UsageError>().is_some() => {
                eprintln!("rigwatch: {}", one_line(&e));
                Ok(ExitCode::from(EXIT_STATUS_CONFIG))
            }
            other => other,
        };
    }
    run_command(cli)
}

fn run_command(cli: Cli) -> color_eyre::Result<ExitCode> {
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| color_eyre::eyre::eyre!("cannot start the async runtime: {e}"))
    };
    let theme_name = cli.theme.as_deref();
    // `--theme` is checked whatever the command, so a typo is never silently ignored.
    if let Some(name) = theme_name {
        dashboard::theme(Some(name))?;
    }
    match cli.command {
        Some(Command::Demo { copies }) => {
            let theme = dashboard::theme(theme_name)?;
            return runtime()?.block_on(dashboard::demo(theme, copies));
        }
        Some(Command::Screenshot { out }) => {
            return dashboard::screenshot(&out, &dashboard::theme(theme_name)?);
        }
        Some(Command::Watch(args)) if args.demo => {
            return runtime()?.block_on(watch::demo(&args));
        }
        Some(Command::Completions { shell }) => {
            complete::registration(shell, &mut std::io::stdout())
                .map_err(|e| usage(format!("completions {shell}: {e}")))?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Man) => {
            man::render(&mut std::io::stdout())?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Init(args)) => {
            return runtime()?.block_on(init::run(cli.config.as_deref(), &args));
        }
        _ => {}
    }
    let profiles = match crate::clocks::load_all(config::paths::config_dir().as_deref()) {
        Ok(profiles) => profiles,
        Err(e) => return Err(usage(e.to_string())),
    };
    if let Some(Command::Ledger(args)) = &cli.command {
        // The fleet only names what may be asked about; a ledger outlives a broken config.
        let fleet = config::paths::locate_fleet(cli.config.as_deref())
            .ok()
            .and_then(|path| config::fleet::load(&path).ok())
            .map(|f| {
                let clusters = f.slurm.iter().map(|c| c.name.clone());
                let kube = f.kubernetes.iter().map(|c| c.name.clone());
                f.hosts
                    .iter()
                    .map(|h| h.name.clone())
                    .chain(clusters)
                    .chain(kube)
                    .collect()
            });
        return ledger::run(args, fleet);
    }
    if let Some(Command::Profiles(args)) = &cli.command {
        return Ok(profiles::run(&profiles, args));
    }
    let names: Vec<String> = profiles.iter().map(|p| p.name.clone()).collect();
    let known = config::fleet::Known {
        profiles: &names,
        theme: &|name| {
            dashboard::theme(Some(name))
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
    };
    let mut fleet = match load_fleet(cli.config.as_deref(), &known) {
        Ok(fleet) => fleet,
        Err(e) => return Err(usage(e.to_string())),
    };
    mark_walltime(&mut fleet, &profiles);
    runtime()?.block_on(async {
        match cli.command {
            Some(Command::Check(args)) => check::run(&fleet, &args).await,
            Some(Command::Status(args)) => status::run(&fleet, &profiles, &args).await,
            Some(Command::Roster(args)) => roster::run(&fleet, &args).await,
            Some(Command::Pull(args)) => pull::run(&fleet, &args).await,
            Some(Command::Teardown(args)) => teardown::run(&fleet, &profiles, &args).await,
            Some(Command::Watch(args)) => {
                let path = fleet.path.clone();
                let reload = || {
                    let mut fleet =
                        config::fleet::load_checked(&path, &known).map_err(|e| e.to_string())?;
                    mark_walltime(&mut fleet, &profiles);
                    Ok(fleet)
                };
                watch::run(&fleet, &profiles, &args, &reload).await
            }
            Some(Command::Silence(args)) => silence::run(&fleet, &args),
            Some(
                Command::Demo { .. }
                | Command::Screenshot { .. }
                | Command::Init(_)
                | Command::Completions { .. }
                | Command::Man
                | Command::Profiles(_)
                | Command::Ledger(_),
            )
            | None => {
                let theme = dashboard::theme(theme_name.or(fleet.theme.as_deref()))?;
                dashboard::live(&fleet, profiles, theme).await
            }
        }
    })
}

/// Hosts whose profile runs jobs under a walltime (Slurm) ask the scheduler for the time left.
fn mark_walltime(fleet: &mut FleetConfig, profiles: &[crate::clocks::Profile]) {
    for host in &mut fleet.hosts {
        host.walltime = crate::clocks::profiles::find(profiles, &host.profile)
            .is_some_and(|p| p.timers.walltime == Some(true));
    }
}

fn load_fleet(
    explicit: Option<&std::path::Path>,
    known: &config::fleet::Known<'_>,
) -> Result<FleetConfig, config::ConfigError> {
    let path = config::paths::locate_fleet(explicit)?;
    config::fleet::load_checked(&path, known)
}

#[cfg(test)]
mod tests;
