//! The slow work a front end asks of the runtime, off its loop: pulls (started in `pulls`),
//! the teardown dialog's effects (run by the one executor, `teardown::execute`, through the live
//! box or the demo's replay), and what the ledger says at start. Each runs as a task and reports
//! back over one channel, which `Runtime::step` reads.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::Utc;
use tokio::sync::mpsc;

use super::Step;
use crate::demo::teardown::DemoIo;
use crate::teardown::io_for;

use crate::clocks::Profile;
use crate::config::{FleetConfig, HostConfig};
use crate::fleet::FleetState;
use crate::ledger::Ledger;
use crate::monitor::verified::from_ledger;
use crate::target::Target;
use crate::teardown::{Effect, Event, TeardownIo, execute, unfinished};

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
