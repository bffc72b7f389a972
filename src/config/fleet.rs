//! `fleet.toml`: the user's list of boxes and how to reach them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::connection::connection;
use super::error::{ConfigError, Located};
use super::paths::expand_tilde;
use super::pull::RawPull;
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
    host: Vec<RawHost>,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    name: Spanned<String>,
    ssh: Spanned<String>,
    identity: Option<Spanned<String>>,
    profile: Option<Spanned<String>>,
    accept_new: Option<bool>,
    mounts: Option<Vec<String>>,
    run: Option<Spanned<String>>,
    run_process: Option<String>,
    log: Option<String>,
    ckpt_dir: Option<String>,
    price_per_hour: Option<Spanned<f64>>,
    stopped_price_per_hour: Option<Spanned<f64>>,
    currency: Option<String>,
    mtbi_hours: Option<Spanned<f64>>,
    ckpt_write_secs: Option<Spanned<f64>>,
    instance_id: Option<String>,
    teardown: Option<Spanned<String>>,
    pull: Option<Spanned<RawPull>>,
    queue: Option<String>,
    final_dir: Option<String>,
    cell_log: Option<String>,
    progress: Option<Vec<Spanned<String>>>,
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
    let amount = |value: &Option<Spanned<f64>>, key: &str| -> Result<Option<f64>, ConfigError> {
        match value {
            Some(v) if !v.get_ref().is_finite() || *v.get_ref() < 0.0 => Err(at(
                v.span().start,
                format!("{key} = {} must be a number of at least 0", v.get_ref()),
            )),
            Some(v) => Ok(Some(*v.get_ref())),
            None => Ok(None),
        }
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
    let mut hosts: Vec<HostConfig> = Vec::with_capacity(raw.host.len());
    // Where each pull dest really is, worked out once: every later host is compared with all.
    let mut places: Vec<(String, super::pull::Place)> = Vec::new();
    for h in raw.host {
        let taken: Vec<&str> = hosts.iter().map(|o| o.name.as_str()).collect();
        let conn = connection(
            &h.name,
            &h.ssh,
            h.identity.as_ref(),
            h.accept_new,
            global_accept_new,
            &taken,
        )
        .map_err(|(offset, m)| at(offset, m))?;
        let (name, target) = (conn.name, conn.target);
        let profile = match &h.profile {
            None => "generic-ssh".to_string(),
            Some(p) if !is_profile_name(p.get_ref()) => {
                return Err(at(
                    p.span().start,
                    format!(
                        "profile {:?} is not a profile name (lowercase letters, digits and '-')",
                        p.get_ref()
                    ),
                ));
            }
            Some(p) if profiles.is_some_and(|known| !known.contains(p.get_ref())) => {
                let known = profiles.map(|k| k.join(", ")).unwrap_or_default();
                return Err(at(
                    p.span().start,
                    format!("unknown profile {:?}; there are: {known}", p.get_ref()),
                ));
            }
            Some(p) => p.get_ref().clone(),
        };
        let this_machine = profile == "local" || target.is_loopback();
        let pull = super::connection::pull(&name, h.pull, this_machine, &mut places)
            .map_err(|(offset, m)| at(offset, m))?;
        let carried = [
            ("run", h.run.as_ref().map(|r| r.get_ref().as_str())),
            ("instance_id", h.instance_id.as_deref()),
            ("log", h.log.as_deref()),
            ("ckpt_dir", h.ckpt_dir.as_deref()),
            ("run_process", h.run_process.as_deref()),
            ("queue", h.queue.as_deref()),
            ("final_dir", h.final_dir.as_deref()),
            ("cell_log", h.cell_log.as_deref()),
        ];
        let carried = carried.into_iter().filter_map(|(k, v)| Some((k, v?)));
        super::ranges::probe_paths(carried, h.mounts.as_deref().unwrap_or_default())
            .map_err(|m| at(h.name.span().start, format!("host {name:?}: {m}")))?;
        let queue = match (h.queue, h.final_dir) {
            (Some(file), Some(final_dir)) => Some(QueueConfig {
                file,
                final_dir,
                cell_log: h.cell_log,
                progress: checked_patterns(h.progress.unwrap_or_default())
                    .map_err(|(offset, m)| at(offset, m))?,
            }),
            (None, None) => None,
            _ => {
                return Err(at(
                    h.name.span().start,
                    format!("host {name:?}: `queue` and `final_dir` go together; set both"),
                ));
            }
        };
        if let Some(r) = &h.run {
            session_name(r.get_ref()).map_err(|m| at(r.span().start, m))?;
        }
        if let Some(t) = &h.teardown {
            if t.get_ref().trim().is_empty() {
                return Err(at(t.span().start, "teardown must be a command".into()));
            }
        }
        hosts.push(HostConfig {
            name,
            target,
            identity: conn.identity,
            profile,
            accept_new: conn.accept_new,
            mounts: h.mounts.unwrap_or_default(),
            run: h.run.map(Spanned::into_inner).filter(|r| !r.is_empty()),
            run_process: h.run_process.filter(|r| !r.trim().is_empty()),
            log: h.log.filter(|r| !r.is_empty()),
            ckpt_dir: h.ckpt_dir.filter(|r| !r.is_empty()),
            billing: Billing {
                price_per_hour: amount(&h.price_per_hour, "price_per_hour")?,
                stopped_price_per_hour: amount(
                    &h.stopped_price_per_hour,
                    "stopped_price_per_hour",
                )?,
                currency: h.currency.or_else(|| raw.currency.clone()),
                mtbi_hours: amount(&h.mtbi_hours, "mtbi_hours")?,
                ckpt_write_secs: amount(&h.ckpt_write_secs, "ckpt_write_secs")?,
            },
            instance_id: h.instance_id.filter(|i| !i.trim().is_empty()),
            teardown: h.teardown.map(Spanned::into_inner),
            pull,
            queue,
            walltime: false,
        });
    }
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
        balance: amount(&raw.balance, "balance")?,
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

/// Every progress pattern compiles and names the groups rigwatch reads.
fn checked_patterns(raw: Vec<Spanned<String>>) -> Result<Vec<String>, (usize, String)> {
    raw.into_iter()
        .map(|p| {
            let at = p.span().start;
            let text = p.into_inner();
            match regex::Regex::new(&text) {
                Err(e) => Err((at, format!("progress pattern does not compile: {e}"))),
                Ok(re) if !re.capture_names().flatten().any(|n| n == "cur") => Err((
                    at,
                    "progress pattern needs a named group (?P<cur>...) and usually (?P<total>...)"
                        .into(),
                )),
                Ok(_) => Ok(text),
            }
        })
        .collect()
}

fn is_profile_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `run` names a tmux session; tmux turns `.` and `:` into `_`, and a value with spaces was a
/// process pattern in rigwatch's old meaning of `run`, so both are refused with the way out.
fn session_name(run: &str) -> Result<(), String> {
    if run.contains(char::is_whitespace) || run.contains(['.', ':']) {
        return Err(format!(
            "run = {run:?} is not a tmux session name (matched exactly; no spaces, `.` or `:`); \
             for a process pattern write run_process = {run:?}"
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "fleet_tests.rs"]
mod tests;
