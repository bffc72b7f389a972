//! The dashboard's slow work, off the event loop: pulls, the teardown check, the destroy. Each
//! runs as a task on the host's pooled session and reports back over one channel.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::clocks::Profile;
use crate::config::{FleetConfig, HostConfig};
use crate::fleet::FleetState;
use crate::ledger::DestroyOutcome;
use crate::ledger::{Ledger, PullRecord};
use crate::monitor::verified::{from_ledger, verified_cells};
use crate::pull::{Currentness, Depth, Progress, check_host, pull_and_record};
use crate::queue::DoneRule;
use crate::sanitize::mask_secrets;
use crate::teardown::{
    Confirming, Description, DestroyReport, Method, PlanLooks, RunLooks, describe, destroy, plan,
    plan_looks, unfinished,
};
use crate::transport::Session;

#[derive(Debug)]
pub enum JobMsg {
    Checked {
        host: String,
        opening: u64,
        words: Description,
        plan: PlanLooks,
        currentness: Currentness,
    },
    /// The look taken after the last confirmation.
    FinalChecked {
        host: String,
        opening: u64,
        currentness: Currentness,
    },
    Pulled {
        host: String,
        summary: String,
        /// The queue cells this pull brought home verified, when it was recorded.
        verified: Option<BTreeSet<String>>,
    },
    /// The ledger's verified cells per queue host, read once at start.
    Verified(BTreeMap<String, BTreeSet<String>>),
    /// The destroy's report: what it printed, then its last line (the outcome, why, and where
    /// it is recorded); the outcome is None when it was refused and nothing ran.
    Destroyed {
        host: String,
        outcome: Option<DestroyOutcome>,
        output: Vec<String>,
        last: String,
    },
    /// Something to say in the status bar (an alert that could not be delivered).
    Notice(String),
}

/// What a teardown job needs beyond the host: its profile, and the fleet for the provider CLIs
/// and the ssh config (None in the demo, whose boxes are replays).
#[derive(Clone)]
pub struct TeardownCtx {
    pub host: HostConfig,
    pub profile: Option<Profile>,
    pub fleet: Option<Arc<FleetConfig>>,
}

fn ledger() -> Result<Ledger, String> {
    let path = crate::ledger::default_path().ok_or("no state dir for the ledger")?;
    Ledger::open(&path).map_err(|e| e.to_string())
}

fn last_pull(host: &str) -> Option<PullRecord> {
    ledger().ok()?.latest_pull(host).ok().flatten()
}

/// The modal's check: the pull against a fresh listing, and whether the destroy can run at all.
pub fn spawn_check(
    session: Option<Arc<Session>>,
    job: TeardownCtx,
    opening: u64,
    run: RunLooks,
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let host = &job.host;
        let (words, plan, currentness) = match (&job.profile, &job.fleet) {
            (_, None) => demo_check(&job, run, chrono::Utc::now()),
            (Some(p), Some(fleet)) => {
                let last = last_pull(&host.name);
                let currentness =
                    check_host(session.as_deref(), host, last.as_ref(), Depth::Stat).await;
                let plan = plan(host, p, &fleet.providers);
                let looks = plan_looks(&plan, host, p, fleet).await;
                (describe(&plan, last.as_ref(), run), looks, currentness)
            }
            (None, Some(_)) => {
                let last = last_pull(&host.name);
                let currentness =
                    check_host(session.as_deref(), host, last.as_ref(), Depth::Stat).await;
                let why = format!("unknown platform profile {}", host.profile);
                (Description::default(), PlanLooks::Blocked(why), currentness)
            }
        };
        let _ = tx
            .send(JobMsg::Checked {
                host: host.name.clone(),
                opening,
                words,
                plan,
                currentness,
            })
            .await;
    });
}

/// The demo's check, taken at once: the demo's record of pulls instead of the ledger, the
/// profile's plan without looking for its program. The demo walks the same guard; its destroy
/// step runs nothing (see spawn_destroy).
pub fn demo_check(
    job: &TeardownCtx,
    run: RunLooks,
    now: chrono::DateTime<chrono::Utc>,
) -> (Description, PlanLooks, Currentness) {
    let (last, currentness) = crate::demo::teardown::check(&job.host.name, now);
    let Some(profile) = &job.profile else {
        let why = format!("unknown platform profile {}", job.host.profile);
        return (Description::default(), PlanLooks::Blocked(why), currentness);
    };
    let plan = plan(&job.host, profile, &Default::default());
    let looks = match &plan.method {
        Method::Blocked { why } => PlanLooks::Blocked(why.clone()),
        Method::Manual { .. } => PlanLooks::ByHand,
        Method::Command { .. } => PlanLooks::Runs,
    };
    (describe(&plan, last.as_ref(), run), looks, currentness)
}

/// The guard's last look, after the last confirmation.
pub fn spawn_final_check(
    session: Option<Arc<Session>>,
    host: HostConfig,
    opening: u64,
    demo: bool,
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let currentness = if demo {
            crate::demo::teardown::check(&host.name, chrono::Utc::now()).1
        } else {
            let last = last_pull(&host.name);
            check_host(session.as_deref(), &host, last.as_ref(), Depth::Content).await
        };
        let _ = tx
            .send(JobMsg::FinalChecked {
                host: host.name,
                opening,
                currentness,
            })
            .await;
    });
}

pub fn spawn_pull(
    session: Arc<Session>,
    host: HostConfig,
    progress: Arc<Progress>,
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let mut verified = None;
        let summary = match &host.pull {
            None => format!("{}: no [host.pull] paths in fleet.toml", host.name),
            Some(spec) => {
                let recorded = match ledger() {
                    Err(e) => Err(format!("pull {} not started: ledger: {e}", host.name)),
                    Ok(mut l) => pull_and_record(&session, &host, spec, &mut l, progress)
                        .await
                        .map_err(|e| format!("pull {} failed: {e}", host.name)),
                };
                match recorded {
                    Err(e) => e,
                    Ok(record) => {
                        let good = record.files.iter().filter(|f| f.is_good()).count();
                        if let Some(queue) = &host.queue {
                            verified = Some(verified_cells(
                                &record,
                                &queue.final_dir,
                                &DoneRule::default(),
                            ));
                        }
                        format!(
                            "pull #{} of {}: {good}/{} files hashed and verified{}",
                            record.id,
                            crate::sanitize::line(&host.name, 80),
                            record.files.len(),
                            if record.unmatched.is_empty() {
                                String::new()
                            } else {
                                format!("; {} paths matched nothing", record.unmatched.len())
                            }
                        )
                    }
                }
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
pub fn spawn_verified(hosts: Vec<HostConfig>, tx: mpsc::Sender<JobMsg>) {
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

const DEMO_SAYS: &str = "demo: nothing is destroyed and nothing is recorded";

pub fn spawn_destroy(job: TeardownCtx, pull_id: i64, tx: mpsc::Sender<JobMsg>) {
    tokio::spawn(async move {
        let host = job.host;
        let Some(profile) = job.profile else {
            return;
        };
        // The demo has no fleet, so no provider programs and no way to run anything: it says
        // what a real box would have run, and that nothing was.
        let Some(fleet) = job.fleet else {
            let method = plan(&host, &profile, &Default::default()).method;
            let would = match &method {
                Method::Command { command } => {
                    format!(
                        "on a real box rigwatch would now run: {}",
                        mask_secrets(command)
                    )
                }
                _ => "on a real box you would destroy it at the provider now".to_string(),
            };
            let _ = tx
                .send(JobMsg::Destroyed {
                    host: host.name,
                    outcome: None,
                    output: vec![DEMO_SAYS.into(), would],
                    last: DEMO_SAYS.into(),
                })
                .await;
            return;
        };
        let method = plan(&host, &profile, &fleet.providers).method;
        let report = match crate::ledger::default_path() {
            Some(path) => {
                let confirming = Confirming::for_host(&profile, &fleet);
                destroy(&host, &method, pull_id, &path, &confirming).await
            }
            None => DestroyReport {
                command: None,
                output: Vec::new(),
                outcome: Err(
                    "no state dir for the ledger, so the intent cannot be recorded".into(),
                ),
                recorded: Err("nothing ran".into()),
            },
        };
        let _ = tx
            .send(JobMsg::Destroyed {
                host: host.name,
                outcome: report.word(),
                last: report.last_line(),
                output: report.output,
            })
            .await;
    });
}

/// Destroys rigwatch was stopped in the middle of, said once at start (and what the provider
/// sees now recorded, where it can be asked).
pub fn spawn_unfinished(fleet: Arc<FleetConfig>, state: &FleetState, tx: mpsc::Sender<JobMsg>) {
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
