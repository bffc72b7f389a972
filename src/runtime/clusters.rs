//! `status` on Slurm clusters: each `[[slurm]]` login node reached through the pool, one
//! `squeue` for all of the user's jobs (never one call per job), and the watched jobs read back.
//! A watched job id that the queue no longer holds is "ended, state unknown", never running.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::clocks::{Clock, walltime_clock};
use crate::probe::SlurmJob;

use crate::config::FleetConfig;
use crate::config::slurm::SlurmConfig;
use crate::probe::squeue::{SqueueQuery, SqueueRow, parse_squeue_rows, separator, squeue_command};
use crate::transport::{ExecLimits, Pool};

/// One cluster as `status --json` shows it.
#[derive(Debug, Serialize)]
pub struct ClusterReport {
    pub name: String,
    pub jobs: Vec<JobReport>,
    /// Watched job ids the queue no longer holds: ended, state unknown.
    pub ended_state_unknown: Vec<String>,
    /// Why the queue could not be read, naming the cluster and the probe; None when it was.
    pub error: Option<String>,
}

/// A watched job as squeue said it, with its walltime as a danger clock while it runs.
#[derive(Debug, Serialize)]
pub struct JobReport {
    #[serde(flatten)]
    pub row: SqueueRow,
    /// SIGTERM, then SIGKILL after KillWait: the same clock a box inside a job shows.
    pub walltime: Option<Clock>,
}

impl JobReport {
    fn of(row: SqueueRow, read_at: DateTime<Utc>) -> JobReport {
        let job = SlurmJob {
            id: row.id.clone(),
            state: row.state.word().to_string(),
            used: row.elapsed.known(),
            limit: row.limit.known(),
            left: row.time_left(),
        };
        let walltime = walltime_clock(&job, read_at, None, read_at);
        JobReport { row, walltime }
    }
}

/// Reads every cluster's queue once, within `timeout` in all (connection and squeue).
pub async fn read(fleet: &FleetConfig, timeout: Duration) -> Vec<ClusterReport> {
    if fleet.slurm.is_empty() {
        return Vec::new();
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let logins = FleetConfig {
        hosts: fleet.slurm.iter().map(|c| c.login.clone()).collect(),
        ..fleet.clone()
    };
    let pool = Pool::start(&logins);
    pool.settle(timeout).await;
    let reports = futures::future::join_all(fleet.slurm.iter().map(|cluster| {
        let session = pool.get(&cluster.login.name).and_then(|l| l.session());
        async move {
            let read = async {
                let session = session.ok_or("the login node is not reachable")?;
                let sep = separator(&crate::monitor::commands::new_nonce());
                let query = SqueueQuery {
                    user: cluster.user.as_deref(),
                    partition: cluster.partition.as_deref(),
                };
                let limits = ExecLimits {
                    timeout,
                    max_output: 8 * 1024 * 1024,
                };
                let out = session
                    .exec(&squeue_command(&query, &sep), limits)
                    .await
                    .map_err(|e| e.to_string())?;
                if out.exit_status != Some(0) {
                    return Err(format!(
                        "exit {:?}: {}",
                        out.exit_status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                parse_squeue_rows(&String::from_utf8_lossy(&out.stdout), &sep)
                    .map_err(|e| e.to_string())
            };
            match tokio::time::timeout_at(deadline, read).await {
                Ok(Ok(rows)) => report(cluster, rows, None),
                Ok(Err(e)) => report(cluster, Vec::new(), Some(e)),
                Err(_) => report(
                    cluster,
                    Vec::new(),
                    Some(format!("no answer within {:.1}s", timeout.as_secs_f64())),
                ),
            }
        }
    }))
    .await;
    pool.shutdown().await;
    reports
}

/// The watched jobs of `rows`, and the watched ids the queue no longer holds.
fn report(cluster: &SlurmConfig, rows: Vec<SqueueRow>, error: Option<String>) -> ClusterReport {
    let ended_state_unknown = match &error {
        Some(_) => Vec::new(),
        None => cluster
            .jobs
            .iter()
            .filter(|id| !rows.iter().any(|r| &r.id == *id))
            .cloned()
            .collect(),
    };
    ClusterReport {
        name: cluster.name.clone(),
        jobs: rows
            .into_iter()
            .filter(|r| cluster.watches(&r.id, &r.name))
            .map(|r| JobReport::of(r, Utc::now()))
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
    }
}
