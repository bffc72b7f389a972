//! The dialog's I/O on a real box, for the dashboard and `rigwatch teardown` alike: the pull
//! checked over the host's pooled session against the ledger's last pull, the plan's readiness
//! asked of the provider, and the one destroy path.

use std::path::PathBuf;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::describe::{Description, describe};
use super::destroy::{Confirming, DestroyReport, destroy, with_ledger};
use super::facts::{Finished, PlanLooks, RunLooks};
use super::hold::Hold;
use super::io::{CheckFound, TeardownIo};
use super::plan::{Method, TeardownPlan, plan};
use super::ready::plan_looks;
use crate::clocks::Profile;
use crate::config::slurm::SlurmConfig;
use crate::config::{FleetConfig, HostConfig};
use crate::ledger::PullRecord;
use crate::pull::remote::shell_quote;
use crate::pull::{Currentness, Depth, NotCurrent, check_host};
use crate::transport::Session;

pub struct LiveIo {
    /// The host's pooled session; None while its link is down (the check then refuses).
    pub session: Option<Arc<Session>>,
    pub host: HostConfig,
    /// None for a profile the fleet names but rigwatch does not know: refused.
    pub profile: Option<Profile>,
    /// For the provider CLIs, the ssh config and the teardown tuning.
    pub fleet: Arc<FleetConfig>,
    /// None without a state dir: nothing is pulled on record, and no destroy can be recorded.
    pub ledger: Option<PathBuf>,
    /// For a cluster job (`host` is then its login node): the cluster, whose login node runs
    /// the `scancel` and whose queue must show the job ended afterwards, and the job.
    pub cluster: Option<ClusterJob>,
    /// The target held from the final check through the destroy (`hold`).
    pub hold: Hold,
}

/// The ledger's last pull of `name` (a host, or a cluster), or of its `job` (a Kubernetes Job,
/// whose pulls are its own); an unreadable ledger is said, not taken for "none".
pub(super) async fn last_pull(
    ledger: Option<&std::path::Path>,
    name: &str,
    job: Option<&str>,
) -> Result<Option<PullRecord>, NotCurrent> {
    let unreadable = |why: String| NotCurrent::Failed {
        path: "the ledger".into(),
        why,
    };
    let path = ledger.ok_or_else(|| unreadable("no state dir holds it".into()))?;
    let (name, job) = (name.to_string(), job.map(String::from));
    with_ledger(path, move |l| match &job {
        Some(job) => l.latest_pull_of(&name, job),
        None => l.latest_pull(&name),
    })
    .await
    .map_err(unreadable)
}

/// Another action holds the target: nothing is judged while it acts.
pub(super) fn busy(who: String) -> Currentness {
    Currentness::NotCurrent(vec![crate::pull::NotCurrent::Busy(who)])
}

/// A Slurm job to cancel. Its results are the cluster's (`[slurm.pull]`, on the shared
/// filesystem that outlives the job), so the pull is not tied to the job as to an instance.
#[derive(Debug, Clone)]
pub struct ClusterJob {
    pub cluster: SlurmConfig,
    pub job: String,
}

/// What one teardown's I/O is about, for its hold: a box, or a job on its cluster.
pub fn target_words(host: &str, cluster: Option<&ClusterJob>) -> String {
    match cluster {
        Some(c) => format!("job {} on {}", c.job, c.cluster.name),
        None => format!("box {host}"),
    }
}

impl LiveIo {
    /// The I/O for `host` (or for `cluster`'s job on its login node `host`), holding nothing yet.
    pub fn new(
        session: Option<Arc<Session>>,
        host: HostConfig,
        profile: Option<Profile>,
        fleet: Arc<FleetConfig>,
        ledger: Option<PathBuf>,
        cluster: Option<ClusterJob>,
    ) -> LiveIo {
        let hold = Hold::new(&host.name, target_words(&host.name, cluster.as_ref()));
        LiveIo {
            session,
            host,
            profile,
            fleet,
            ledger,
            cluster,
            hold,
        }
    }

    async fn look(&self, depth: Depth) -> (Option<PullRecord>, Currentness) {
        match last_pull(self.ledger.as_deref(), &self.host.name, None).await {
            Ok(last) => {
                let seen =
                    check_host(self.session.as_deref(), &self.host, last.as_ref(), depth).await;
                (last, seen)
            }
            Err(why) => (None, Currentness::NotCurrent(vec![why])),
        }
    }

    /// The destroy's plan: a cluster job's is `scancel` on its login node, whatever the
    /// profile's local command says.
    fn plan(&self, profile: &Profile) -> TeardownPlan {
        let mut plan = plan(&self.host, profile, &self.fleet.providers);
        if let Some(c) = &self.cluster {
            plan.target = crate::target::Target::job(
                &c.cluster.name,
                crate::cluster::Scheduler::Slurm,
                &c.job,
            );
            plan.instance_id = Some(c.job.clone());
            plan.method = Method::OnHost {
                command: format!("scancel {}", shell_quote(&c.job)),
            };
        }
        plan
    }

    fn method(&self, profile: &Profile) -> Method {
        self.plan(profile).method
    }

    fn unknown_profile(&self) -> String {
        format!("unknown platform profile {}", self.host.profile)
    }
}

impl TeardownIo for LiveIo {
    fn check(&self, run: RunLooks) -> BoxFuture<'_, CheckFound> {
        async move {
            let (last, currentness) = match self.hold.other() {
                Some(who) => {
                    let last = last_pull(self.ledger.as_deref(), &self.host.name, None).await;
                    (last.ok().flatten(), busy(who))
                }
                None => self.look(Depth::Stat).await,
            };
            let Some(profile) = &self.profile else {
                return CheckFound {
                    words: Description::default(),
                    plan: PlanLooks::Blocked(self.unknown_profile()),
                    currentness,
                };
            };
            let plan = self.plan(profile);
            CheckFound {
                plan: plan_looks(&plan, &self.host, profile, &self.fleet).await,
                words: describe(&plan, last.as_ref(), run, self.fleet.teardown.final_check),
                currentness,
            }
        }
        .boxed()
    }

    fn final_check(&self) -> BoxFuture<'_, Currentness> {
        async move {
            match self.hold.take() {
                Ok(()) => {
                    self.look(Depth::last(self.fleet.teardown.final_check))
                        .await
                        .1
                }
                Err(who) => busy(who),
            }
        }
        .boxed()
    }

    fn destroy(&self, pull_id: i64) -> BoxFuture<'_, Finished> {
        async move {
            let refused = |why: String| DestroyReport {
                command: None,
                output: Vec::new(),
                outcome: Err(why),
                recorded: Err("nothing ran".into()),
            };
            let report = match (&self.profile, &self.ledger) {
                (None, _) => refused(self.unknown_profile()),
                (Some(_), None) => {
                    refused("no state dir for the ledger, so the intent cannot be recorded".into())
                }
                (Some(profile), Some(ledger)) => match self.hold.for_destroy() {
                    Err(who) => refused(who),
                    Ok(holding) => {
                        let method = self.method(profile);
                        let mut confirming = Confirming::for_host(profile, &self.fleet);
                        // The intent and the check afterwards name the job.
                        let mut host = self.host.clone();
                        if let Some(c) = &self.cluster {
                            confirming.cluster = Some(c.cluster.clone());
                            host.instance_id = Some(c.job.clone());
                        }
                        let session = self.session.as_deref();
                        let report = destroy(
                            &host,
                            &method,
                            pull_id,
                            ledger,
                            &confirming,
                            session,
                            holding,
                        )
                        .await;
                        self.hold.release();
                        report
                    }
                },
            };
            Finished::from(report)
        }
        .boxed()
    }
}
