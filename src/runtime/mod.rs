//! The runtime: the one consumer of the fleet's readings. It owns the fleet's state, takes in
//! readings and link changes, judges every host once per tick, runs the alert engine with
//! silences and sinks (one rigwatch per state dir delivers: `delivery`), saves what is
//! remembered between runs, and serves `--metrics`. The dashboard and `watch` drive it with
//! [`Runtime::step`] and read its state; `status`, `roster` and the teardown check are the same
//! judgement given one probe (`once`).
//!
//! ```text
//!  live: Pool ─ monitor::Feed ─┐                         ┌─ dashboard (ui)
//!                              ├─> Runtime ── FleetState ┼─ watch (stdout, events file)
//!  demo: demo::Demo (replay) ──┘   judge · alerts · save └─ --metrics
//!  one probe: once::judge ─────────> FleetState ─────────── status · roster · teardown
//! ```
//!
//! Past 400 lines: the runtime's state and its entry points; what each does is in the modules
//! beside it (clusters, pulls, kill, delivery).

mod alerting;
pub mod clusters;
pub mod control;
pub mod delivery;
mod handover;
mod jobs;
pub mod kill;
pub mod once;
mod pulls;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio::time::{Interval, MissedTickBehavior};

use crate::alerts::AlertEvent;
use crate::clocks::Profile;
use crate::cluster::ClusterReading;
use crate::config::FleetConfig;
use crate::demo::Demo;
use crate::fleet::FleetState;
use crate::fleet::memory::{self, FleetMemory};
use crate::metrics::Metrics;
use crate::monitor::feed::{Feed, LinkChanges};
use crate::readings::Update;
use crate::transport::{Helpers, Pool, Session};
use jobs::JobMsg;

pub use alerting::Alerting;
pub use delivery::Sender;

/// How often every host is judged (clocks and ages move with time) and alerts are stepped.
pub const TICK: Duration = Duration::from_secs(1);
/// Cost so far and last-seen are saved this often, so a crash loses at most this much.
const SAVE_EVERY: Duration = Duration::from_secs(60);
/// The demo's boxes report at this period.
pub const DEMO_POLL: Duration = Duration::from_secs(2);

/// Where readings come from. Only the source knows whether this is the demo: everything that
/// differs (no network, no sinks, nothing saved) follows from it.
pub enum Source {
    Live {
        feed: Feed,
        clusters: clusters::Clusters,
        fleet: Arc<FleetConfig>,
    },
    Demo(Demo),
}

/// What one step of the runtime did, for the front end to show.
#[derive(Debug)]
pub enum Step {
    /// Readings or link states arrived and were judged.
    Readings,
    /// The once-a-second tick: every host judged; the alerts that started, cleared or were
    /// news (already sent to the sinks where this process delivers).
    Ticked(Vec<AlertEvent>),
    /// Something the person should read (a sink that failed, memory not saved).
    Notice(String),
    /// A pull another process asked this one to run (`control`) has begun on this host: its
    /// progress, for the front end to show as its own pull's.
    PullBegan {
        host: String,
        progress: Arc<crate::pull::Progress>,
    },
    /// A pull the front end started (or another process asked for) has ended: what it did, in
    /// a line.
    Pulled { host: String, summary: String },
    /// What `K` ended on this host, in a line (recorded in the ledger).
    Killed { host: String, said: String },
    /// The answer to a teardown dialog's effect, for the dialog of this target.
    Teardown {
        target: Box<crate::target::Target>,
        event: crate::teardown::Event,
    },
}

pub struct Runtime {
    pub state: FleetState,
    source: Source,
    updates: Option<mpsc::Receiver<Update>>,
    links: Option<LinkChanges>,
    /// Each cluster's queue, read at its period.
    queues: Option<mpsc::Receiver<ClusterReading>>,
    tick: Interval,
    /// The demo's replay period; None live.
    replay: Option<Interval>,
    save: Interval,
    alerting: Alerting,
    memory: Option<(std::path::PathBuf, FleetMemory)>,
    metrics: Option<Arc<Mutex<Metrics>>>,
    jobs_tx: mpsc::Sender<JobMsg>,
    jobs: mpsc::Receiver<JobMsg>,
    /// Each open teardown dialog's I/O, by target: one from its check to its destroy, so the
    /// hold its final check takes on the target is the one its destroy runs under.
    teardown_ios: jobs::Dialogs,
    /// When the pool's helper shells start; a reload's pool starts them the same way.
    helpers: Helpers,
    /// Pulls other processes ask of this one's connections (`control`), while it serves them.
    control: Option<(control::Serving, mpsc::Receiver<control::Asked>)>,
}

fn interval(every: Duration) -> Interval {
    let mut i = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    i.set_missed_tick_behavior(MissedTickBehavior::Skip);
    i
}

impl Runtime {
    /// The live fleet on `pool`: cost and last-seen taken from the last run (shared with
    /// `status`), alerts as `what` ("rigwatch watch") delivers them.
    pub fn live(pool: Pool, fleet: &FleetConfig, profiles: &[Profile], what: &str) -> Runtime {
        let helpers = pool.helpers();
        let Live {
            state,
            source,
            updates,
            links,
            queues,
            memory,
        } = Live::start(pool, fleet, profiles);
        let (jobs_tx, jobs) = mpsc::channel(64);
        jobs::spawn_verified(fleet.hosts.clone(), jobs_tx.clone());
        jobs::spawn_unfinished(Arc::new(fleet.clone()), &state, jobs_tx.clone());
        Runtime {
            jobs_tx,
            jobs,
            teardown_ios: jobs::Dialogs::default(),
            updates,
            links,
            queues,
            alerting: Alerting::live(fleet, what),
            source,
            state,
            tick: interval(TICK),
            replay: None,
            save: interval(SAVE_EVERY),
            memory,
            metrics: None,
            helpers,
            control: control::serve(&fleet.path),
        }
    }

    /// The demo fleet, `copies` times over: replayed captures, no network, nothing sent or
    /// saved. Its alerts wait `group_wait` so a first look shows them in seconds.
    pub fn demo(copies: usize, group_wait: chrono::Duration, now: DateTime<Utc>) -> Runtime {
        let (demo, state) = Demo::start_sized(now, copies.clamp(1, 100));
        let (jobs_tx, jobs) = mpsc::channel(64);
        Runtime {
            jobs_tx,
            jobs,
            teardown_ios: jobs::Dialogs::default(),
            state,
            source: Source::Demo(demo),
            updates: None,
            links: None,
            queues: None,
            tick: interval(TICK),
            replay: Some(interval(DEMO_POLL)),
            save: interval(SAVE_EVERY),
            alerting: Alerting::demo(group_wait),
            memory: None,
            metrics: None,
            helpers: Helpers::OnDemand,
            control: None,
        }
    }

    /// Serves the fleet's figures: refreshed on every tick.
    pub fn with_metrics(mut self, metrics: Arc<Mutex<Metrics>>) -> Runtime {
        self.metrics = Some(metrics);
        self
    }

    pub fn is_demo(&self) -> bool {
        matches!(self.source, Source::Demo(_))
    }

    /// The fleet's config; None for the demo.
    pub fn fleet(&self) -> Option<&Arc<FleetConfig>> {
        match &self.source {
            Source::Live { fleet, .. } => Some(fleet),
            Source::Demo(_) => None,
        }
    }

    /// The host's pooled session (or a cluster's login node's), when its link is up; never
    /// for the demo.
    pub fn session(&self, host: &str) -> Option<Arc<Session>> {
        match &self.source {
            Source::Live { feed, clusters, .. } => feed
                .pool
                .get(host)
                .and_then(|l| l.session())
                .or_else(|| clusters.session(host)),
            Source::Demo(_) => None,
        }
    }

    /// A host's config, or a `[[slurm]]` cluster's login node (which carries its pull).
    fn host_config(&self, host: &str) -> Option<crate::config::HostConfig> {
        if let Some(h) = self.state.host(host) {
            return Some(h.config.clone());
        }
        let fleet = self.fleet()?;
        let cluster = fleet.slurm.iter().find(|c| c.name == host)?;
        Some(cluster.login.clone())
    }

    /// Who sends the alerts; the front end shows it when it is another process.
    pub fn sender(&self) -> &Sender {
        self.alerting.sender()
    }

    /// `S` on a host: its alerts silenced for two hours, or the silence lifted; in a line.
    pub fn toggle_silence(&mut self, host: &str) -> String {
        self.alerting.toggle_silence(host, Utc::now())
    }

    /// The silences in force, as of the last tick.
    pub fn silenced(&self) -> &BTreeMap<String, DateTime<Utc>> {
        self.alerting.silenced()
    }

    /// Which hosts and clusters another action holds now (a pull, a teardown or a kill, in this
    /// process or another), each with who, in a line; none for the demo, which holds nothing.
    pub fn holders(&self) -> BTreeMap<String, String> {
        let (Some(fleet), Some(dir)) = (self.fleet(), crate::ledger::locks::default_dir()) else {
            return BTreeMap::new();
        };
        let hosts = fleet.hosts.iter().map(|h| &h.name);
        let clusters = fleet.slurm.iter().map(|c| &c.name);
        let kube = fleet.kubernetes.iter().map(|c| &c.name);
        let kaggle = fleet.kaggle.iter().map(|c| &c.name);
        let targets = hosts.chain(clusters).chain(kube).chain(kaggle).map(|name| {
            let words = crate::ledger::locks::target_words(fleet, name);
            (name.clone(), words)
        });
        crate::ledger::locks::holders(&dir, targets)
    }

    /// Waits for the next thing to happen and applies it. Cancel-safe: every await is a
    /// channel receive or a timer, and what is received is applied before returning.
    pub async fn step(&mut self) -> Step {
        tokio::select! {
            Some(update) = recv(self.updates.as_mut()) => {
                let now = Utc::now();
                self.state.observe(&update.host, update.observation, now);
                // A hundred hosts report at about the same moment: take everything already
                // queued, so a front end draws once.
                if let Some(rx) = self.updates.as_mut() {
                    while let Ok(more) = rx.try_recv() {
                        self.state.observe(&more.host, more.observation, now);
                    }
                }
                Step::Readings
            }
            Some(reading) = recv(self.queues.as_mut()) => {
                self.state.observe_cluster(reading, Utc::now());
                Step::Readings
            }
            Some((host, link)) = recv(self.links.as_mut()) => {
                self.state.set_link(&host, link, Utc::now());
                Step::Readings
            }
            Some(why) = self.alerting.failures() => Step::Notice(why),
            Some(msg) = self.jobs.recv() => self.job_done(msg),
            Some(asked) = recv(self.control.as_mut().map(|(_, rx)| rx)) => self.serve_pull(asked),
            _ = tick(self.replay.as_mut()) => {
                if let Source::Demo(demo) = &mut self.source {
                    demo.advance(&mut self.state, Utc::now());
                }
                Step::Readings
            }
            _ = self.save.tick(), if self.memory.is_some() => match self.save_memory() {
                Ok(()) => Step::Readings,
                Err(why) => Step::Notice(why),
            },
            _ = self.tick.tick() => Step::Ticked(self.judge(Utc::now())),
        }
    }

    /// Judges every host at `now` and steps the alerts (sent where this process delivers).
    pub fn judge(&mut self, now: DateTime<Utc>) -> Vec<AlertEvent> {
        self.state.tick(now);
        if let Some(metrics) = &self.metrics
            && let Ok(m) = metrics.lock()
        {
            m.set_from(&self.state, now);
        }
        let fleet = self.fleet().cloned();
        self.alerting.step(&self.state, fleet.as_deref(), now)
    }

    /// One more reading per demo box at once; live streams report on their own.
    pub fn refresh(&mut self, now: DateTime<Utc>) -> &'static str {
        match &mut self.source {
            Source::Demo(demo) => {
                demo.advance(&mut self.state, now);
                "refreshed: one more replayed reading per box"
            }
            Source::Live { .. } => {
                self.state.tick(now);
                "streams are live: every box reports each period; links reconnect on their own"
            }
        }
    }

    /// The digest of everything firing (`watch --digest`), sent where this process delivers.
    pub fn digest(&mut self, now: DateTime<Utc>) -> Option<AlertEvent> {
        let fleet = self.fleet().cloned();
        self.alerting.digest(&self.state, fleet.as_deref(), now)
    }

    /// Pulls and teardowns other rigwatch processes recorded since the last look.
    pub fn ledger_news(&mut self, now: DateTime<Utc>) -> Vec<AlertEvent> {
        let fleet = self.fleet().cloned();
        self.alerting
            .ledger_news(&self.state, fleet.as_deref(), now)
    }

    /// Cost so far, last seen up, boots and queues written for the next run (and `status`).
    pub fn save_memory(&mut self) -> Result<(), String> {
        let Some((path, memory)) = self.memory.as_mut() else {
            return Ok(());
        };
        self.state.remember(memory);
        memory::save(path, memory).map_err(|e| {
            format!(
                "cost and last-seen not saved to {}: {e}",
                crate::sanitize::line(&path.display().to_string(), 200)
            )
        })?;
        self.alerting.keep();
        Ok(())
    }

    /// A new config (SIGHUP): the old connections end, the new fleet starts from what is
    /// remembered, and alert states carry over (a reload is no reason to fire again).
    pub async fn reload(&mut self, fleet: &FleetConfig, profiles: &[Profile]) {
        let saved = self.save_memory();
        let next = Live::start(Pool::start_with(fleet, self.helpers), fleet, profiles);
        let old = std::mem::replace(&mut self.source, next.source);
        self.state = next.state;
        self.updates = next.updates;
        self.links = next.links;
        self.queues = next.queues;
        self.memory = next.memory;
        // The new fleet's queues get their verified cells, as at start; alerts, the jobs
        // channel and the delivery lock carry over.
        jobs::spawn_verified(fleet.hosts.clone(), self.jobs_tx.clone());
        self.alerting.retime(fleet);
        if let Source::Live { feed, clusters, .. } = old {
            feed.shutdown().await;
            clusters.shutdown().await;
        }
        if let Err(why) = saved {
            self.alerting.report(why);
        }
    }

    /// Saves and says goodbye on every connection; the state for a last look.
    pub async fn shutdown(mut self) -> (FleetState, Result<(), String>) {
        let saved = self.save_memory();
        if let Source::Live { feed, clusters, .. } = self.source {
            feed.shutdown().await;
            clusters.shutdown().await;
        }
        (self.state, saved)
    }
}

/// What a live fleet starts from: its state as the last run left it (cost, last seen, boots,
/// queues), its feed on `pool`, and the memory file it saves to. The same at start and reload.
struct Live {
    state: FleetState,
    source: Source,
    updates: Option<mpsc::Receiver<Update>>,
    links: Option<LinkChanges>,
    queues: Option<mpsc::Receiver<ClusterReading>>,
    memory: Option<(std::path::PathBuf, FleetMemory)>,
}

impl Live {
    fn start(pool: Pool, fleet: &FleetConfig, profiles: &[Profile]) -> Live {
        let mut state = FleetState::new(fleet.hosts.clone(), fleet.thresholds.clone())
            .with_profiles(profiles.to_vec(), fleet.balance)
            .with_poll(fleet.poll);
        let memory = memory::path().map(|p| {
            let m = memory::load(Some(&p));
            (p, m)
        });
        if let Some((_, m)) = &memory {
            state.recall(m);
        }
        let mut feed = Feed::start(pool, fleet);
        let (clusters, queues) = clusters::Clusters::start(fleet);
        Live {
            state,
            updates: feed.updates.take(),
            links: feed.links.take(),
            queues,
            source: Source::Live {
                feed,
                clusters,
                fleet: Arc::new(fleet.clone()),
            },
            memory,
        }
    }
}

/// Receives from a channel the source may not have (the demo has none): never resolves then.
async fn recv<T>(rx: Option<&mut mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn tick(timer: Option<&mut Interval>) {
    match timer {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}
