//! The slow work a front end asks of the runtime, off its loop: pulls, the teardown dialog's
//! effects (run by the one executor, `teardown::execute`, through the live box or the demo's
//! replay), and what the ledger says at start. Each runs as a task and reports back over one
//! channel, which `Runtime::step` reads.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::Utc;
use tokio::sync::mpsc;

use super::Step;
use crate::demo::teardown::DemoIo;
use crate::pull::setup::Source;
use crate::teardown::io_for;

use crate::clocks::Profile;
use crate::config::{FleetConfig, HostConfig, KaggleConfig, KubeConfig, PullConfig};
use crate::fleet::FleetState;
use crate::ledger::Ledger;
use crate::ledger::locks::{self, Act, Busy, Held};
use crate::monitor::verified::{from_ledger, verified_cells};
use crate::pull::kaggle::pull_kernel_and_record;
use crate::pull::{Progress, pull_and_record, pull_job_and_record};
use crate::queue::DoneRule;
use crate::target::Target;
use crate::teardown::{Effect, Event, TeardownIo, execute, unfinished};
use crate::transport::Session;

#[derive(Debug)]
pub enum JobMsg {
    /// The answer to one of the teardown dialog's effects, for the dialog of this host.
    Teardown { target: Target, event: Event },
    Pulled {
        host: String,
        summary: String,
        /// The queue cells this pull brought home verified, when it was recorded.
        verified: Option<BTreeSet<String>>,
    },
    /// The ledger's verified cells per queue host, read once at start.
    Verified(BTreeMap<String, BTreeSet<String>>),
    /// The ledger's last pull and teardown of every member, for the views.
    Records(BTreeMap<String, crate::fleet::Records>),
    /// Something to say (an unfinished destroy found at start).
    Notice(String),
    /// What `K` ended on a host, in a line.
    Killed { host: String, said: String },
}

/// Carries out one of the teardown dialog's effects through `io`, off the event loop.
pub(super) fn spawn_teardown(
    io: Arc<dyn TeardownIo>,
    target: Target,
    effect: Effect,
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let event = execute(io.as_ref(), effect).await;
        let _ = tx.send(JobMsg::Teardown { target, event }).await;
    });
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

pub(super) fn spawn_pull(
    (session, host, spec): (Arc<Session>, HostConfig, PullConfig),
    progress: Arc<Progress>,
    held: Held,
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let mut verified = None;
        let recorded = match ledger() {
            Err(e) => Err(format!("pull {} not started: ledger: {e}", host.name)),
            Ok(mut l) => pull_and_record(&session, &host, &spec, &mut l, progress, &held)
                .await
                .map(|pulled| {
                    // The cells need the files: read back once the pull's own state is gone.
                    let record = host.queue.as_ref().map(|_| l.pull(pulled.id));
                    (pulled, record)
                })
                .map_err(|e| format!("pull {} failed: {e}", host.name)),
        };
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

/// Reads which queue cells the ledger's pulls verified, off the event loop.
pub(super) fn spawn_verified(hosts: Vec<HostConfig>, tx: mpsc::Sender<JobMsg>) {
    if hosts.iter().all(|h| h.queue.is_none()) {
        return;
    }
    tokio::task::spawn_blocking(move || {
        let path = crate::ledger::default_path();
        // An unreadable ledger only costs the "verified" marks; the pull and teardown paths
        // report its errors where they matter.
        if let Ok(cells) = from_ledger(path.as_deref(), &hosts) {
            let _ = tx.blocking_send(JobMsg::Verified(cells));
        }
    });
}

/// The ledger's last pull and teardown of each of `members` (boxes and clusters), read off the
/// async threads (see [`Runtime::read_records`](super::Runtime::read_records)). An
/// unreadable or absent ledger leaves the records as they were.
pub(super) fn spawn_records(members: Vec<String>, tx: mpsc::Sender<JobMsg>) {
    tokio::task::spawn_blocking(move || {
        let Some(path) = crate::ledger::default_path().filter(|p| p.exists()) else {
            return;
        };
        let Ok(ledger) = Ledger::open(&path) else {
            return;
        };
        let records = members
            .into_iter()
            .map(|name| {
                let pull = ledger.latest_pull(&name).ok().flatten();
                let teardowns = ledger.teardowns(Some(&name)).unwrap_or_default();
                let records = crate::fleet::Records::of(pull.as_ref(), &teardowns);
                (name, records)
            })
            .collect();
        let _ = tx.blocking_send(JobMsg::Records(records));
    });
}

/// Destroys rigwatch was stopped in the middle of, said once at start (and what the provider
/// sees now recorded, where it can be asked).
pub(super) fn spawn_unfinished(
    fleet: Arc<FleetConfig>,
    state: &FleetState,
    tx: mpsc::Sender<JobMsg>,
) {
    let profiles: Vec<Profile> = state
        .hosts
        .iter()
        .filter_map(|h| state.profile(&h.config.profile).cloned())
        .collect();
    tokio::spawn(async move {
        let Some(path) = crate::ledger::default_path() else {
            return;
        };
        let lines = unfinished(&path, Some((&fleet, &profiles))).await;
        if !lines.is_empty() {
            let _ = tx.send(JobMsg::Notice(lines.join(" | "))).await;
        }
    });
}

/// What the runtime does for a front end's slow work: start it, and take its answers back.
impl super::Runtime {
    /// Reads the ledger's records of every member again (off the async threads), for the
    /// views: when the dashboard's loop starts (or resumes after a handover), and after its own
    /// pulls and destroys. `watch` shows no records and never reads them. The demo has no
    /// ledger.
    pub fn read_records(&self) {
        let Some(fleet) = self.fleet() else {
            return;
        };
        let mut members: Vec<String> = fleet.hosts.iter().map(|h| h.name.clone()).collect();
        members.extend(fleet.slurm.iter().map(|c| c.name.clone()));
        members.extend(fleet.kubernetes.iter().map(|c| c.name.clone()));
        members.extend(fleet.kaggle.iter().map(|c| c.name.clone()));
        spawn_records(members, self.jobs_tx.clone());
    }

    pub(super) fn job_done(&mut self, msg: JobMsg) -> Step {
        let now = Utc::now();
        match msg {
            JobMsg::Notice(text) => Step::Notice(text),
            JobMsg::Killed { host, said } => Step::Killed { host, said },
            JobMsg::Teardown { target, event } => {
                if matches!(event, Event::Destroyed(_)) {
                    self.read_records();
                }
                Step::Teardown {
                    target: Box::new(target),
                    event,
                }
            }
            JobMsg::Records(records) => {
                self.state.take_records(records);
                Step::Readings
            }
            JobMsg::Pulled {
                host,
                summary,
                verified,
            } => {
                if let Some(cells) = verified {
                    self.state.set_verified(&host, cells, now);
                }
                self.read_records();
                Step::Pulled { host, summary }
            }
            JobMsg::Verified(by_host) => {
                for (host, cells) in by_host {
                    self.state.set_verified(&host, cells, now);
                }
                Step::Readings
            }
        }
    }

    /// Ends `targets` on `host` (`K`, once the person typed its name); what came of it comes
    /// back as [`Step::Killed`]. Err says why nothing was sent.
    pub fn kill(&self, host: &str, targets: Vec<crate::probe::GpuProcess>) -> Result<(), String> {
        if targets.is_empty() {
            return Err("no process to end".into());
        }
        let Some(session) = self.session(host) else {
            return Err(if self.is_demo() {
                "the demo's boxes are replays: nothing was sent, nothing ended".into()
            } else {
                "the link is down: nothing was sent".into()
            });
        };
        super::kill::spawn(session, host.to_string(), targets, self.jobs_tx.clone());
        Ok(())
    }

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
        let progress = Arc::new(Progress::default());
        let job = match setup.source {
            Source::Member(host) => {
                let Some(session) = self.session(&host.name) else {
                    return Err(
                        "the link is down; it resumes from the .part files once it is back".into(),
                    );
                };
                let held = hold(&setup.key, &setup.what)?;
                let from = (session, host.clone(), setup.spec.clone());
                spawn_pull(from, Arc::clone(&progress), held, self.jobs_tx.clone());
                None
            }
            Source::Job(cluster, job) => Some((JobSource::Kube(cluster.clone()), job)),
            Source::Kaggle(member, kernel) => Some((JobSource::Kaggle(member.clone()), kernel)),
        };
        if let Some((source, job)) = job {
            let held = hold(&setup.key, &setup.what)?;
            let from = (source, job.to_string(), setup.spec.clone());
            spawn_job_pull(from, (Arc::clone(&progress), held), self.jobs_tx.clone());
        }
        Ok(progress)
    }

    /// Opens `target`'s teardown: its first effects go through [`Runtime::teardown`]. Err says
    /// why it cannot be opened (the demo's clusters are replays; no such member).
    pub fn open_teardown(&self, target: &Target, effects: Vec<Effect>) -> Result<(), String> {
        self.teardown_io(target)?;
        self.teardown(target, effects);
        Ok(())
    }

    /// Carries out a teardown dialog's effects for `target`, each as its own task, through the
    /// I/O [`crate::teardown::io_for`] builds (or the demo's replay: the one place the two are
    /// told apart for a teardown); each answer comes back as [`Step::Teardown`]. A check
    /// starts the dialog's I/O afresh; the final check and the destroy after it share one (and
    /// its hold on the target).
    pub fn teardown(&self, target: &Target, effects: Vec<Effect>) {
        if effects.is_empty() {
            return;
        }
        let fresh = effects.iter().any(|e| matches!(e, Effect::Check { .. }));
        let mut ios = self
            .teardown_ios
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let io = match ios.get(target) {
            Some(io) if !fresh => Arc::clone(io),
            _ => {
                let Ok(io) = self.teardown_io(target) else {
                    return;
                };
                ios.insert(target.clone(), Arc::clone(&io));
                io
            }
        };
        for effect in effects {
            spawn_teardown(
                Arc::clone(&io),
                target.clone(),
                effect,
                self.jobs_tx.clone(),
            );
        }
    }

    /// `target`'s teardown dialog was closed: its I/O (and the hold its final check took)
    /// goes, once no effect of it is still running.
    pub fn close_teardown(&self, target: &Target) {
        let mut ios = self
            .teardown_ios
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ios.remove(target);
    }

    /// The I/O of `target`'s teardown dialog, or the demo's replay of a box's.
    fn teardown_io(&self, target: &Target) -> Result<Arc<dyn TeardownIo>, String> {
        if let Some(fleet) = self.fleet() {
            let session = self.session(target.member());
            let ledger = crate::ledger::default_path();
            return io_for(target, fleet, session, &self.state.profiles, ledger);
        }
        let Target::Box(host) = target else {
            return Err(
                "the demo's clusters are replays: on a live cluster T ends the job \
                        (scancel, kubectl delete), through the same guard"
                    .into(),
            );
        };
        let config = self
            .host_config(host)
            .ok_or_else(|| format!("{host} is not a box of the demo fleet"))?;
        let profile = self.state.profile(&config.profile).cloned();
        Ok(Arc::new(DemoIo {
            host: config,
            profile,
        }))
    }
}

/// Each open teardown dialog's I/O, by target.
#[derive(Default)]
pub(super) struct Dialogs(std::sync::Mutex<BTreeMap<Target, Arc<dyn TeardownIo>>>);
