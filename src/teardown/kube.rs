//! The dialog's I/O for a Kubernetes Job: the same guard as a box's. The check is the pull's
//! currentness read in the Job's running pod through `kubectl exec` (`pull::check_job`, the
//! same listing and re-hash code as over SSH); the destroy is `kubectl delete job` with
//! propagation Background, through the one destroy path's steps: the intent recorded first,
//! the delete once, then kubectl asked until the Job and all its pods are gone (else NOT
//! confirmed), and the outcome recorded.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::Utc;
use futures::FutureExt;
use futures::future::BoxFuture;

use super::confirm::{Seen, until_ended};
use super::describe::{Description, describe};
use super::destroy::{Acted, DestroyReport, recorded};
use super::facts::{Finished, PlanLooks, RunLooks};
use super::hold::Hold;
use super::io::{CheckFound, TeardownIo};
use super::plan::{Method, TeardownPlan};
use crate::config::{FleetConfig, KubeConfig};
use crate::ledger::{DestroyOutcome, PullRecord, TeardownIntent};
use crate::pull::{Currentness, Depth, check_job};
use crate::transport::kubectl::{delete_job, job_exists, pods_left};

/// How long one kubectl read may take while confirming.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub struct KubeIo {
    pub cluster: KubeConfig,
    /// The Job, by its name (checked before it reaches kubectl).
    pub job: String,
    /// For the teardown tuning (destroy timeout, confirm window).
    pub fleet: Arc<FleetConfig>,
    /// None without a state dir: nothing is pulled on record, and no destroy can be recorded.
    pub ledger: Option<PathBuf>,
    /// The cluster held from the final check through the delete (`hold`): its Jobs share
    /// its copy at home.
    pub hold: Hold,
}

impl KubeIo {
    /// The I/O for deleting `job` on `cluster`, holding nothing yet.
    pub fn new(
        cluster: KubeConfig,
        job: String,
        fleet: Arc<FleetConfig>,
        ledger: Option<PathBuf>,
    ) -> KubeIo {
        let hold = Hold::new(&cluster.name, format!("Job {job} on {}", cluster.name));
        KubeIo {
            cluster,
            job,
            fleet,
            ledger,
            hold,
        }
    }

    async fn look(&self, depth: Depth) -> (Option<PullRecord>, Currentness) {
        match super::live::last_pull(self.ledger.as_deref(), &self.cluster.name, Some(&self.job))
            .await
        {
            Ok(last) => {
                let seen = check_job(&self.cluster, &self.job, last.as_ref(), depth).await;
                (last, seen)
            }
            Err(why) => (None, Currentness::NotCurrent(vec![why])),
        }
    }

    /// The command as shown and recorded: the arguments kubectl gets, joined.
    fn command(&self) -> String {
        crate::transport::kubectl::delete_job_command(&self.cluster, &self.job)
    }

    fn plan(&self) -> TeardownPlan {
        TeardownPlan {
            host: self.cluster.name.clone(),
            target: crate::target::Target::job(
                &self.cluster.name,
                crate::cluster::Scheduler::Kubernetes,
                &self.job,
            ),
            platform: "Kubernetes Job".into(),
            instance_id: Some(self.job.clone()),
            method: Method::Command {
                command: self.command(),
            },
            destroyed: vec![
                format!("Job {} and its pods", self.job),
                "their containers' files and emptyDir volumes".into(),
            ],
            survives: vec![
                "PersistentVolumeClaims".into(),
                "the cluster and its other Jobs".into(),
            ],
            reversible: false,
            still_bills: "the cluster's nodes, if they stay up: the Job's GPUs are freed for \
                          other pods"
                .into(),
            stops_per_hour: None,
            currency: String::new(),
        }
    }

    /// Asks kubectl until the Job and every pod of it are gone, or the confirm window passed.
    async fn gone(&self) -> (DestroyOutcome, String) {
        let tuning = &self.fleet.teardown;
        let claim = "kubectl delete exited 0";
        let job = self.job.as_str();
        let cluster = &self.cluster;
        until_ended(
            tuning,
            claim,
            ": they may still hold their GPUs",
            move || async move {
                let pods = pods_left(cluster, job, READ_TIMEOUT).await;
                let exists = job_exists(cluster, job, READ_TIMEOUT).await;
                match (pods, exists) {
                    (Ok(0), Ok(false)) => Seen::Ended(format!(
                        "kubectl shows Job {job} and all its pods gone at {}",
                        Utc::now().format("%H:%M:%S UTC")
                    )),
                    (Err(e), _) | (_, Err(e)) => {
                        Seen::NotYet(format!("kubectl could not be asked ({e})"))
                    }
                    (Ok(n), exists) => Seen::NotYet(format!(
                        "{n} pod(s) of Job {job} still exist{}",
                        if exists == Ok(true) {
                            ", and the Job itself"
                        } else {
                            ""
                        }
                    )),
                }
            },
        )
        .await
    }

    async fn destroy_job(&self, pull_id: i64) -> DestroyReport {
        let refused = |why: String| DestroyReport {
            command: None,
            output: Vec::new(),
            outcome: Err(why),
            recorded: Err("nothing ran, so nothing was recorded".into()),
        };
        let Some(ledger) = &self.ledger else {
            return refused("no state dir for the ledger, so the intent cannot be recorded".into());
        };
        if let Err(who) = self.hold.for_destroy() {
            return refused(who);
        }
        let command = crate::sanitize::mask_secrets(&self.command());
        let intent = TeardownIntent {
            at: Utc::now(),
            host: self.cluster.name.clone(),
            instance_id: Some(self.job.clone()),
            command: Some(command.clone()),
            pull_id,
            pid: std::process::id(),
        };
        let act = async {
            let timeout = self.fleet.teardown.destroy_timeout;
            match delete_job(&self.cluster, &self.job, timeout).await {
                Ok(()) => {
                    let (outcome, why) = self.gone().await;
                    Acted {
                        exit_status: Some(0),
                        output: String::new(),
                        outcome,
                        why,
                    }
                }
                Err(e) => Acted {
                    exit_status: None,
                    output: e.to_string(),
                    outcome: DestroyOutcome::Failed,
                    why: format!("{e}; the Job may still run and hold its GPUs"),
                },
            }
        };
        let report = recorded(ledger, intent, act).await;
        self.hold.release();
        report
    }
}

impl TeardownIo for KubeIo {
    fn check(&self, run: RunLooks) -> BoxFuture<'_, CheckFound> {
        async move {
            let (last, currentness) = match self.hold.other() {
                Some(who) => {
                    let ledger = self.ledger.as_deref();
                    let last = super::live::last_pull(ledger, &self.cluster.name, Some(&self.job));
                    (last.await.ok().flatten(), super::live::busy(who))
                }
                None => self.look(Depth::Stat).await,
            };
            let words: Description = describe(
                &self.plan(),
                last.as_ref(),
                run,
                self.fleet.teardown.final_check,
            );
            CheckFound {
                words,
                plan: PlanLooks::Runs,
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
                Err(who) => super::live::busy(who),
            }
        }
        .boxed()
    }

    fn destroy(&self, pull_id: i64) -> BoxFuture<'_, Finished> {
        async move { Finished::from(self.destroy_job(pull_id).await) }.boxed()
    }
}
