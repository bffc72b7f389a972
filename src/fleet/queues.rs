//! Queues across the fleet: each host's queue as last probed, the running cell's progress
//! history, and the fleet's roster. The wiring between the probe's queue sections and `queue`'s
//! pure judgements; `now` is passed in.
//!
//! - **Alive**: a queue runs while a `run_queue*.sh` process names its file (`run` patterns are
//!   not consulted: they may match something else on the box).
//! - **Running cell**: from the run processes' command lines, else the newest cell log.
//! - **Presence**: a link that is down or refused makes the box `Unreachable` (its last-known
//!   facts still count: a dropped poll is not a dead run); down for more than [`GONE_AFTER_SECS`],
//!   counted from when it was last seen up (which may be a previous run of rigwatch), or past its
//!   profile's auto-release, makes it `Gone`, and its cells without a durable copy `Missing`.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use regex::Regex;

use crate::clocks::{Clock, ClockKind};
use crate::config::QueueConfig;
use crate::probe::sample::HostSample;
use crate::queue::{
    DoneRule, FinalListing, HostQueue, HostSummary, Presence, Progress, Queue, QueueStatus, Roster,
    RosterOptions, Sample, cell_eta, is_cell_done, overview_label, parse_progress_with,
    parse_queue_lenient, queue_eta, queue_invocation, reconcile, running_cell,
};
use crate::transport::LinkState;

/// A box down this long is taken for gone: rented boxes that vanish do not come back.
pub const GONE_AFTER_SECS: i64 = 3600;
/// Progress samples kept per host: the rate is read from the recent ones.
const SAMPLES_KEPT: usize = 32;

/// One host's queue as the probe last saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueFacts {
    pub queue: Queue,
    pub listing: FinalListing,
    pub running: Option<usize>,
    pub run_alive: bool,
    pub start_index: Option<usize>,
    pub progress: Option<Progress>,
    /// The running cell's log tail, raw: sanitize before display.
    pub log_tail: Vec<String>,
}

/// User progress patterns, compiled once (config loading already checked that they compile).
pub fn patterns(config: &QueueConfig) -> Vec<Regex> {
    config
        .progress
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
}

/// The facts in one sample; None when the queue sections have not run or the file was unread.
pub fn facts(config: &QueueConfig, sample: &HostSample, patterns: &[Regex]) -> Option<QueueFacts> {
    let q = sample.queue.as_ref()?;
    let queue = parse_queue_lenient(q.text.as_deref()?, &config.file);
    let invocation = q
        .processes
        .iter()
        .filter_map(|p| queue_invocation(&p.cmdline))
        .find(|inv| same_file(&inv.queue_file, &config.file));
    let cmdlines = sample
        .run_processes
        .iter()
        .chain(&q.processes)
        .map(|p| p.cmdline.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let newest_log = q
        .cell_log
        .as_ref()
        .and_then(|l| l.path.as_deref())
        .and_then(|path| log_cell_name(config.cell_log.as_deref()?, path))
        .map(|name| format!("{name}.log"));
    let running = running_cell(&queue, Some(&cmdlines), newest_log.as_deref());
    let log_tail = if config.cell_log.is_some() {
        q.cell_log_tail.clone()
    } else {
        sample.log_tail.clone()
    };
    let epochs = running.and_then(|r| queue.cell(r)).and_then(|c| c.epochs);
    let progress =
        running.and_then(|_| parse_progress_with(&log_tail.join("\n"), patterns, epochs));
    Some(QueueFacts {
        listing: q.listing.clone(),
        running,
        run_alive: invocation.is_some(),
        start_index: invocation.and_then(|i| i.start_index),
        progress,
        log_tail,
        queue,
    })
}

/// `queue.txt` run from the queue's directory names the same file as `/root/sweep/queue.txt`.
fn same_file(invoked: &str, configured: &str) -> bool {
    let invoked = invoked.strip_prefix("./").unwrap_or(invoked);
    configured == invoked
        || (!invoked.starts_with('/') && configured.ends_with(&format!("/{invoked}")))
}

/// The cell a log belongs to: the part of its path that `{name}` stood for in the pattern.
fn log_cell_name<'a>(pattern: &str, path: &'a str) -> Option<&'a str> {
    let (before, after) = pattern.split_once("{name}")?;
    let name = path.strip_prefix(before)?.strip_suffix(after)?;
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

/// A host's queue over time: the latest facts, kept while the box is away, and the progress
/// samples of the running cell.
#[derive(Debug, Clone)]
pub struct QueueTracker {
    patterns: Vec<Regex>,
    samples: Vec<Sample>,
    cell: Option<usize>,
    pub facts: Option<QueueFacts>,
    /// Cells of the host's latest pull that came home whole and verified (see `verified`).
    pub verified: BTreeSet<String>,
}

impl QueueTracker {
    pub fn new(config: &QueueConfig) -> Self {
        QueueTracker {
            patterns: patterns(config),
            samples: Vec::new(),
            cell: None,
            facts: None,
            verified: BTreeSet::new(),
        }
    }

    /// Takes in one reading; the progress is dated by the log's mtime, so the slow sections
    /// repeated between slow cycles add no samples.
    pub fn observe(&mut self, config: &QueueConfig, sample: &HostSample, at: DateTime<Utc>) {
        let Some(facts) = facts(config, sample, &self.patterns) else {
            return;
        };
        if facts.running != self.cell {
            self.samples.clear();
            self.cell = facts.running;
        }
        let dated = sample
            .queue
            .as_ref()
            .and_then(|q| q.cell_log.as_ref())
            .map_or(at, |l| l.modified);
        let fraction = facts.progress.and_then(|p| p.fraction);
        if let Some(fraction) = fraction
            && self.samples.last().is_none_or(|s| s.at < dated)
        {
            if self.samples.len() == SAMPLES_KEPT {
                self.samples.remove(0);
            }
            self.samples.push(Sample {
                at: dated,
                fraction,
            });
        }
        self.facts = Some(facts);
    }

    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }
}

/// Whether the box is there, from its link, clocks, when it was last seen up and what its
/// provider says; see the module docs. A provider saying "destroyed" is believed only while
/// the box cannot be reached.
pub fn presence(
    link: &LinkState,
    clocks: &[Clock],
    last_seen_up: Option<DateTime<Utc>>,
    provider: Option<&crate::provider::InstanceState>,
    now: DateTime<Utc>,
) -> Presence {
    let released = clocks
        .iter()
        .any(|c| c.kind == ClockKind::AutoRelease && c.remaining_secs.is_some_and(|s| s <= 0))
        || (!link.is_usable()
            && matches!(provider, Some(crate::provider::InstanceState::Destroyed)));
    match link {
        _ if released => Presence::Gone,
        LinkState::Down { since, .. }
        | LinkState::AuthRefused { since, .. }
        | LinkState::HostkeyRefused { since, .. } => {
            let down_since = last_seen_up.map_or(*since, |seen| seen.min(*since));
            if (now - down_since).num_seconds() > GONE_AFTER_SECS {
                Presence::Gone
            } else {
                Presence::Unreachable
            }
        }
        _ => Presence::Up,
    }
}

/// One host's entry for the fleet roster.
pub struct RosterEntry<'a> {
    pub host: &'a str,
    pub presence: Presence,
    pub facts: &'a QueueFacts,
    pub verified: Option<&'a BTreeSet<String>>,
}

pub fn roster(entries: &[RosterEntry<'_>]) -> Roster {
    let hosts: Vec<HostQueue<'_>> = entries
        .iter()
        .map(|e| HostQueue {
            host: e.host,
            presence: e.presence,
            queue: &e.facts.queue,
            listing: &e.facts.listing,
            running: e.facts.running,
            run_alive: e.facts.run_alive,
            start_index: e.facts.start_index,
            verified: e.verified,
        })
        .collect();
    reconcile(&hosts, &RosterOptions::default())
}

/// Why a sample holds no queue text, as the probe reported it.
pub fn read_error(sample: &HostSample) -> Option<&str> {
    sample
        .errors
        .iter()
        .find(|e| e.section == "qfile")
        .map(|e| e.message.as_str())
}

/// ETAs of the current cell and of the whole queue, when the samples give a rate.
pub fn etas(
    summary: &HostSummary,
    facts: &QueueFacts,
    samples: &[Sample],
    now: DateTime<Utc>,
) -> (Option<u64>, Option<u64>) {
    let Some(current) = summary.current else {
        return (None, None);
    };
    let cell = cell_eta(samples, now).map(|e| e.eta_secs());
    let rule = DoneRule::default();
    let pending: Vec<usize> = facts
        .queue
        .cells
        .iter()
        .skip(current + 1)
        .filter(|c| !is_cell_done(&facts.listing, &c.name, &rule))
        .map(|c| c.index)
        .collect();
    let rest = queue_eta(&facts.queue, current, &pending, samples, now).map(|e| e.eta_secs());
    (cell, rest)
}

/// `"queue"` in `status --json`.
pub fn status(
    summary: &HostSummary,
    facts: &QueueFacts,
    samples: &[Sample],
    now: DateTime<Utc>,
) -> QueueStatus {
    let (cell, _) = etas(summary, facts, samples, now);
    QueueStatus::new(summary, &facts.queue, facts.progress, cell)
}

/// The overview column: cells done of total, the epoch, and the queue's ETA.
pub fn label(
    summary: &HostSummary,
    facts: &QueueFacts,
    samples: &[Sample],
    now: DateTime<Utc>,
) -> String {
    let (_, rest) = etas(summary, facts, samples, now);
    let epoch = summary.current.and(facts.progress).and_then(|p| p.epoch);
    overview_label(summary.done, summary.total, epoch, rest)
}

#[cfg(test)]
#[path = "queues_tests.rs"]
mod tests;
