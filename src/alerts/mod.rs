//! Alerts for people who are asleep: conditions read off the fleet's state each tick become
//! events sent once when a condition starts and once when it clears, with Alertmanager's
//! discipline (a wait before firing, repeats far apart, a flapping condition told once with
//! its count). A host whose link is down or whose data is stale is frozen: its other alerts
//! neither fire nor resolve until it is seen again, so stale data never "resolves" anything.
//! `engine` is pure (state and `now` in, events out); `sinks` delivers; `silences` is the file
//! `rigwatch silence` writes.

pub mod alertmanager;
pub mod engine;
pub mod kind;
pub mod notices;
pub mod saved;
pub mod silences;
pub mod sinks;

#[cfg(test)]
mod restart_proptest;
#[cfg(test)]
mod restart_tests;

pub use kind::{AlertKind, News};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::fleet::FleetState;
use crate::signals::Severity;

/// The event schema's version, in every event as `v`.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertState {
    Firing,
    Resolved,
    /// Something that happened once (a run started, a queue cell done, a pull recorded): no
    /// condition holds, nothing will resolve.
    Notice,
}

impl AlertState {
    /// Its name as scripts read it (the JSON's, a sink's RIGWATCH_STATE).
    pub fn name(self) -> &'static str {
        match self {
            AlertState::Firing => "firing",
            AlertState::Resolved => "resolved",
            AlertState::Notice => "notice",
        }
    }
}

/// One line of `rigwatch watch`'s output and of the events file.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct AlertEvent {
    pub v: u32,
    pub at: DateTime<Utc>,
    pub host: String,
    /// A signal's kind (`run_dead`, `link_down`, `zombie_vram`, …), `clock_<kind>`, a piece of
    /// news (`pull_done`, …) or `digest`; on the wire, its name.
    pub kind: AlertKind,
    pub severity: Severity,
    pub state: AlertState,
    pub message: String,
    /// The host's profile (`runpod`, `generic-ssh`, …), for sinks that route by it. The engine
    /// knows only conditions; whoever publishes the event fills it in from the fleet (`placed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    pub data: AlertData,
}

impl AlertEvent {
    /// The event with its host's profile from `hosts`; None for a digest's `*` or a host no
    /// longer in the fleet.
    pub fn placed<'a>(
        mut self,
        hosts: impl IntoIterator<Item = &'a crate::config::fleet::HostConfig>,
    ) -> Self {
        self.platform = hosts
            .into_iter()
            .find(|h| h.name == self.host)
            .map(|h| h.profile.clone());
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct AlertData {
    /// How many times the condition started within the flap window (1 for a steady one).
    pub count: usize,
    /// A reminder of a condition still firing, not a new one.
    pub repeat: bool,
    /// For clocks: the band crossed (`24h`, `1h`, `10m`).
    pub stage: Option<String>,
    /// What on the host it is about, where a host has several (a queue cell's name, a pull's
    /// number).
    pub subject: Option<String>,
    /// The host is silenced: written here, sent to no sink.
    pub silenced: bool,
    /// The same in every event of one alert (its host, kind and subject, and when it began)
    /// and unique to a notice: a receiver sent one twice (a kill inside a send) drops the
    /// repeat by it.
    #[serde(default)]
    pub id: String,
}

/// An alert's id: what it is about and when it began.
pub fn alert_id(
    host: &str,
    kind: AlertKind,
    subject: Option<&str>,
    began: DateTime<Utc>,
) -> String {
    format!(
        "{host}/{kind}/{}@{}",
        subject.unwrap_or(""),
        began.format("%Y-%m-%dT%H:%M:%SZ")
    )
}

/// A condition that holds now on one host.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Condition {
    pub host: String,
    pub kind: AlertKind,
    pub severity: Severity,
    pub message: String,
    pub stage: Option<String>,
    pub subject: Option<String>,
}

impl Condition {
    /// Conditions about reaching the host: never frozen, and they inhibit the host's others.
    pub fn is_link(&self) -> bool {
        self.kind.is_link()
    }

    /// It says its subject cannot be seen (a link down, a queue unread): it fires and resolves
    /// on the link or the read itself, so it is never held for being out of sight.
    pub fn says_unseen(&self) -> bool {
        self.is_link() || self.kind == AlertKind::ClusterUnread
    }
}

/// What holds on the fleet at one moment.
#[derive(Debug, Default)]
pub struct Seen {
    pub conditions: Vec<Condition>,
    /// Hosts whose link is not usable or whose data is older than three periods: their other
    /// conditions are not known now.
    pub frozen: std::collections::BTreeSet<String>,
    /// Hosts still on their first connection attempt (after a start or a reload): not even
    /// their link is known yet.
    pub link_unknown: std::collections::BTreeSet<String>,
}

/// Every condition that holds on every host and cluster at `now`, and what is not known.
/// `clusters` are the fleet's cluster members: one not read since this process started is
/// not known at all (every alert about it stays as it was, as for a box on its first
/// connection); one whose last read failed says only that (`cluster_unread`), and its jobs'
/// alerts stay as last read. Neither a restart nor a hung squeue resolves anything.
pub fn conditions(state: &FleetState, clusters: &[&str], now: DateTime<Utc>) -> Seen {
    let mut out = Vec::new();
    let mut frozen = std::collections::BTreeSet::new();
    let mut link_unknown = std::collections::BTreeSet::new();
    for h in &state.hosts {
        let name = &h.config.name;
        // Not read whole since the start: the GPU section has not answered yet, so what it
        // judges (zombie, idle, clocks) is not known; the first whole reading decides.
        if h.is_stale(now, state.poll) || h.gpus_unheard() {
            frozen.insert(name.clone());
        }
        if !h.link.is_settled() {
            link_unknown.insert(name.clone());
        }
        for s in h.signals.iter().filter(|s| s.severity >= Severity::Warn) {
            out.push(Condition {
                host: name.clone(),
                kind: AlertKind::Signal(s.kind),
                severity: s.severity,
                message: s.message.clone(),
                stage: None,
                subject: None,
            });
        }
        for c in &h.clocks {
            let Some(left) = c.deadline.map(|d| (d - now).num_seconds()) else {
                continue;
            };
            let urgency = crate::clocks::Urgency::of_secs(Some(left));
            let (Some(band), Some(severity)) = (urgency.stage(), urgency.severity()) else {
                continue;
            };
            out.push(Condition {
                host: name.clone(),
                kind: AlertKind::Clock(c.kind),
                severity,
                message: c.message.clone(),
                stage: Some(band.to_string()),
                subject: None,
            });
        }
    }
    // A failed queue cell needs the user (resume it, or look at why); each cell is its own.
    for cell in state.roster.iter().flat_map(|r| &r.cells) {
        if cell.state == crate::queue::CellState::Failed {
            out.push(Condition {
                host: cell.host.clone(),
                kind: AlertKind::QueueCellFailed,
                severity: Severity::Warn,
                message: format!(
                    "queue cell {} ({}) failed: {}",
                    crate::sanitize::line(&cell.name, 80),
                    crate::sanitize::line(&cell.file, 120),
                    crate::sanitize::line(&cell.task, 200)
                ),
                stage: None,
                subject: Some(cell.name.clone()),
            });
        }
    }
    cluster_conditions(state, now, &mut out);
    for name in clusters {
        match state.cluster(name) {
            None => {
                link_unknown.insert((*name).to_string());
            }
            Some(c) if c.error.is_some() => {
                frozen.insert((*name).to_string());
            }
            Some(_) => {}
        }
    }
    Seen {
        conditions: out,
        frozen,
        link_unknown,
    }
}

/// A cluster whose queue could not be read; each live job's walltime clock in its bands and
/// its dangers. The host is the cluster, the subject the job.
fn cluster_conditions(state: &FleetState, now: DateTime<Utc>, out: &mut Vec<Condition>) {
    for cluster in &state.clusters {
        if let Some(error) = &cluster.error {
            out.push(Condition {
                host: cluster.name.clone(),
                kind: AlertKind::ClusterUnread,
                severity: Severity::Warn,
                message: format!("{error}; its jobs are as last read"),
                stage: None,
                subject: None,
            });
        }
        for job in cluster.jobs.iter().filter(|j| !j.phase.is_over()) {
            let subject = Some(job.id.clone());
            if let Some(clock) = &job.walltime {
                let urgency = crate::clocks::Urgency::of_secs(
                    clock.deadline.map(|d| (d - now).num_seconds()),
                );
                if let (Some(band), Some(severity)) = (urgency.stage(), urgency.severity()) {
                    out.push(Condition {
                        host: cluster.name.clone(),
                        kind: AlertKind::Clock(clock.kind),
                        severity,
                        message: clock.message.clone(),
                        stage: Some(band.to_string()),
                        subject: subject.clone(),
                    });
                }
            }
            for danger in &job.dangers {
                out.push(Condition {
                    host: cluster.name.clone(),
                    kind: AlertKind::JobDanger,
                    severity: Severity::Warn,
                    message: format!("job {} ({}): {danger}", job.id, job.name),
                    stage: None,
                    subject: subject.clone(),
                });
            }
        }
    }
}
