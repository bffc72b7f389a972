//! After a cluster job's `scancel`: exit 0 proves nothing (`scancel` on a job already done or
//! purged exits 0 silently), so the queue is read through the login node until it shows the job
//! in an end state. A job that left the queue before its end state was seen, or still shows as
//! live when the confirm window ends, is NOT confirmed.

use chrono::Utc;

use crate::cluster::Phase;
use crate::config::TeardownTuning;
use crate::config::slurm::SlurmConfig;
use crate::ledger::DestroyOutcome;
use crate::sanitize::line;
use crate::transport::Session;

/// How long one read of the queue may take while confirming.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub async fn job_ended(
    cluster: &SlurmConfig,
    session: Option<&Session>,
    job: &str,
    tuning: &TeardownTuning,
    claim: &str,
) -> (DestroyOutcome, String) {
    let unconfirmed = |why: String| (DestroyOutcome::Unconfirmed, format!("{claim}, but {why}"));
    let Some(session) = session else {
        return unconfirmed("the login node is not reachable to read the queue".into());
    };
    let deadline = tokio::time::Instant::now() + tuning.confirm_within;
    let job = line(job, 40);
    loop {
        let reading = crate::cluster::slurm::read(cluster, Some(session), READ_TIMEOUT).await;
        let last = match (&reading.error, reading.jobs.iter().find(|j| j.id == job)) {
            (Some(e), _) => format!("the queue could not be read ({})", line(e, 200)),
            (None, Some(row)) if row.phase == Phase::Cancelled => {
                return (
                    DestroyOutcome::Confirmed,
                    format!(
                        "squeue on {} shows job {job} {} at {}",
                        cluster.login.target,
                        line(&row.state, 40),
                        Utc::now().format("%H:%M:%S UTC")
                    ),
                );
            }
            // Over, but not by a cancel: it ended on its own before scancel reached it.
            (None, Some(row)) if row.phase.is_over() && row.phase != Phase::Gone => {
                return (
                    DestroyOutcome::Confirmed,
                    format!(
                        "job {job} had already {} on its own; scancel ended nothing (squeue on \
                         {} at {})",
                        line(&row.state, 40),
                        cluster.login.target,
                        Utc::now().format("%H:%M:%S UTC")
                    ),
                );
            }
            (None, Some(row)) => format!("squeue still shows job {job} {}", row.state),
            (None, None) => format!(
                "job {job} is not in the queue: its end state was not seen (purged, or never \
                 this user's): check with sacct or scontrol"
            ),
        };
        if tokio::time::Instant::now() + tuning.confirm_every > deadline {
            return unconfirmed(format!(
                "{last} {}s after it",
                tuning.confirm_within.as_secs()
            ));
        }
        tokio::time::sleep(tuning.confirm_every).await;
    }
}
