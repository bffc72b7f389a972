//! The one place a teardown's I/O is built for a target, for the dashboard's runtime and
//! `rigwatch teardown` alike: a box, and a Slurm job through its cluster's login node, go over
//! that member's pooled session; a Kubernetes Job through the user's kubectl. Neither front end
//! names `LiveIo` or `KubeIo`, so the two cannot drift in what a teardown of a kind reads.

use std::path::PathBuf;
use std::sync::Arc;

use super::io::TeardownIo;
use super::kube::KubeIo;
use super::live::{ClusterJob, LiveIo};
use crate::clocks::Profile;
use crate::clocks::profiles::find;
use crate::cluster::Scheduler;
use crate::config::FleetConfig;
use crate::target::Target;
use crate::transport::Session;

/// The I/O of `target`'s teardown; `session` is the member's (the box's, the Slurm login
/// node's; unused for Kubernetes), None while its link is down (the check then refuses).
/// Err when the fleet has no such member.
pub fn io_for(
    target: &Target,
    fleet: &Arc<FleetConfig>,
    session: Option<Arc<Session>>,
    profiles: &[Profile],
    ledger: Option<PathBuf>,
) -> Result<Arc<dyn TeardownIo>, String> {
    let profile = |name: &str| find(profiles, name).cloned();
    let fleet_of = Arc::clone(fleet);
    let io: Arc<dyn TeardownIo> = match target {
        Target::Box(name) => {
            let host = fleet
                .hosts
                .iter()
                .find(|h| &h.name == name)
                .ok_or_else(|| format!("{name} is not a [[host]] of this fleet"))?;
            let p = profile(&host.profile);
            Arc::new(LiveIo::new(
                session,
                host.clone(),
                p,
                fleet_of,
                ledger,
                None,
            ))
        }
        Target::Job(job) if job.scheduler == Scheduler::Slurm => {
            let cluster = fleet
                .slurm
                .iter()
                .find(|c| c.name == job.cluster)
                .ok_or_else(|| {
                    format!("{} is not a [[slurm]] cluster of this fleet", job.cluster)
                })?;
            let p = profile(&cluster.login.profile);
            let of = Some(ClusterJob {
                cluster: cluster.clone(),
                job: job.id.clone(),
            });
            Arc::new(LiveIo::new(
                session,
                cluster.login.clone(),
                p,
                fleet_of,
                ledger,
                of,
            ))
        }
        Target::Job(job) if job.scheduler == Scheduler::Kaggle => {
            return Err(format!(
                "{target}: {NOTHING_TO_TEAR_DOWN}",
                NOTHING_TO_TEAR_DOWN = crate::cluster::kaggle::NOTHING_TO_TEAR_DOWN
            ));
        }
        Target::Job(job) => {
            let cluster = fleet
                .kubernetes
                .iter()
                .find(|c| c.name == job.cluster)
                .ok_or_else(|| {
                    format!(
                        "{} is not a [[kubernetes]] cluster of this fleet",
                        job.cluster
                    )
                })?;
            Arc::new(KubeIo::new(
                cluster.clone(),
                job.id.clone(),
                fleet_of,
                ledger,
            ))
        }
    };
    Ok(io)
}
