//! `rigwatch teardown CLUSTER --job ID`: a Slurm job's `scancel`, through the same guard, check
//! and prompt as a box. The guard reads the cluster's last pull (`[slurm.pull]`, taken through
//! the login node) against the cluster filesystem; the name typed is the cluster's; `scancel`
//! runs once on the login node; afterwards the queue must show the job ended, or the outcome is
//! recorded as NOT confirmed.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::eyre;

use super::one_host;
use super::teardown::{OPENING, Terminal, exit_code, walk};
use crate::clocks::Profile;
use crate::clocks::profiles::find;
use crate::cluster::Phase;
use crate::config::FleetConfig;
use crate::config::slurm::SlurmConfig;
use crate::teardown::{ClusterJob, Dialog, Event, LiveIo, RunLooks, unfinished};

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
    let profile = find(profiles, &cluster.login.profile).ok_or_else(|| {
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
    let run = match row.phase {
        Phase::Running | Phase::Ending | Phase::Pending | Phase::Other => RunLooks::Alive,
        _ => RunLooks::Dead,
    };
    let io = LiveIo {
        session: Some(session),
        host: cluster.login.clone(),
        profile: Some(profile.clone()),
        fleet: Arc::new(fleet.clone()),
        ledger: Some(ledger_path),
        cluster: Some(ClusterJob {
            cluster: cluster.clone(),
            job: row.id.clone(),
        }),
    };
    let mut dialog = Dialog::new(&cluster.name, OPENING);
    dialog.handle(Event::Run(run));
    dialog.handle(Event::Queue(None));
    let walked = walk(&mut dialog, &io, &mut Terminal, &mut std::io::stdout()).await;
    pool.shutdown().await;
    Ok(exit_code(walked?))
}
