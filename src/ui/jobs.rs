//! The dashboard's slow work, off the event loop: pulls, the teardown check, the destroy. Each
//! runs as a task on the host's pooled session and reports back over one channel.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::clocks::Profile;
use crate::config::HostConfig;
use crate::ledger::{Ledger, PullRecord};
use crate::monitor::verified::{from_ledger, verified_cells};
use crate::pull::{Currentness, Progress, check_host, pull};
use crate::queue::DoneRule;
use crate::teardown::{RunLooks, carry_out, describe, plan};
use crate::transport::Session;

#[derive(Debug)]
pub enum JobMsg {
    Checked {
        host: String,
        lines: Vec<String>,
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
    Destroyed {
        host: String,
        ok: bool,
        output: Vec<String>,
    },
}

fn ledger() -> Result<Ledger, String> {
    let path = crate::ledger::default_path().ok_or("no state dir for the ledger")?;
    Ledger::open(&path).map_err(|e| e.to_string())
}

fn last_pull(host: &str) -> Option<PullRecord> {
    ledger().ok()?.latest_pull(host).ok().flatten()
}

pub fn spawn_check(
    session: Option<Arc<Session>>,
    host: HostConfig,
    profile: Option<Profile>,
    run: RunLooks,
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let last = last_pull(&host.name);
        let currentness = check_host(session.as_deref(), &host, last.as_ref()).await;
        let lines = match &profile {
            Some(p) => describe(&plan(&host, p), last.as_ref(), run),
            None => vec![format!("unknown platform profile {}", host.profile)],
        };
        let _ = tx
            .send(JobMsg::Checked {
                host: host.name.clone(),
                lines,
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
                let previous = last_pull(&host.name);
                match pull(&session, &host.name, spec, previous.as_ref(), progress).await {
                    Err(e) => format!("pull {} failed: {e}", host.name),
                    Ok(record) => {
                        let good = record.files.iter().filter(|f| f.is_good()).count();
                        let saved = ledger()
                            .and_then(|mut l| l.record_pull(&record).map_err(|e| e.to_string()));
                        if saved.is_ok()
                            && let Some(queue) = &host.queue
                        {
                            verified = Some(verified_cells(
                                &record,
                                &queue.final_dir,
                                &DoneRule::default(),
                            ));
                        }
                        match saved {
                            Ok(id) => format!(
                                "pull #{id} of {}: {good}/{} files hashed and verified{}",
                                host.name,
                                record.files.len(),
                                if record.unmatched.is_empty() {
                                    String::new()
                                } else {
                                    format!("; {} paths matched nothing", record.unmatched.len())
                                }
                            ),
                            Err(e) => format!("pull of {} NOT recorded: {e}", host.name),
                        }
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

pub fn spawn_destroy(host: HostConfig, profile: Profile, pull_id: i64, tx: mpsc::Sender<JobMsg>) {
    tokio::spawn(async move {
        let (record, ok) = carry_out(&host, &plan(&host, &profile).method, pull_id).await;
        let saved = ledger().and_then(|l| l.record_teardown(&record).map_err(|e| e.to_string()));
        let mut output: Vec<String> = record.output.lines().map(String::from).collect();
        if let Err(e) = saved {
            output.push(format!("AUDIT ENTRY NOT WRITTEN: {e}"));
        }
        let _ = tx
            .send(JobMsg::Destroyed {
                host: host.name,
                ok,
                output,
            })
            .await;
    });
}
