//! The pulls a front end starts: the target's lock taken (or why not, at once: the dashboard
//! does not wait), then the pull as a task of its own — a box's or a Slurm cluster's over its
//! pooled session, a Kubernetes Job's through kubectl exec, a Kaggle commit's through the CLI —
//! whose end comes back to the runtime as one line for the status bar.

use std::sync::Arc;

use chrono::Utc;
use tokio::sync::mpsc;

use super::control::{self, Asked, Frame};
use super::jobs::JobMsg;
use super::{Runtime, Step};
use crate::config::{HostConfig, KaggleConfig, KubeConfig, PullConfig};
use crate::ledger::Ledger;
use crate::ledger::locks::{self, Act, Busy, Held};
use crate::monitor::verified::verified_cells;
use crate::pull::kaggle::pull_kernel_and_record;
use crate::pull::setup::Source;
use crate::pull::{Progress, pull_and_record, pull_job_and_record};
use crate::queue::DoneRule;
use crate::target::Target;
use crate::transport::Session;

impl Runtime {
    /// Starts a pull of `target`'s results: a box's, a Slurm cluster's (over its login node,
    /// whatever the job), a Kubernetes Job's from its running pod. Its end comes back as
    /// [`Step::Pulled`] for the box or cluster. Err says why not, in the target's words.
    pub fn pull(&self, target: &Target) -> Result<Arc<Progress>, String> {
        let Some(fleet) = self.fleet() else {
            return Err(format!(
                "the demo's {}s are replays: there is nothing to pull",
                target.kind().noun()
            ));
        };
        let setup = crate::pull::setup::setup(fleet, target).map_err(|e| e.to_string())?;
        let (source, job) = match setup.source {
            Source::Member(host) => return self.pull_member(host, &setup, None),
            Source::Job(cluster, job) => (JobSource::Kube(cluster.clone()), job),
            Source::Kaggle(member, kernel) => (JobSource::Kaggle(member.clone()), kernel),
        };
        let held = hold(&setup.key, &setup.what)?;
        let progress = Arc::new(Progress::default());
        let from = (source, job.to_string(), setup.spec.clone());
        spawn_job_pull(from, (Arc::clone(&progress), held), self.jobs_tx.clone());
        Ok(progress)
    }

    /// A box's pull (or a Slurm cluster's, over its login node) on this process's connection,
    /// the target held for it; `told` also gets its progress and end where another process
    /// asked for it (`control`).
    fn pull_member(
        &self,
        host: &HostConfig,
        setup: &crate::pull::setup::Setup<'_>,
        told: Option<mpsc::Sender<Frame>>,
    ) -> Result<Arc<Progress>, String> {
        let Some(session) = self.session(&host.name) else {
            return Err("the link is down; it resumes from the .part files once it is back".into());
        };
        let held = hold(&setup.key, &setup.what)?;
        let progress = Arc::new(Progress::default());
        let from = (session, host.clone(), setup.spec.clone());
        spawn_pull(
            from,
            Arc::clone(&progress),
            held,
            self.jobs_tx.clone(),
            told,
        );
        Ok(progress)
    }

    /// A pull another process asked for over the control socket (`control`): run here as `p`
    /// runs it, on this process's connection, or refused at once (why, for the asker's debug
    /// log), and the asker pulls on a connection of its own.
    pub(super) fn serve_pull(&self, asked: Asked) -> Step {
        let reply = asked.reply.clone();
        match self.start_served(asked) {
            Ok((host, progress)) => Step::PullBegan { host, progress },
            Err(why) => {
                let _ = reply.try_send(Frame::NotHere(why));
                Step::Readings
            }
        }
    }

    fn start_served(&self, asked: Asked) -> Result<(String, Arc<Progress>), String> {
        let fleet = self.fleet().ok_or("the demo serves no pulls")?;
        let target = Target::Box(asked.host);
        let setup = crate::pull::setup::setup(fleet, &target).map_err(|e| e.to_string())?;
        let Source::Member(host) = setup.source else {
            return Err("not a box or a Slurm cluster".into());
        };
        if control::digest(host) != asked.digest {
            return Err("the host is configured otherwise here".into());
        }
        let progress = self.pull_member(host, &setup, Some(asked.reply))?;
        // Its end comes back as the `p` pull's does, under the name it was asked by (a Slurm
        // cluster's, not its login node's).
        Ok((target.member().to_string(), progress))
    }
}

/// A recorded pull in a line, for the status bar: `pull #3 of gpu-1: 2/2 files hashed and
/// verified`.
fn pulled(record: &crate::pull::Pulled, what: &str) -> String {
    format!(
        "pull #{} of {what}: {}/{} files hashed and verified{}",
        record.id,
        record.tally.outcomes[crate::ledger::Outcome::Proven as usize],
        record.tally.files,
        if record.unmatched.is_empty() {
            String::new()
        } else {
            format!("; {} paths matched nothing", record.unmatched.len())
        }
    )
}

/// Where a pull of one job of a member reads from.
enum JobSource {
    /// A Kubernetes Job's running pod.
    Kube(KubeConfig),
    /// A Kaggle kernel's latest commit, through the kaggle CLI.
    Kaggle(KaggleConfig),
}

/// A job's pull (a Kubernetes Job's pod, a Kaggle commit's output), recorded under its
/// member's name.
fn spawn_job_pull(
    (source, job, spec): (JobSource, String, PullConfig),
    (progress, held): (Arc<Progress>, Held),
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let (name, noun) = match &source {
            JobSource::Kube(c) => (c.name.clone(), "Job"),
            JobSource::Kaggle(m) => (m.name.clone(), "commit"),
        };
        let shown = crate::sanitize::line(&name, 80);
        let job_name = crate::sanitize::line(&job, 80);
        let summary = match ledger() {
            Err(e) => format!("pull {shown} --job {job_name} not started: ledger: {e}"),
            Ok(mut l) => {
                let result = match &source {
                    JobSource::Kube(c) => {
                        pull_job_and_record(c, &job, &spec, &mut l, progress, &held).await
                    }
                    JobSource::Kaggle(m) => {
                        pull_kernel_and_record(m, &job, &spec, &mut l, progress, &held).await
                    }
                };
                match result {
                    Err(e) => format!(
                        "pull {shown} --job {job_name} failed: {}",
                        crate::sanitize::line(&e.to_string(), 300)
                    ),
                    Ok(record) => pulled(&record, &format!("{shown} ({noun} {job_name})")),
                }
            }
        };
        let _ = tx
            .send(JobMsg::Pulled {
                host: name,
                summary,
                verified: None,
            })
            .await;
    });
}

/// The target's lock for a pull the dashboard starts: taken now or refused with who holds it
/// (the dashboard does not wait: the user sees why at once and presses p again later).
fn hold(key: &str, what: &str) -> Result<Held, String> {
    let dir = locks::default_dir().ok_or("no state dir to hold the target in")?;
    locks::try_take(&dir, key, Act::Pull, what, Utc::now()).map_err(|busy| match busy {
        Busy::Io { .. } => busy.to_string(),
        _ => format!("not started: {busy}; press p again once it has ended"),
    })
}

fn ledger() -> Result<Ledger, String> {
    let path = crate::ledger::default_path().ok_or("no state dir for the ledger")?;
    Ledger::open(&path).map_err(|e| e.to_string())
}

/// A box's pull as a task of its own; `told`, for a pull another process asked for, gets its
/// progress and its end (`control`).
pub(super) fn spawn_pull(
    (session, host, spec): (Arc<Session>, HostConfig, PullConfig),
    progress: Arc<Progress>,
    held: Held,
    tx: mpsc::Sender<JobMsg>,
    told: Option<mpsc::Sender<Frame>>,
) {
    tokio::spawn(async move {
        let mut verified = None;
        let recorded = match ledger() {
            Err(e) => Err(format!("pull {} not started: ledger: {e}", host.name)),
            Ok(mut l) => {
                let pulling =
                    pull_and_record(&session, &host, &spec, &mut l, progress.clone(), &held);
                match &told {
                    Some(told) => control::reporting(pulling, &progress, told).await,
                    None => pulling.await,
                }
                .map(|pulled| {
                    // The cells need the files: read back once the pull's own state is gone.
                    let record = host.queue.as_ref().map(|_| l.pull(pulled.id));
                    (pulled, record)
                })
                .map_err(|e| format!("pull {} failed: {e}", host.name))
            }
        };
        if let Some(told) = told {
            let frame = match &recorded {
                Ok((pulled, _)) => Frame::Pulled(pulled.into()),
                Err(why) => Frame::Failed(why.clone()),
            };
            let _ = told.send(frame).await;
        }
        let summary = match recorded {
            Err(e) => e,
            Ok((done, record)) => {
                if let (Some(queue), Some(Ok(record))) = (&host.queue, &record) {
                    verified = Some(verified_cells(
                        record,
                        &queue.final_dir,
                        &DoneRule::default(),
                    ));
                }
                pulled(&done, &crate::sanitize::line(&host.name, 80))
            }
        };
        let _ = tx
            .send(JobMsg::Pulled {
                host: host.name,
                summary,
                verified,
            })
            .await;
    });
}
