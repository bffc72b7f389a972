//! What rigwatch remembers about each box between runs, in the XDG state dir: its last boot
//! (to notice a reboot), when it was last seen up (the clocks count from there), its cost
//! ledger (cost so far survives restarts of rigwatch), and its queue as last read (so the cells
//! of a box that is gone before rigwatch starts are still accounted for, as missing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::FleetState;
use super::queues::QueueFacts;
use crate::clocks::{CostLedger, SessionLog};
use crate::queue::{FinalListing, Queue};
use crate::readings::BootMark;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostMemory {
    pub boot: Option<BootMark>,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub ledger: Option<CostLedger>,
    /// Sessions seen in the last week, for a weekly quota.
    #[serde(default)]
    pub sessions: SessionLog,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<RememberedQueue>,
}

/// The facts the roster needs of a queue, without the progress and log tail that only matter
/// while it runs. Bounded: the queue came from a capped read, and the listing keeps only the
/// queue's own cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RememberedQueue {
    pub queue: Queue,
    pub listing: FinalListing,
    pub running: Option<usize>,
    pub run_alive: bool,
    pub start_index: Option<usize>,
}

impl RememberedQueue {
    pub fn of(facts: &QueueFacts) -> RememberedQueue {
        let mut listing = FinalListing::default();
        for c in &facts.queue.cells {
            if let Some(files) = facts.listing.cells.get(&c.name) {
                listing.cells.insert(c.name.clone(), files.clone());
            }
        }
        RememberedQueue {
            queue: facts.queue.clone(),
            listing,
            running: facts.running,
            run_alive: facts.run_alive,
            start_index: facts.start_index,
        }
    }

    /// The facts to reconcile with, when the queue is still the configured `file`.
    pub fn facts(&self, file: &str) -> Option<QueueFacts> {
        (self.queue.file == file).then(|| QueueFacts {
            queue: self.queue.clone(),
            listing: self.listing.clone(),
            running: self.running,
            run_alive: self.run_alive,
            start_index: self.start_index,
            progress: None,
            log_tail: Vec::new(),
        })
    }
}

pub type FleetMemory = BTreeMap<String, HostMemory>;

/// The fleet state's side of the memory: what it takes in at start and gives back at exit.
impl FleetState {
    /// Picks up where the last run of rigwatch left off: cost so far, when each box was last
    /// seen up (so a box that is down now still has its clocks), and its queue as last read (so
    /// a box gone since still has its cells, as missing).
    pub fn recall(&mut self, memory: &FleetMemory) {
        for h in &mut self.hosts {
            if let Some(m) = memory.get(&h.config.name) {
                h.ledger = m.ledger.clone();
                h.last_seen_up = m.last_seen_up;
                h.sessions = m.sessions.clone();
                h.recalled_boot = m.boot.clone();
                if let (Some(tracker), Some(config), Some(q)) =
                    (h.queue.as_mut(), h.config.queue.as_ref(), m.queue.as_ref())
                {
                    tracker.facts = tracker.facts.take().or_else(|| q.facts(&config.file));
                }
            }
        }
    }

    /// Writes what the next run needs into `memory`.
    pub fn remember(&self, memory: &mut FleetMemory) {
        for h in &self.hosts {
            let m = memory.entry(h.config.name.clone()).or_default();
            m.ledger = h.ledger.clone();
            m.last_seen_up = h.last_seen_up.or(m.last_seen_up);
            m.sessions = h.sessions.clone();
            if let Some(reading) = h.history.latest_host() {
                m.boot = Some(crate::readings::BootMark::of(reading));
            }
            match h.queue.as_ref().map(|t| t.facts.as_ref()) {
                None => m.queue = None,
                Some(None) => {}
                Some(Some(facts)) => m.queue = Some(RememberedQueue::of(facts)),
            }
        }
    }
}

pub fn path() -> Option<PathBuf> {
    crate::config::paths::state_dir().map(|d| d.join("hosts.json"))
}

/// A missing or unreadable file is an empty memory: nothing has been seen yet.
pub fn load(path: Option<&Path>) -> FleetMemory {
    path.and_then(|p| std::fs::read(p).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Written to a temporary file and renamed, so a crash never leaves half a file.
pub fn save(path: &Path, memory: &FleetMemory) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(memory).map_err(std::io::Error::other)?;
    crate::config::paths::save_private(path, &bytes)
}
