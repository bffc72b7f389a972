//! Slurm's squeue rows as job rows, and one read of a `[[slurm]]` cluster as a reading.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{ClusterReading, Exit, JobRow, Phase, Scheduler};
use crate::config::slurm::SlurmConfig;
use crate::probe::squeue::{
    JobState, SqueueQuery, SqueueRow, parse_squeue_rows, separator, squeue_command,
};
use crate::transport::{ExecLimits, Session};

/// The most jobs whose GPUs are read per period.
const MAX_JOBS_PROBED: usize = 8;

/// A whole queue's text, at most: a site's twenty thousand jobs fit.
const MAX_QUEUE_BYTES: usize = 8 * 1024 * 1024;

/// One read of `cluster`'s queue through its login node's `session`, within `timeout` in all:
/// for the runtime, `status` and the check after a `scancel` alike.
pub async fn read(
    cluster: &SlurmConfig,
    session: Option<&Session>,
    timeout: Duration,
) -> ClusterReading {
    read_after(cluster, session, timeout, &[]).await
}

/// As [`read`]; `vanished` (jobs the last read showed live) and the watched ids the queue does
/// not hold are asked of accounting, so a job that left the queue gets its end state.
pub async fn read_after(
    cluster: &SlurmConfig,
    session: Option<&Session>,
    timeout: Duration,
    vanished: &[String],
) -> ClusterReading {
    // One deadline for the whole read (squeue, then accounting, checkpoints and the GPUs in
    // the jobs, each given what is left): `status --timeout 10` is 10 s, not 10 s a step.
    let deadline = tokio::time::Instant::now() + timeout;
    let left = || {
        deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .max(Duration::from_millis(100))
    };
    let read = async {
        let session = session.ok_or("the login node is not reachable")?;
        // A per-call nonce: no job name written before the call can hold the separator.
        let sep = separator(&format!("{:016x}", fastrand::u64(..)));
        let query = SqueueQuery {
            user: cluster.user.as_deref(),
            partition: cluster.partition.as_deref(),
        };
        let limits = ExecLimits {
            timeout,
            max_output: MAX_QUEUE_BYTES,
        };
        let out = session
            .exec(
                &super::bounded(&squeue_command(&query, &sep), timeout),
                limits,
            )
            .await
            .map_err(|e| e.to_string())?;
        // A cut answer is never a smaller queue: a running job past the cut would read as ended.
        if out.truncated {
            return Err(format!(
                "squeue's answer was cut at {} MiB: narrow the query (user, partition, names)",
                MAX_QUEUE_BYTES >> 20
            ));
        }
        match out.exit_status {
            Some(0) => {}
            // `timeout`'s own status: the login node ended it (`bounded`).
            Some(124 | 137) => {
                return Err(format!(
                    "no answer within {:.0}s: ended on the login node",
                    timeout.as_secs_f64()
                ));
            }
            _ => {
                return Err(format!("{}: {}", out.status_words(), out.stderr_line(400)));
            }
        }
        parse_squeue_rows(&String::from_utf8_lossy(&out.stdout), &sep).map_err(|e| e.to_string())
    };
    let (rows, error) = match tokio::time::timeout(timeout, read).await {
        Ok(Ok(rows)) => (rows, None),
        Ok(Err(e)) => (Vec::new(), Some(e)),
        Err(_) => (
            Vec::new(),
            Some(format!("no answer within {:.1}s", timeout.as_secs_f64())),
        ),
    };
    let mut reading = reading(cluster, rows, error, Utc::now());
    if let (Some(session), None) = (session, &reading.error) {
        let mut ask: Vec<String> = reading.ended_state_unknown.clone();
        ask.extend(
            vanished
                .iter()
                .filter(|id| !reading.jobs.iter().any(|j| &j.id == *id))
                .cloned(),
        );
        ask.dedup();
        let ended =
            tokio::time::timeout_at(deadline, super::sacct::end_states(session, &ask, left()))
                .await;
        if let Ok(Ok(ended)) = ended {
            reading
                .ended_state_unknown
                .retain(|id| !ended.iter().any(|j| &j.id == id));
            reading.jobs.extend(ended);
        }
    }
    if let Some(session) = session {
        // Whatever was read within the time is kept; the rest waits a period.
        if let Some(template) = &cluster.checkpoints {
            let ages = checkpoint_ages(&mut reading, session, template, left());
            let _ = tokio::time::timeout_at(deadline, ages).await;
        }
        let _ = tokio::time::timeout_at(deadline, gpu_truth(&mut reading, session, left())).await;
        reading.judge(Utc::now());
    }
    reading
}

/// The command that prints the cluster's clock, then `ID MTIME` per job: the newest file's
/// modification time under the job's checkpoint folder (two levels deep), empty when none.
pub fn checkpoint_command(template: &str, jobs: &[(&str, &str)]) -> String {
    let mut out = String::from("date +%s");
    for (id, name) in jobs {
        let dir = template.replace("{job}", id).replace("{name}", name);
        out.push_str(&format!(
            "; printf '%s %s\\n' {} \"$(find {} -maxdepth 2 -type f -printf '%T@\\n' \
             2>/dev/null | sort -rn | head -n1)\"",
            crate::sanitize::shell_quote(id),
            crate::sanitize::shell_quote(&dir)
        ));
    }
    out
}

/// Reads the newest checkpoint's age of each running job (one command for all of them).
async fn checkpoint_ages(
    reading: &mut ClusterReading,
    session: &Session,
    template: &str,
    timeout: Duration,
) {
    let running: Vec<(String, String)> = reading
        .jobs
        .iter()
        .filter(|j| j.phase == Phase::Running)
        .take(MAX_JOBS_PROBED)
        .map(|j| (j.id.clone(), j.name.clone()))
        .collect();
    if running.is_empty() {
        return;
    }
    let pairs: Vec<(&str, &str)> = running
        .iter()
        .map(|(i, n)| (i.as_str(), n.as_str()))
        .collect();
    let limits = ExecLimits {
        timeout,
        max_output: 64 * 1024,
    };
    let Ok(out) = session
        .exec(
            &super::bounded(&checkpoint_command(template, &pairs), timeout),
            limits,
        )
        .await
    else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let Some(now) = lines.next().and_then(|l| l.trim().parse::<f64>().ok()) else {
        return;
    };
    for line in lines {
        let Some((id, mtime)) = line.split_once(' ') else {
            continue;
        };
        let Ok(mtime) = mtime.trim().parse::<f64>() else {
            continue;
        };
        if let Some(job) = reading.jobs.iter_mut().find(|j| j.id == id) {
            job.checkpoint_age_secs = Some((now - mtime).max(0.0) as u64);
        }
    }
}

/// nvidia-smi inside each running job that holds GPUs, on its first nodes; each node within a
/// share of `timeout`.
async fn gpu_truth(reading: &mut ClusterReading, session: &Session, timeout: Duration) {
    let each = (timeout / 4).clamp(Duration::from_secs(2), Duration::from_secs(20));
    for job in reading.jobs.iter_mut().take(MAX_JOBS_PROBED) {
        let (Phase::Running, Some(nodes)) = (job.phase, &job.node_list) else {
            continue;
        };
        if job.gpus.is_none_or(|n| n == 0) {
            continue;
        }
        job.gpu_truth = super::gpus::read(session, &job.id, nodes, each).await;
    }
}

pub(super) fn phase(state: &JobState) -> Phase {
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
pub(super) fn end_words(state: &JobState) -> Option<&'static str> {
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
        gpu_truth: Vec::new(),
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
                // squeue's stderr is the login node's words: a token in it is masked here,
                // before status, events, sinks or the log.
                crate::sanitize::words(&e, 300)
            )
        }),
        read_at: now,
        quota: None,
    };
    out.judge(now);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_name_is_only_data_in_the_checkpoint_command() {
        let c = checkpoint_command("/scratch/me/{name}/ckpt", &[("42", "x'; rm -rf ~; '")]);
        assert!(c.starts_with("date +%s; printf "), "{c}");
        assert!(
            c.contains(r"find '/scratch/me/x'\''; rm -rf ~; '\''/ckpt' -maxdepth 2"),
            "{c}"
        );
    }
}
