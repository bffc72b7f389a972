//! `fleet.toml`: the user's list of boxes and how to reach them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::error::{ConfigError, Located};
use super::paths::expand_tilde;
pub use super::pull::{PullConfig, VerifyCommands};
pub use super::target::SshTarget;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFleet {
    known_hosts: Option<Spanned<String>>,
    ssh_config: Option<Spanned<String>>,
    poll_secs: Option<Spanned<f64>>,
    accept_new: Option<bool>,
    connect_timeout_secs: Option<Spanned<f64>>,
    keepalive_secs: Option<Spanned<f64>>,
    keepalive_max: Option<Spanned<u32>>,
    reconnect_max_secs: Option<Spanned<f64>>,
    max_sessions: Option<Spanned<u32>>,
    theme: Option<Spanned<String>>,
    currency: Option<String>,
    balance: Option<Spanned<f64>>,
    #[serde(default)]
    thresholds: Thresholds,
    #[serde(default)]
    providers: RawProviders,
    #[serde(default)]
    teardown: super::teardown::RawTeardown,
    #[serde(default)]
    alerts: super::alerts::RawAlerts,
    #[serde(default)]
    alert: Vec<super::alerts::RawRule>,
    #[serde(default)]
    host: Vec<super::hosts::RawHost>,
    #[serde(default)]
    slurm: Vec<super::slurm::RawSlurm>,
    #[serde(default)]
    kubernetes: Vec<super::kubernetes::RawKube>,
    #[serde(default)]
    kaggle: Vec<super::kaggle::RawKaggle>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProviders {
    vastai: Option<String>,
    runpod: Option<String>,
    poll_secs: Option<Spanned<f64>>,
}

/// The provider CLIs rigwatch may ask (read-only) for state and price: a path, else the CLI's
/// usual name looked up on PATH.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderPrograms {
    pub vastai: Option<PathBuf>,
    pub runpod: Option<PathBuf>,
    pub poll: Duration,
}

/// A sweep's queue file on the box and where its cells leave their durable copies.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    pub file: String,
    pub final_dir: String,
    /// Where a cell logs; `{name}` becomes the cell's name.
    pub cell_log: Option<String>,
    /// User patterns with named groups `cur` and `total`, tried before the built-in ones.
    pub progress: Vec<String>,
}

/// What a box costs, and what rigwatch needs for the checkpoint-interval clock.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Billing {
    pub price_per_hour: Option<f64>,
    /// While stopped (or unreachable); else the profile's fraction of the running price.
    pub stopped_price_per_hour: Option<f64>,
    pub currency: Option<String>,
    /// Mean time between interruptions, for the Young/Daly checkpoint interval.
    pub mtbi_hours: Option<f64>,
    /// How long writing one checkpoint takes.
    pub ckpt_write_secs: Option<f64>,
}

/// When a signal fires; every field has a default, any may be set under `[thresholds]`.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    /// VRAM held with no compute for this long is a zombie.
    pub zombie_minutes: f64,
    /// No GPU work and no live run for this long on a box that bills.
    pub idle_minutes: f64,
    /// The run's log not written for this long while its process lives.
    pub hung_log_minutes: f64,
    /// The newest checkpoint older than this.
    pub stale_ckpt_minutes: f64,
    /// Bytes or inodes used, percent: warn, then critical.
    pub disk_warn_pct: f64,
    pub disk_crit_pct: f64,
    /// Time to full below this many hours is critical.
    pub full_within_hours: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            zombie_minutes: 5.0,
            idle_minutes: 30.0,
            hung_log_minutes: 20.0,
            stale_ckpt_minutes: 120.0,
            disk_warn_pct: 90.0,
            disk_crit_pct: 97.0,
            full_within_hours: 6.0,
        }
    }
}

/// How rigwatch treats every link; each field falls back to the host's `~/.ssh/config`
/// (ServerAliveInterval, ConnectTimeout) and then to these defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkTuning {
    pub connect_timeout: Option<Duration>,
    pub keepalive_interval: Option<Duration>,
    pub keepalive_max: Option<u32>,
    pub reconnect_max: Duration,
    /// Channels open at once per host; OpenSSH's MaxSessions defaults to 10.
    pub max_sessions: u32,
}

impl Default for LinkTuning {
    fn default() -> Self {
        LinkTuning {
            connect_timeout: None,
            keepalive_interval: None,
            keepalive_max: None,
            reconnect_max: Duration::from_secs(30),
            max_sessions: 8,
        }
    }
}

#[derive(Debug, Clone)]
pub struct FleetConfig {
    pub path: PathBuf,
    /// Explicit known_hosts file; when absent, the files `ssh -G` names are used.
    pub known_hosts: Option<PathBuf>,
    /// Explicit ssh client config, passed to `ssh -G -F`; when absent OpenSSH's own defaults.
    pub ssh_config: Option<PathBuf>,
    pub poll: Duration,
    pub link: LinkTuning,
    /// The dashboard's theme; `--theme` overrides it.
    pub theme: Option<String>,
    /// Money left on the provider account, for the balance-runway clock.
    pub balance: Option<f64>,
    pub thresholds: Thresholds,
    pub providers: ProviderPrograms,
    pub teardown: super::teardown::TeardownTuning,
    /// What `rigwatch watch` sends where.
    pub alerts: super::alerts::AlertsConfig,
    pub hosts: Vec<HostConfig>,
    /// Slurm clusters: each a login node and which of its jobs are watched.
    pub slurm: Vec<super::slurm::SlurmConfig>,
    /// Kubernetes namespaces: each read through kubectl, its Jobs picked by a label selector.
    pub kubernetes: Vec<super::kubernetes::KubeConfig>,
    /// Kaggle notebooks whose commits are watched as jobs, through the `kaggle` CLI.
    pub kaggle: Vec<super::kaggle::KaggleConfig>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostConfig {
    pub name: String,
    pub target: SshTarget,
    pub identity: Option<PathBuf>,
    pub profile: String,
    /// Trust on first use: record an unknown host key instead of refusing it.
    pub accept_new: bool,
    /// Mount points to watch; empty means every real filesystem.
    pub mounts: Vec<String>,
    /// The run's tmux session, matched by its exact name.
    pub run: Option<String>,
    /// A `pgrep -f` pattern for the run's process; when set, it decides whether the run lives.
    pub run_process: Option<String>,
    pub log: Option<String>,
    pub ckpt_dir: Option<String>,
    pub billing: Billing,
    /// The provider's id for the box, for its CLI's list and destroy commands.
    pub instance_id: Option<String>,
    /// Replaces the profile's destroy command for this host.
    pub teardown: Option<String>,
    pub pull: Option<PullConfig>,
    pub queue: Option<QueueConfig>,
    /// The host's profile runs jobs under a walltime (Slurm): the probe asks the scheduler for
    /// the time left. Filled in from the profile once profiles are loaded.
    pub walltime: bool,
}

#[cfg(test)]
impl HostConfig {
    /// A plain box named `name` on the `autodl` profile at $2/h, for tests of what is judged
    /// about it.
    pub fn for_test(name: &str) -> HostConfig {
        HostConfig {
            name: name.into(),
            target: SshTarget {
                user: None,
                host: name.into(),
                port: None,
            },
            identity: None,
            profile: "autodl".into(),
            accept_new: false,
            mounts: Vec::new(),
            run: None,
            run_process: None,
            log: None,
            ckpt_dir: None,
            billing: Billing {
                price_per_hour: Some(2.0),
                stopped_price_per_hour: Some(0.5),
                ..Billing::default()
            },
            instance_id: None,
            teardown: None,
            pull: None,
            queue: None,
            walltime: false,
        }
    }
}

pub fn load(path: &Path) -> Result<FleetConfig, ConfigError> {
    let text = read(path)?;
    parse(path, &text)
}

/// The names a fleet may use, known only above this module: the loaded profiles, and whether
/// a theme name resolves.
pub struct Known<'a> {
    pub profiles: &'a [String],
    pub theme: &'a dyn Fn(&str) -> Result<(), String>,
}

/// Loads and also checks that every host names one of the profiles and that the theme exists.
pub fn load_checked(path: &Path, known: &Known<'_>) -> Result<FleetConfig, ConfigError> {
    let text = read(path)?;
    parse_checked(path, &text, Some(known))
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })
}

pub fn parse(path: &Path, text: &str) -> Result<FleetConfig, ConfigError> {
    parse_checked(path, text, None)
}

fn parse_checked(
    path: &Path,
    text: &str,
    known: Option<&Known<'_>>,
) -> Result<FleetConfig, ConfigError> {
    let profiles = known.map(|k| k.profiles);
    let at = |offset: usize, message: String| {
        ConfigError::At(Located::at_offset(path, text, offset, message))
    };
    let raw: RawFleet = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        let message = super::suggest::did_you_mean(e.message().trim())
            .replace("expected f64", "expected a number of seconds");
        at(
            offset,
            message.replace("expected u32", "expected a whole number"),
        )
    })?;
    let secs = |value: &Option<Spanned<f64>>, key: &str| -> Result<Option<Duration>, ConfigError> {
        value
            .as_ref()
            .map(|v| super::ranges::checked(v, key).map(Duration::from_secs_f64))
            .transpose()
            .map_err(|(offset, m)| at(offset, m))
    };
    let defaults = LinkTuning::default();
    let whole = |value: &Option<Spanned<u32>>, key: &str| {
        value
            .as_ref()
            .map(|v| super::ranges::checked_whole(v, key))
            .transpose()
            .map_err(|(offset, m)| at(offset, m))
    };
    let max_sessions = whole(&raw.max_sessions, "max_sessions")?.unwrap_or(defaults.max_sessions);
    let link = LinkTuning {
        connect_timeout: secs(&raw.connect_timeout_secs, "connect_timeout_secs")?,
        keepalive_interval: secs(&raw.keepalive_secs, "keepalive_secs")?,
        keepalive_max: whole(&raw.keepalive_max, "keepalive_max")?,
        reconnect_max: secs(&raw.reconnect_max_secs, "reconnect_max_secs")?
            .unwrap_or(defaults.reconnect_max),
        max_sessions,
    };
    // A key file that is not there is a config mistake, not a box refusing the login.
    if known.is_some() {
        let keys = raw.host.iter().filter_map(|h| h.identity.as_ref());
        for key in keys.chain(raw.slurm.iter().filter_map(|s| s.identity())) {
            if !expand_tilde(key.get_ref()).exists() {
                return Err(at(
                    key.span().start,
                    format!(
                        "identity = {:?}: no such file; fix the path, or leave identity out to \
                         use ssh's own keys and agent",
                        key.get_ref()
                    ),
                ));
            }
        }
    }
    let global_accept_new = raw.accept_new.unwrap_or(false);
    // Where each pull dest really is, worked out once: every later member is compared with all.
    let mut places: Vec<(String, super::pull::Place)> = Vec::new();
    let defaults = super::hosts::Defaults {
        profiles,
        accept_new: global_accept_new,
        currency: raw.currency.as_deref(),
    };
    let hosts = super::hosts::build(raw.host, &defaults, &mut places, &at)?;
    let slurm = super::slurm::build(raw.slurm, &hosts, &mut places, global_accept_new)
        .map_err(|(offset, m)| at(offset, m))?;
    let taken: Vec<&str> = hosts
        .iter()
        .map(|h| h.name.as_str())
        .chain(slurm.iter().map(|c| c.name.as_str()))
        .collect();
    let kubernetes = super::kubernetes::build(raw.kubernetes, &taken, &mut places)
        .map_err(|(offset, m)| at(offset, m))?;
    let taken: Vec<&str> = taken
        .into_iter()
        .chain(kubernetes.iter().map(|c| c.name.as_str()))
        .collect();
    let kaggle = super::kaggle::build(raw.kaggle, &taken, &mut places)
        .map_err(|(offset, m)| at(offset, m))?;
    let poll = secs(&raw.poll_secs, "poll_secs")?.unwrap_or(Duration::from_secs(2));
    let alerts = super::alerts::build(raw.alerts, raw.alert, &at)?;
    let teardown = super::teardown::build(&raw.teardown).map_err(|(offset, m)| at(offset, m))?;
    Ok(FleetConfig {
        path: path.to_path_buf(),
        known_hosts: raw.known_hosts.map(|k| expand_tilde(k.get_ref())),
        ssh_config: raw.ssh_config.map(|k| expand_tilde(k.get_ref())),
        poll,
        link,
        theme: match (raw.theme, known) {
            (Some(theme), Some(known)) => {
                (known.theme)(theme.get_ref()).map_err(|e| at(theme.span().start, e))?;
                Some(theme.into_inner())
            }
            (theme, _) => theme.map(Spanned::into_inner),
        },
        balance: super::hosts::amount(&raw.balance, "balance").map_err(|(o, m)| at(o, m))?,
        thresholds: raw.thresholds,
        alerts,
        providers: ProviderPrograms {
            vastai: raw.providers.vastai.map(|p| expand_tilde(&p)),
            runpod: raw.providers.runpod.map(|p| expand_tilde(&p)),
            poll: secs(&raw.providers.poll_secs, "providers.poll_secs")?
                .unwrap_or(Duration::from_secs(60)),
        },
        teardown,
        hosts,
        slurm,
        kubernetes,
        kaggle,
    })
}

#[cfg(test)]
#[path = "fleet_tests.rs"]
mod tests;
