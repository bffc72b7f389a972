//! Slurm's squeue rows as job rows, and one read of a `[[slurm]]` cluster as a reading.

use chrono::{DateTime, Utc};

use super::{ClusterReading, Exit, JobRow, Phase, Scheduler};
use crate::config::slurm::SlurmConfig;
use crate::probe::squeue::{JobState, SqueueRow};

fn phase(state: &JobState) -> Phase {
    match state {
        JobState::Pending | JobState::Requeued | JobState::Suspended => Phase::Pending,
        JobState::Running => Phase::Running,
        JobState::Completing => Phase::Ending,
        JobState::Completed => Phase::Succeeded,
        JobState::Failed
        | JobState::Timeout
        | JobState::Preempted
        | JobState::OutOfMemory
        | JobState::NodeFail => Phase::Failed,
        JobState::Cancelled => Phase::Cancelled,
        JobState::Other(_) => Phase::Other,
    }
}

/// Why an ended job ended, in words, where the state says more than its reason code.
fn end_words(state: &JobState) -> Option<&'static str> {
    Some(match state {
        JobState::Timeout => "killed at its walltime (SIGTERM, then SIGKILL after KillWait)",
        JobState::OutOfMemory => "killed for using more memory than it asked for",
        JobState::NodeFail => "a node it ran on failed",
        JobState::Preempted => "preempted by a job of higher priority",
        _ => return None,
    })
}

pub fn job_row(row: SqueueRow) -> JobRow {
    let phase = phase(&row.state);
    let reason_words = match end_words(&row.state) {
        Some(words) => Some(words.to_string()),
        // An ended job's reason is leftover (`None`, or the last pending reason).
        None if phase.is_over() && row.state != JobState::Failed => None,
        None => row.reason_words.clone(),
    };
    JobRow {
        left: row.time_left(),
        id: row.id,
        name: row.name,
        phase,
        state: row.state.word().to_string(),
        reason: row.reason,
        reason_words,
        exit: row.exit.filter(|_| phase.is_over()).map(|e| Exit {
            code: i64::from(e.code),
            signal: e.signal,
        }),
        nodes: row.nodes,
        node_list: row.node_list,
        gpus: row.gpus,
        elapsed_secs: row.elapsed.known().map(|d| d.as_secs()),
        limit_secs: row.limit.known().map(|d| d.as_secs()),
        restarts: row.restarts,
        restart_limit: None,
        requeue: row.requeue,
        walltime: None,
        checkpoint_age_secs: None,
        dangers: Vec::new(),
        pods: Vec::new(),
    }
}

/// One read of `cluster`: its watched jobs among `rows`, and the watched ids the queue does
/// not hold; or, with `error`, why it could not be read.
pub fn reading(
    cluster: &SlurmConfig,
    rows: Vec<SqueueRow>,
    error: Option<String>,
    now: DateTime<Utc>,
) -> ClusterReading {
    let ended_state_unknown = match &error {
        Some(_) => Vec::new(),
        None => cluster
            .jobs
            .iter()
            .filter(|id| !rows.iter().any(|r| &r.id == *id))
            .cloned()
            .collect(),
    };
    let mut out = ClusterReading {
        name: cluster.name.clone(),
        scheduler: Scheduler::Slurm,
        via: cluster.login.target.to_string(),
        jobs: rows
            .into_iter()
            .filter(|r| cluster.watches(&r.id, &r.name))
            .map(job_row)
            .collect(),
        ended_state_unknown,
        error: error.map(|e| {
            format!(
                "{}: squeue on {}: {}",
                cluster.name,
                cluster.login.target,
                crate::sanitize::line(&e, 300)
            )
        }),
        read_at: now,
    };
    out.judge(now);
    out
}
