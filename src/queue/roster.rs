//! Roster reconciliation: every cell of every queue in the fleet, with the state the artifacts
//! support (not what a log or a watcher claims).
//!
//! Per cell, first match wins:
//! 1. **Colliding**: its name is on two lines of one queue, or in two queues (two boxes) —
//!    outputs would overwrite each other, so even a durable copy is not attributable.
//! 2. **Done { verified }**: `final_dir/<name>/` passes the [`DoneRule`], or the name is in the
//!    host's verified set (pulled and verified by load); `verified` is the latter.
//! 3. **Missing**: the box is [`Presence::Gone`] and no durable copy is known.
//! 4. With a running index r (last known): run alive → `i == r` Running, `i < r` Failed (its
//!    turn passed), `i > r` Pending; run dead → `i <= r` Failed (r died mid-cell), `i > r` Pending.
//! 5. Without a running index: cells before the last done cell, or skipped by a known
//!    `start_index` (`line <= start_index`), are Failed; the rest are Pending.
//!
//! [`Presence::Unreachable`] is reconciled exactly like `Up` with the caller's last-known facts:
//! a dropped poll is not a dead run, so the caller must not turn a lost link into
//! `run_alive = false`.
//!
//! **Resume** (killed queue): when the box is gone, or the run is not alive, and some cell is not
//! done, the resume point is the first cell (in file order, from the top) that is not done, and
//! the command is the template with `{queue_file}` and `{k}` filled in, where k is that cell's
//! `start_index` (raw lines before it; see `parse`). For a gone box the command is what to run on
//! a replacement box.
//!
//! Display order: Missing, Failed, Colliding, Running, Pending, Done; then host, file, index.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::listing::{DoneRule, FinalListing, is_cell_done};
use super::parse::Queue;

/// The default resume command, matching the seeds' `bash run_queue.sh queue.txt <k>`.
pub const DEFAULT_RESUME_TEMPLATE: &str = "bash run_queue.sh {queue_file} {k}";

/// Whether the box is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Up,
    /// The link is down; facts are last-known. Reconciled like `Up`.
    Unreachable,
    /// Vanished, released, or unreachable long enough to be considered gone.
    Gone,
}

/// One queue on one box, as the fleet last saw it.
#[derive(Debug, Clone)]
pub struct HostQueue<'a> {
    pub host: &'a str,
    pub presence: Presence,
    pub queue: &'a Queue,
    /// The known listing of `final_dir` (last known when the box is gone).
    pub listing: &'a FinalListing,
    /// Index of the running (or last running) cell, from [`super::running_cell`].
    pub running: Option<usize>,
    /// Whether the queue's process is alive.
    pub run_alive: bool,
    /// The `start_index` the queue was launched with, when known.
    pub start_index: Option<usize>,
    /// Names whose pulled copies were verified by load.
    pub verified: Option<&'a BTreeSet<String>>,
}

/// Knobs for [`reconcile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RosterOptions {
    pub done_rule: DoneRule,
    /// `{queue_file}` and `{k}` are replaced; see [`DEFAULT_RESUME_TEMPLATE`].
    pub resume_template: String,
}

impl Default for RosterOptions {
    fn default() -> Self {
        RosterOptions {
            done_rule: DoneRule::default(),
            resume_template: DEFAULT_RESUME_TEMPLATE.to_owned(),
        }
    }
}

/// Where a cell lives: host, queue file, 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CellRef {
    pub host: String,
    pub file: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CellState {
    Done {
        verified: bool,
    },
    Running,
    Pending,
    Failed,
    Missing,
    /// `with` lists the other lines using the same name.
    Colliding {
        with: Vec<CellRef>,
    },
}

impl CellState {
    /// Display rank: problems first.
    pub fn rank(&self) -> u8 {
        match self {
            CellState::Missing => 0,
            CellState::Failed => 1,
            CellState::Colliding { .. } => 2,
            CellState::Running => 3,
            CellState::Pending => 4,
            CellState::Done { .. } => 5,
        }
    }
}

/// One cell of the fleet-wide roster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellReport {
    pub host: String,
    pub file: String,
    pub index: usize,
    pub line: usize,
    pub name: String,
    pub cfg_path: String,
    pub task: String,
    pub epochs: Option<u32>,
    #[serde(flatten)]
    pub state: CellState,
    /// `final_dir/<name>/` passes the done rule (independent of `state`, e.g. when colliding).
    pub durable: bool,
}

/// How to restart a killed queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resume {
    /// Index of the first cell that is not done.
    pub cell_index: usize,
    /// The `start_index` to pass (raw lines before that cell).
    pub start_index: usize,
    pub command: String,
}

/// Per-queue counts for the overview column. `missing` and `colliding` are counted apart from
/// `done`/`running`/`pending`/`failed`; the six add up to `total`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostSummary {
    pub host: String,
    pub file: String,
    pub presence: Presence,
    pub total: usize,
    pub done: usize,
    /// Of `done`, the cells whose pulled copies were verified by load.
    pub verified: usize,
    pub running: usize,
    pub pending: usize,
    pub failed: usize,
    pub missing: usize,
    pub colliding: usize,
    /// Index of the Running cell, if one is.
    pub current: Option<usize>,
    pub resume: Option<Resume>,
}

impl HostSummary {
    /// Cells without a done copy: everything a teardown of this box could still lose.
    pub fn not_done(&self) -> usize {
        self.total - self.done
    }
}

/// The reconciled fleet: cells in display order, and one summary per input queue (input order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Roster {
    pub cells: Vec<CellReport>,
    pub hosts: Vec<HostSummary>,
}

/// Reconcile every queue of the fleet; see the module docs for the rules.
pub fn reconcile(hosts: &[HostQueue<'_>], opts: &RosterOptions) -> Roster {
    let mut by_name: BTreeMap<&str, Vec<CellRef>> = BTreeMap::new();
    for h in hosts {
        for c in h.queue.cells.iter().filter(|c| !c.name.is_empty()) {
            let at = CellRef {
                host: h.host.to_owned(),
                file: h.queue.file.clone(),
                line: c.line,
            };
            by_name.entry(c.name.as_str()).or_default().push(at);
        }
    }
    let mut cells = Vec::new();
    let mut summaries = Vec::new();
    for h in hosts {
        let (host_cells, summary) = reconcile_one(h, &by_name, opts);
        cells.extend(host_cells);
        summaries.push(summary);
    }
    cells.sort_by(|a, b| {
        (a.state.rank(), &a.host, &a.file, a.index).cmp(&(
            b.state.rank(),
            &b.host,
            &b.file,
            b.index,
        ))
    });
    Roster {
        cells,
        hosts: summaries,
    }
}

fn reconcile_one(
    h: &HostQueue<'_>,
    by_name: &BTreeMap<&str, Vec<CellRef>>,
    opts: &RosterOptions,
) -> (Vec<CellReport>, HostSummary) {
    let q = h.queue;
    let verified = |name: &str| h.verified.is_some_and(|v| v.contains(name));
    let durable: Vec<bool> = q
        .cells
        .iter()
        .map(|c| is_cell_done(h.listing, &c.name, &opts.done_rule))
        .collect();
    let done: Vec<bool> = q
        .cells
        .iter()
        .zip(&durable)
        .map(|(c, d)| *d || verified(&c.name))
        .collect();
    let gone = h.presence == Presence::Gone;
    let running = h.running.filter(|r| *r < q.cells.len() && !gone);
    let stop = done.iter().rposition(|d| *d).map_or(0, |d| d + 1);
    let mut reports = Vec::with_capacity(q.cells.len());
    for (i, c) in q.cells.iter().enumerate() {
        let here = CellRef {
            host: h.host.to_owned(),
            file: q.file.clone(),
            line: c.line,
        };
        let others: Vec<CellRef> = by_name
            .get(c.name.as_str())
            .map(|v| v.iter().filter(|r| **r != here).cloned().collect())
            .unwrap_or_default();
        let state = if !others.is_empty() {
            CellState::Colliding { with: others }
        } else if done[i] {
            CellState::Done {
                verified: verified(&c.name),
            }
        } else if gone {
            CellState::Missing
        } else if let Some(r) = running {
            match (h.run_alive, i.cmp(&r)) {
                (true, std::cmp::Ordering::Equal) => CellState::Running,
                (_, std::cmp::Ordering::Less) | (false, std::cmp::Ordering::Equal) => {
                    CellState::Failed
                }
                (_, std::cmp::Ordering::Greater) => CellState::Pending,
            }
        } else if i < stop || h.start_index.is_some_and(|k| c.skipped_by(k)) {
            CellState::Failed
        } else {
            CellState::Pending
        };
        reports.push(CellReport {
            host: h.host.to_owned(),
            file: q.file.clone(),
            index: c.index,
            line: c.line,
            name: c.name.clone(),
            cfg_path: c.cfg_path.clone(),
            task: c.task.clone(),
            epochs: c.epochs,
            state,
            durable: durable[i],
        });
    }
    let resume = (gone || !h.run_alive)
        .then(|| done.iter().position(|d| !*d))
        .flatten()
        .and_then(|f| q.cells.get(f))
        .map(|c| Resume {
            cell_index: c.index,
            start_index: c.start_index(),
            command: resume_command(&opts.resume_template, &q.file, c.start_index()),
        });
    let count = |f: fn(&CellState) -> bool| reports.iter().filter(|r| f(&r.state)).count();
    let summary = HostSummary {
        host: h.host.to_owned(),
        file: q.file.clone(),
        presence: h.presence,
        total: reports.len(),
        done: count(|s| matches!(s, CellState::Done { .. })),
        verified: count(|s| *s == CellState::Done { verified: true }),
        running: count(|s| *s == CellState::Running),
        pending: count(|s| *s == CellState::Pending),
        failed: count(|s| *s == CellState::Failed),
        missing: count(|s| *s == CellState::Missing),
        colliding: count(|s| matches!(s, CellState::Colliding { .. })),
        current: reports
            .iter()
            .find(|r| r.state == CellState::Running)
            .map(|r| r.index),
        resume,
    };
    (reports, summary)
}

/// Fill the resume template; the queue file is shell-quoted when it needs it.
pub fn resume_command(template: &str, queue_file: &str, k: usize) -> String {
    // One pass, so a `{k}` inside the queue file's name is not substituted.
    let mut out = String::with_capacity(template.len() + queue_file.len());
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("{queue_file}") {
            out.push_str(&shell_quote(queue_file));
            rest = after;
        } else if let Some(after) = rest.strip_prefix("{k}") {
            out.push_str(&k.to_string());
            rest = after;
        } else {
            out.push('{');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+:@%,=".contains(c));
    if safe {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
