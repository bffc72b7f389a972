//! What an alert is about, typed: a signal, a danger clock, a failed queue cell, a piece of
//! news, or the digest. Its wire name (`run_dead`, `clock_walltime`, `pull_done`) comes from the
//! kind's own serde name, so a renamed variant renames its word everywhere at once, and what
//! depends on the kind (link inhibition) matches variants, never words.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::clocks::ClockKind;
use crate::signals::SignalKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AlertKind {
    Signal(SignalKind),
    Clock(ClockKind),
    QueueCellFailed,
    /// A cluster's queue could not be read: its jobs are as last seen.
    ClusterUnread,
    /// A cluster job's danger (a checkpoint path that a reschedule wipes).
    JobDanger,
    News(News),
    Digest,
}

/// Things that happen once: no condition holds, nothing resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum News {
    RunStarted,
    QueueCellDone,
    PullDone,
    PullFailed,
    TeardownDone,
    /// A cluster job ended (or left the queue) since the last look.
    JobEnded,
    /// A job said to have left the queue is in it again: its "ended" was a read that missed
    /// it, and the job still runs or waits.
    JobReturned,
}

const QUEUE_CELL_FAILED: &str = "queue_cell_failed";
const CLUSTER_UNREAD: &str = "cluster_unread";
const JOB_DANGER: &str = "job_danger";
const DIGEST: &str = "digest";
const CLOCK: &str = "clock_";

/// A unit variant's serde name.
fn serde_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

fn from_name<T: for<'de> Deserialize<'de>>(name: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

impl AlertKind {
    /// About reaching the host: never frozen, and it inhibits the host's other alerts.
    pub fn is_link(self) -> bool {
        matches!(self, AlertKind::Signal(k) if k.is_link())
    }

    pub fn parse(name: &str) -> Option<AlertKind> {
        match name {
            QUEUE_CELL_FAILED => Some(AlertKind::QueueCellFailed),
            CLUSTER_UNREAD => Some(AlertKind::ClusterUnread),
            JOB_DANGER => Some(AlertKind::JobDanger),
            DIGEST => Some(AlertKind::Digest),
            _ => match name.strip_prefix(CLOCK) {
                Some(clock) => from_name(clock).map(AlertKind::Clock),
                None => from_name(name)
                    .map(AlertKind::Signal)
                    .or_else(|| from_name(name).map(AlertKind::News)),
            },
        }
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlertKind::Signal(k) => f.write_str(&serde_name(k)),
            AlertKind::Clock(k) => write!(f, "{CLOCK}{}", serde_name(k)),
            AlertKind::QueueCellFailed => f.write_str(QUEUE_CELL_FAILED),
            AlertKind::ClusterUnread => f.write_str(CLUSTER_UNREAD),
            AlertKind::JobDanger => f.write_str(JOB_DANGER),
            AlertKind::News(n) => f.write_str(&serde_name(n)),
            AlertKind::Digest => f.write_str(DIGEST),
        }
    }
}

impl Serialize for AlertKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AlertKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        AlertKind::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown alert kind {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_link_kinds_are_known_by_variant() {
        let kinds = [
            AlertKind::Signal(SignalKind::RunDead),
            AlertKind::Signal(SignalKind::LinkDown),
            AlertKind::Signal(SignalKind::HostKeyRefused),
            AlertKind::Clock(ClockKind::Walltime),
            AlertKind::Clock(ClockKind::DiskFull),
            AlertKind::QueueCellFailed,
            AlertKind::News(News::PullDone),
            AlertKind::Digest,
            AlertKind::ClusterUnread,
            AlertKind::JobDanger,
            AlertKind::News(News::JobEnded),
        ];
        let names: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        assert_eq!(
            names,
            [
                "run_dead",
                "link_down",
                "host_key_refused",
                "clock_walltime",
                "clock_disk_full",
                "queue_cell_failed",
                "pull_done",
                "digest",
                "cluster_unread",
                "job_danger",
                "job_ended"
            ]
        );
        for k in kinds {
            assert_eq!(AlertKind::parse(&k.to_string()), Some(k));
            let json = serde_json::to_string(&k).expect("json");
            assert_eq!(serde_json::from_str::<AlertKind>(&json).ok(), Some(k));
        }
        let links: Vec<bool> = kinds.iter().map(|k| k.is_link()).collect();
        assert_eq!(
            links,
            [
                false, true, true, false, false, false, false, false, false, false, false
            ]
        );
        assert_eq!(AlertKind::parse("clock_nonsense"), None);
        assert_eq!(AlertKind::parse("no_such_kind"), None);
    }
}
