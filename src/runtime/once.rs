//! The runtime given one probe: `status`, `roster` and the teardown check probe every host once
//! through the pool and put the readings into the same `FleetState` the dashboard and `watch`
//! keep, judged by the same code. One box shows the same run state, signals, clocks and cost
//! whichever front end asks; where one reading is too little (a disk's growth), every front end
//! says so in the same words.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::clocks::Profile;
use crate::config::FleetConfig;
use crate::fleet::FleetState;
use crate::fleet::memory::FleetMemory;
use crate::fleet::queues;
use crate::monitor::{HostProbe, probe_once};
use crate::provider::ProviderReport;
use crate::readings::Observation;
use crate::transport::{LinkState, Pool};

/// What one probe of the fleet brought back, in fleet order.
pub struct Probed {
    pub links: Vec<(String, LinkState)>,
    /// None for a host that did not answer within the timeout.
    pub probes: Vec<Option<HostProbe>>,
    pub providers: Vec<(String, ProviderReport)>,
    /// The `--timeout` the probes ran under, for the message of one that did not answer.
    pub timeout_secs: f64,
}

/// A configured queue that this probe could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    pub host: String,
    pub file: String,
    pub why: String,
    /// Its cells are shown as last read by an earlier run.
    pub remembered: bool,
}

/// The fleet judged from one probe.
pub struct Judged {
    pub state: FleetState,
    /// Per host in fleet order: what could not be read, each naming the host and the probe.
    pub errors: Vec<Vec<String>>,
    pub unread: Vec<Unread>,
    pub taken_at: DateTime<Utc>,
}

/// Probes the fleet once (connections, probes and providers in parallel) and judges it.
pub async fn probe_and_judge(
    fleet: &FleetConfig,
    profiles: &[Profile],
    memory: &FleetMemory,
    verified: BTreeMap<String, BTreeSet<String>>,
    timeout_secs: f64,
) -> Judged {
    let ((links, probes), providers) = tokio::join!(
        probe_fleet(fleet, timeout_secs),
        crate::monitor::providers::ask_all(fleet)
    );
    let probed = Probed {
        links,
        probes,
        providers,
        timeout_secs,
    };
    judge(fleet, profiles, memory, verified, probed, Utc::now())
}

/// Every host probed once, in parallel through the pool: the link states and the probes (None
/// for a host that did not answer within `timeout_secs`). One deadline covers both the
/// connection and the probe: `--timeout T` means the whole wait, not T to connect and T more.
pub async fn probe_fleet(
    fleet: &FleetConfig,
    timeout_secs: f64,
) -> (Vec<(String, LinkState)>, Vec<Option<HostProbe>>) {
    let timeout =
        Duration::try_from_secs_f64(timeout_secs.max(0.1)).unwrap_or(Duration::from_secs(30));
    let deadline = tokio::time::Instant::now() + timeout;
    let pool = Pool::start(fleet);
    let states = pool.settle(timeout).await;
    let probes = futures::future::join_all(fleet.hosts.iter().map(|host| {
        let session = pool.get(&host.name).and_then(|l| l.session());
        async move {
            tokio::time::timeout_at(deadline, probe_once(&session?, host))
                .await
                .ok()
        }
    }))
    .await;
    pool.shutdown().await;
    (states, probes)
}

/// The fleet's state after one probe, judged at `now` as the live runtime judges each tick:
/// what earlier runs remembered (cost, last seen up, last boot, queues) taken in first.
pub fn judge(
    fleet: &FleetConfig,
    profiles: &[Profile],
    memory: &FleetMemory,
    verified: BTreeMap<String, BTreeSet<String>>,
    probed: Probed,
    now: DateTime<Utc>,
) -> Judged {
    let mut state = FleetState::new(fleet.hosts.clone(), fleet.thresholds.clone())
        .with_profiles(profiles.to_vec(), fleet.balance)
        .with_poll(fleet.poll);
    state.recall(memory);
    for (host, report) in probed.providers {
        state.record(&host, Observation::Provider(report), now);
    }
    for (host, link) in probed.links {
        state.set_link(&host, link, now);
    }
    let mut errors = vec![Vec::new(); fleet.hosts.len()];
    let mut unread = Vec::new();
    for ((i, host), probe) in fleet.hosts.iter().enumerate().zip(probed.probes) {
        if let Some(config) = &host.queue {
            let sample = probe
                .as_ref()
                .and_then(|p| p.host.as_ref())
                .map(|r| &r.sample);
            let read = sample.and_then(|s| queues::facts(config, s, &queues::patterns(config)));
            if read.is_none() {
                unread.push(Unread {
                    host: host.name.clone(),
                    file: config.file.clone(),
                    why: match sample {
                        None => "the box did not answer".into(),
                        Some(s) => queues::read_error(s).unwrap_or("not read").to_owned(),
                    },
                    remembered: memory
                        .get(&host.name)
                        .and_then(|m| m.queue.as_ref())
                        .and_then(|q| q.facts(&config.file))
                        .is_some(),
                });
            }
        }
        match probe {
            Some(probe) => {
                state.record(&host.name, Observation::GpuAvailability(probe.gpu), now);
                if let Some(gpus) = probe.gpus {
                    state.record(&host.name, Observation::Gpu(gpus), now);
                }
                if let Some(reading) = probe.host {
                    state.record(&host.name, Observation::Host(Box::new(reading)), now);
                }
                errors[i] = probe.errors;
            }
            None if state.host(&host.name).is_some_and(|h| h.link.is_usable()) => {
                errors[i].push(format!(
                    "{}: probes did not answer within {}s",
                    host.name, probed.timeout_secs
                ));
            }
            None => {}
        }
    }
    for (host, cells) in verified {
        state.set_verified(&host, cells, now);
    }
    state.tick(now);
    Judged {
        state,
        errors,
        unread,
        taken_at: now,
    }
}

impl Judged {
    /// Writes what the next run needs (cost, last seen up, boot, queues) into `memory`. A queue
    /// this probe could not read keeps what an earlier run read.
    pub fn remember(&self, memory: &mut FleetMemory) {
        self.state.remember(memory);
    }

    /// The facts of `host`'s queue: read now, or as an earlier run last read them.
    pub fn queue_facts(&self, host: &str) -> Option<&queues::QueueFacts> {
        self.state.host(host)?.queue.as_ref()?.facts.as_ref()
    }
}
