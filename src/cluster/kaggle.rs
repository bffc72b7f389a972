//! A `[[kaggle]]` member's kernels as job rows: each kernel's latest version (a commit, "Save
//! & Run All") is a job of the member, with Kaggle's state, how long it has run, the commit's
//! time limit as its walltime clock (~9 h on a GPU or TPU, ~12 h on CPU, from the version's
//! start), and the notebook world's own traps said in words: a commit with a failing cell saves
//! nothing, a commit inherits the notebook's accelerator (left on "None" it runs on CPU), a
//! version can wait long in Kaggle's queue, and the weekly GPU quota can run out under a run.
//! Pure: what the CLI said and `now` in. Every text from the CLI is sanitized here.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{ClusterReading, JobRow, Phase, Scheduler};
use crate::config::KaggleConfig;
use crate::probe::kaggle::{Accelerator, GpuQuota, KernelStatus};

/// Kaggle's limit on one commit's run on a GPU or TPU, and on CPU.
pub const GPU_LIMIT: Duration = Duration::from_secs(9 * 3600);
pub const CPU_LIMIT: Duration = Duration::from_secs(12 * 3600);
/// Queued longer than this is a danger: Kaggle has not found it a machine.
const QUEUED_LONG: Duration = Duration::from_secs(3600);
/// What Kaggle's one detach primitive loses: said whenever a version ends in error.
pub const SAVES_NOTHING: &str = "a commit with a failing cell saves nothing";
/// A complete commit whose `/kaggle/working` was empty: nothing came of the run to pull.
pub const KEPT_NOTHING: &str = "complete, but it kept no output: a commit keeps only what it \
     writes to /kaggle/working (nothing was written there, or it went to /kaggle/temp)";
/// Why `T` on a Kaggle commit does nothing.
pub const NOTHING_TO_TEAR_DOWN: &str = "a Kaggle commit runs on Kaggle's machine and stops by \
     itself; rigwatch has nothing there to tear down (stop it on kaggle.com)";

/// What one read of a member gathered.
#[derive(Debug, Clone)]
pub struct KaggleRead {
    /// Per kernel: its status (or why it could not be read), when its latest version last ran
    /// (the list's `lastRunTime`), and what its notebook is set to run on, where read.
    pub kernels: Vec<KernelRead>,
    /// The account's weekly GPU quota: Ok(None) when it reports none.
    pub quota: Result<Option<GpuQuota>, String>,
    /// Why the quota shown is rigwatch's own lower bound, where it is.
    pub quota_note: Option<String>,
}

#[derive(Debug, Clone)]
pub struct KernelRead {
    pub kernel: String,
    pub status: Result<KernelStatus, String>,
    pub last_run: Option<DateTime<Utc>>,
    pub accelerator: Option<Accelerator>,
    /// How many output files a COMPLETE version kept (counted up to one); None where not read.
    pub outputs: Option<usize>,
}

fn text(words: &str) -> String {
    crate::sanitize::words(words.trim(), 300)
}

fn phase_of(word: &str) -> Phase {
    match word {
        "QUEUED" => Phase::Pending,
        "RUNNING" => Phase::Running,
        "CANCEL_REQUESTED" => Phase::Ending,
        "COMPLETE" => Phase::Succeeded,
        "ERROR" => Phase::Failed,
        "CANCEL_ACKNOWLEDGED" => Phase::Cancelled,
        _ => Phase::Other,
    }
}

/// Whether a version in Kaggle's state `word` has not ended (queued, running, being cancelled,
/// or a state rigwatch does not know).
pub fn is_live(word: &str) -> bool {
    !phase_of(word).is_over()
}

/// The commit's limit: the accelerator its notebook is set to where read, else what the member
/// says the notebooks are for; unknown is the shorter (GPU) limit, so the clock is never late.
fn limit(accelerator: Option<&Accelerator>, meant_gpu: Option<bool>) -> Duration {
    match (accelerator, meant_gpu) {
        (Some(a), _) if !a.gpu && !a.tpu => CPU_LIMIT,
        (None, Some(false)) => CPU_LIMIT,
        _ => GPU_LIMIT,
    }
}

fn row(
    member: &KaggleConfig,
    read: &KernelRead,
    status: &KernelStatus,
    now: DateTime<Utc>,
) -> JobRow {
    let phase = phase_of(&status.word);
    let ran = read
        .last_run
        .and_then(|t| (now - t).to_std().ok())
        .map(|d| d.as_secs());
    let limit = limit(read.accelerator.as_ref(), member.gpu);
    let reason_words = match phase {
        Phase::Failed => Some(match &status.failure {
            Some(f) => format!("{SAVES_NOTHING}: {}", text(f)),
            None => format!("{SAVES_NOTHING}; Kaggle gave no failure message (see its log)"),
        }),
        // Queued long, the danger says it (once).
        Phase::Pending => ran
            .filter(|s| *s < QUEUED_LONG.as_secs())
            .map(|s| format!("in Kaggle's queue for {}", minutes(s))),
        Phase::Cancelled => Some("cancelled: what it wrote to /kaggle/working is not kept".into()),
        Phase::Succeeded if read.outputs == Some(0) => Some(KEPT_NOTHING.into()),
        Phase::Other if status.word == "NEW_SCRIPT" => {
            Some("never committed: no version has run (Save Version → Save & Run All)".into())
        }
        Phase::Other => Some(format!(
            "a state rigwatch does not know: {}",
            text(&status.word)
        )),
        _ => None,
    };
    let mut dangers = Vec::new();
    let cpu = read.accelerator.as_ref().is_some_and(|a| !a.gpu && !a.tpu);
    if member.gpu == Some(true) && cpu && !phase.is_over() {
        dangers.push(
            "runs on CPU: its notebook's accelerator is None, and a commit inherits it; set \
             a GPU in the notebook's settings and commit again"
                .to_string(),
        );
    }
    // An ended job's danger is said once, in its "ended" notice, made a warning by it.
    if phase == Phase::Succeeded && read.outputs == Some(0) {
        dangers.push(KEPT_NOTHING.to_string());
    }
    if phase == Phase::Pending
        && let Some(s) = ran.filter(|s| *s >= QUEUED_LONG.as_secs())
    {
        dangers.push(format!(
            "queued for {}: Kaggle has found it no machine (GPU sessions are limited per account)",
            minutes(s)
        ));
    }
    let running = phase == Phase::Running;
    JobRow {
        reason_words,
        node_list: read
            .accelerator
            .as_ref()
            .filter(|a| !a.machine.is_empty())
            .map(|a| text(&a.machine)),
        elapsed_secs: ran.filter(|_| running),
        limit_secs: Some(limit.as_secs()),
        left: ran
            .filter(|_| running)
            .map(|s| limit.saturating_sub(Duration::from_secs(s))),
        dangers,
        ..JobRow::new(
            read.kernel.clone(),
            read.kernel
                .split_once('/')
                .map_or(read.kernel.as_str(), |(_, s)| s)
                .to_string(),
            phase,
            text(&status.word),
        )
    }
}

fn minutes(secs: u64) -> String {
    crate::signals::minutes(chrono::Duration::seconds(secs as i64))
}

/// A running GPU commit that would outlast the account's GPU hours left: Kaggle runs no GPU
/// session past the quota.
fn quota_dangers(jobs: &mut [JobRow], quota: &GpuQuota) {
    let left = (quota.remaining_hours * 3600.0) as i64;
    for job in jobs.iter_mut().filter(|j| j.phase == Phase::Running) {
        let to_limit = job.left.map_or(0, |l| l.as_secs() as i64);
        if job.limit_secs == Some(GPU_LIMIT.as_secs()) && left < to_limit {
            job.dangers.push(format!(
                "the {} weekly GPU quota has {}{:.1} h left of {:.0} h{}, less than the {} \
                 this commit may still run",
                if quota.lower_bound {
                    "account's (by rigwatch's own count of the runs it saw)"
                } else {
                    "account's"
                },
                if quota.lower_bound { "at most " } else { "" },
                quota.remaining_hours,
                quota.total_hours,
                quota
                    .refresh_at
                    .map(|t| format!(" (renews {})", t.format("%a %H:%M UTC")))
                    .unwrap_or_default(),
                minutes(to_limit as u64)
            ));
        }
    }
}

/// One read of `member` as a reading. A kernel whose status could not be read makes the whole
/// read an error (its rows stay as last read: a failed read is no news about a job).
pub fn reading(member: &KaggleConfig, read: KaggleRead, now: DateTime<Utc>) -> ClusterReading {
    let mut out = ClusterReading {
        name: member.name.clone(),
        scheduler: Scheduler::Kaggle,
        via: format!("kaggle CLI ({} kernels)", member.kernels.len()),
        jobs: Vec::new(),
        ended_state_unknown: Vec::new(),
        error: None,
        read_at: now,
        quota: None,
    };
    let failed: Vec<&str> = read
        .kernels
        .iter()
        .filter_map(|k| k.status.as_ref().err().map(String::as_str))
        .collect();
    if let Some(first) = failed.first() {
        let more = match failed.len() {
            1 => String::new(),
            n => format!(" ({n} of {} kernels unread)", read.kernels.len()),
        };
        out.error = Some(format!("{}{more}", text(first)));
        return out;
    }
    for k in &read.kernels {
        if let Ok(status) = &k.status {
            out.jobs.push(row(member, k, status, now));
        }
    }
    if let Some(note) = &read.quota_note {
        out.via.push_str(&format!("; GPU quota {}", text(note)));
    }
    match read.quota {
        Ok(Some(quota)) => {
            quota_dangers(&mut out.jobs, &quota);
            out.quota = Some(quota);
        }
        Ok(None) => {}
        Err(e) => out
            .via
            .push_str(&format!("; GPU quota not read: {}", text(&e))),
    }
    out.judge(now);
    out
}

#[cfg(test)]
#[path = "kaggle_tests.rs"]
mod tests;
