//! After a cluster job's `scancel`: exit 0 proves nothing (`scancel` on a job already done or
//! purged exits 0 silently), so the queue is read through the login node until it shows the job
//! in an end state. A job that left the queue before its end state was seen, or still shows as
//! live when the confirm window ends, is NOT confirmed.

use chrono::Utc;

use super::confirm::{Seen, until_ended};
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
    let job = line(job, 40);
    let job = job.as_str();
    until_ended(tuning, claim, "", move || async move {
        let reading = crate::cluster::slurm::read(cluster, Some(session), READ_TIMEOUT).await;
        match (&reading.error, reading.jobs.iter().find(|j| j.id == job)) {
            (Some(e), _) => Seen::NotYet(format!("the queue could not be read ({})", line(e, 200))),
            (None, Some(row)) if row.phase == Phase::Cancelled => Seen::Ended(format!(
                "squeue on {} shows job {job} {} at {}",
                cluster.login.target,
                line(&row.state, 40),
                Utc::now().format("%H:%M:%S UTC")
            )),
            // Over, but not by a cancel: it ended on its own before scancel reached it.
            (None, Some(row)) if row.phase.is_over() && row.phase != Phase::Gone => {
                Seen::Ended(format!(
                    "job {job} had already {} on its own; scancel ended nothing (squeue on {} \
                     at {})",
                    line(&row.state, 40),
                    cluster.login.target,
                    Utc::now().format("%H:%M:%S UTC")
                ))
            }
            (None, Some(row)) => Seen::NotYet(format!(
                "squeue still shows job {job} {}",
                line(&row.state, 40)
            )),
            (None, None) => Seen::NotYet(format!(
                "job {job} is not in the queue: its end state was not seen (purged, or never \
                 this user's): check with sacct or scontrol"
            )),
        }
    })
    .await
}
