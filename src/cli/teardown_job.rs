//! `rigwatch teardown CLUSTER --job ID`: a Slurm job's `scancel`, through the same guard, check
//! and prompt as a box. The guard reads the cluster's last pull (`[slurm.pull]`, taken through
//! the login node) against the cluster filesystem; the name typed is the cluster's; `scancel`
//! runs once on the login node; afterwards the queue must show the job ended, or the outcome is
//! recorded as NOT confirmed.
//! On a `[[kubernetes]]` cluster the same guard reads the pull in the Job's running pod
//! (`[kubernetes.pull]`, through `kubectl exec`), and the destroy is `kubectl delete job` with
//! its pods, confirmed only when kubectl shows the Job and every pod of it gone.

use crate::cluster::Scheduler;
use crate::target::Target;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::eyre;

use super::one_host;
use super::teardown::{at_terminal, exit_code};
use crate::clocks::Profile;
use crate::clocks::profiles::find;
use crate::config::slurm::SlurmConfig;
use crate::config::{FleetConfig, KubeConfig};
use crate::teardown::{RunLooks, io_for, unfinished};

pub async fn run(
    fleet: &FleetConfig,
    profiles: &[Profile],
    cluster: &SlurmConfig,
    job: Option<&str>,
) -> color_eyre::Result<ExitCode> {
    let job = job.ok_or_else(|| {
        super::usage(format!(
            "{} is a Slurm cluster: name the job to cancel with --job ID",
            cluster.name
        ))
    })?;
    find(profiles, &cluster.login.profile).ok_or_else(|| {
        eyre!(
            "{}: unknown profile {}",
            cluster.name,
            cluster.login.profile
        )
    })?;
    let ledger_path = crate::ledger::default_path()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME holding the ledger"))?;
    for line in unfinished(&ledger_path, Some((fleet, profiles))).await {
        println!("WARNING: {line}");
    }
    let (pool, session) = one_host::connect(fleet, &cluster.login, Duration::from_secs(30)).await?;
    // The job must be in the queue to be cancelled; a live job asks for its name twice over.
    let reading =
        crate::cluster::slurm::read(cluster, Some(&session), Duration::from_secs(30)).await;
    if let Some(error) = &reading.error {
        pool.shutdown().await;
        return Err(eyre!("{error}"));
    }
    let Some(row) = reading.jobs.iter().find(|j| j.id == job) else {
        pool.shutdown().await;
        return Err(super::usage(format!(
            "job {job:?} is not among {}'s watched jobs in the queue (ended and purged, another \
             user's, or not watched): nothing to cancel",
            cluster.name
        )));
    };
    if row.phase.is_over() {
        pool.shutdown().await;
        return Err(super::usage(format!(
            "job {} on {} has already ended ({}): nothing to cancel",
            row.id,
            cluster.name,
            crate::sanitize::line(&row.summary(), 200)
        )));
    }
    println!(
        "job {} ({}) on {}: {}",
        row.id,
        crate::sanitize::line(&row.name, 80),
        cluster.name,
        crate::sanitize::line(&row.summary(), 300)
    );
    let run = RunLooks::of_phase(row.phase);
    let target = Target::job(&cluster.name, Scheduler::Slurm, &row.id);
    let fleet = Arc::new(fleet.clone());
    let io = io_for(&target, &fleet, Some(session), profiles, Some(ledger_path))
        .map_err(|why| eyre!(why))?;
    let walked = at_terminal(target, run, None, io.as_ref()).await;
    pool.shutdown().await;
    Ok(exit_code(walked?))
}

/// A Kubernetes Job's `kubectl delete`, through the same guard and prompt.
pub async fn run_kube(
    fleet: &FleetConfig,
    cluster: &KubeConfig,
    job: Option<&str>,
) -> color_eyre::Result<ExitCode> {
    let job = job.ok_or_else(|| {
        super::usage(format!(
            "{} is a Kubernetes cluster: name the Job to delete with --job NAME",
            cluster.name
        ))
    })?;
    let ledger_path = crate::ledger::default_path()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME holding the ledger"))?;
    for line in unfinished(&ledger_path, None).await {
        println!("WARNING: {line}");
    }
    let reading = crate::runtime::clusters::read_kubernetes(cluster, Duration::from_secs(30)).await;
    if let Some(error) = &reading.error {
        return Err(eyre!("{}", crate::sanitize::line(error, 400)));
    }
    let Some(row) = reading.jobs.iter().find(|j| j.id == job) else {
        return Err(super::usage(format!(
            "Job {:?} is not among {}'s watched Jobs (deleted, or not matched by its selector): \
             nothing to delete",
            crate::sanitize::line(job, 80),
            cluster.name
        )));
    };
    println!(
        "Job {} on {}: {}",
        crate::sanitize::line(&row.id, 80),
        cluster.name,
        crate::sanitize::line(&row.summary(), 300)
    );
    // A finished Job's pods may still exist and hold nothing, yet its delete goes through the
    // same guard: only a running pod can show the pull is current.
    let run = RunLooks::of_phase(row.phase);
    let target = Target::job(&cluster.name, Scheduler::Kubernetes, &row.id);
    let fleet = Arc::new(fleet.clone());
    let io = io_for(&target, &fleet, None, &[], Some(ledger_path)).map_err(|why| eyre!(why))?;
    Ok(exit_code(
        at_terminal(target, run, None, io.as_ref()).await?,
    ))
}
