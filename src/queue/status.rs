//! What the overview column and `status --json` show for one queue.

use serde::Serialize;

use super::parse::Queue;
use super::progress::Progress;
use super::roster::HostSummary;

/// `"queue"` in `status --json`. Field names are part of the JSON contract.
///
/// The four counts are cells in those states; `total - (done + running + pending + failed)` are
/// the Missing and Colliding cells. `resume_index` is in `start_index` units (the number to pass
/// to `run_queue.sh`), present only for a killed queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueStatus {
    pub file: String,
    pub total: usize,
    pub done: usize,
    pub running: usize,
    pub pending: usize,
    pub failed: usize,
    pub current: Option<CurrentCell>,
    pub resume_index: Option<usize>,
}

/// `"current"` in `status --json`: the Running cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurrentCell {
    pub index: usize,
    pub name: String,
    pub progress: Option<Progress>,
    /// Seconds until the current cell finishes.
    pub eta_secs: Option<u64>,
}

impl QueueStatus {
    /// Build from a reconciled summary, its queue (for the current cell's name), and the
    /// current cell's progress and ETA (ignored when no cell is running).
    pub fn new(
        summary: &HostSummary,
        queue: &Queue,
        progress: Option<Progress>,
        eta_secs: Option<u64>,
    ) -> QueueStatus {
        let current = summary
            .current
            .and_then(|i| queue.cell(i))
            .map(|c| CurrentCell {
                index: c.index,
                name: c.name.clone(),
                progress,
                eta_secs,
            });
        QueueStatus {
            file: summary.file.clone(),
            total: summary.total,
            done: summary.done,
            running: summary.running,
            pending: summary.pending,
            failed: summary.failed,
            current,
            resume_index: summary.resume.as_ref().map(|r| r.start_index),
        }
    }
}

/// The overview column: `7/12 · ep 3/50 · ETA 5h10m`. The epoch and ETA parts are left out when
/// unknown (`7/12`, `7/12 · ETA 42m`).
pub fn overview_label(
    done: usize,
    total: usize,
    epoch: Option<(u32, u32)>,
    eta_secs: Option<u64>,
) -> String {
    let mut out = format!("{done}/{total}");
    if let Some((cur, of)) = epoch {
        out.push_str(&format!(" · ep {cur}/{of}"));
    }
    if let Some(secs) = eta_secs {
        out.push_str(" · ETA ");
        out.push_str(&compact_duration(secs));
    }
    out
}

/// Hours and minutes, rounded to the nearest minute: `<1m`, `42m`, `5h10m`, `5h05m`, `130h00m`.
pub fn compact_duration(secs: u64) -> String {
    let mins = secs.saturating_add(30) / 60;
    match (mins / 60, mins % 60) {
        (0, 0) => "<1m".to_owned(),
        (0, m) => format!("{m}m"),
        (h, m) => format!("{h}h{m:02}m"),
    }
}
