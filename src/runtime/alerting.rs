//! Alerts as every front end sends them: conditions read off the judged state, fired and
//! resolved once each way by the engine, news from the state and the ledger, silences obeyed
//! (a silenced host's events are still returned, marked, and sent nowhere), and delivery by the
//! one rigwatch that holds the state dir's lock.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use super::delivery::{Delivery, Sender};
use crate::alerts::engine::{Engine, Timing};
use crate::alerts::notices::Notices;
use crate::alerts::silences::{self, Silences};
use crate::alerts::{AlertEvent, conditions, saved, sinks};
use crate::config::FleetConfig;
use crate::fleet::FleetState;

/// Failures waiting to be shown; more than this in one burst are dropped (they repeat).
const FAILURES_KEPT: usize = 64;

pub struct Alerting {
    engine: Engine,
    notices: Notices,
    /// None for the demo: it sends nothing and writes nothing.
    delivery: Option<Delivery>,
    sender: Sender,
    silenced: Silences,
    alerts_path: Option<PathBuf>,
    /// Events a process wrote and did not mark sent (killed inside a send): sent once more
    /// by the next step that sends.
    outbox: Vec<AlertEvent>,
    failures_tx: mpsc::Sender<String>,
    failures: mpsc::Receiver<String>,
}

impl Alerting {
    fn new(engine: Engine, delivery: Option<Delivery>) -> Alerting {
        let (failures_tx, failures) = mpsc::channel(FAILURES_KEPT);
        Alerting {
            engine,
            notices: Notices::default(),
            sender: if delivery.is_some() {
                Sender::Unlocked
            } else {
                Sender::Other("nobody: the demo sends no alerts".into())
            },
            delivery,
            silenced: Silences::new(),
            alerts_path: None,
            outbox: Vec::new(),
            failures_tx,
            failures,
        }
    }

    /// A live fleet's alerts: the states, last look and unsent events a previous run saved
    /// taken in, so what was sent is not sent again and what was not is.
    pub fn live(fleet: &FleetConfig, what: &str) -> Alerting {
        let engine = Engine::new(Timing::of(&fleet.alerts));
        let mut alerting = Alerting::new(engine, Some(Delivery::at_state_dir(what)));
        alerting.alerts_path = crate::config::paths::state_dir().map(|d| d.join("alerts.json"));
        alerting.take_saved();
        alerting
    }

    /// Takes in what the last sender saved, in place of what this process holds: at the start,
    /// and when this process becomes the sender (the dashboard after `watch`, or the reverse),
    /// so it goes on from the old sender's alert states, not from what it judged unheard.
    fn take_saved(&mut self) {
        let Some(path) = &self.alerts_path else {
            return;
        };
        let saved = saved::load(path);
        self.engine.restore(saved.tracks);
        self.notices = saved.notices;
        self.outbox = saved.outbox;
    }

    /// Writes the alert states, the last look and `outbox` durably; a failure is reported.
    fn write(&self, outbox: &[AlertEvent]) {
        let Some(path) = self.alerts_path.as_deref() else {
            return;
        };
        let saved = saved::Saved {
            tracks: self.engine.tracks(),
            notices: self.notices.clone(),
            outbox: outbox.to_vec(),
        };
        if let Err(e) = saved::save(path, &saved) {
            self.report(format!("alert states not saved to {}: {e}", path.display()));
        }
    }

    pub fn demo(group_wait: chrono::Duration) -> Alerting {
        Alerting::new(
            Engine::new(Timing {
                group_wait,
                ..Timing::default()
            }),
            None,
        )
    }

    pub fn sender(&self) -> &Sender {
        &self.sender
    }

    pub fn silenced(&self) -> &Silences {
        &self.silenced
    }

    fn sends(&self) -> bool {
        self.delivery.is_some() && matches!(self.sender, Sender::Us | Sender::Unlocked)
    }

    /// The alerts that changed at `now`, sent to the rules that want them where this process
    /// delivers.
    pub fn step(
        &mut self,
        state: &FleetState,
        fleet: Option<&FleetConfig>,
        now: DateTime<Utc>,
    ) -> Vec<AlertEvent> {
        let sent_before = self.sends();
        if let Some(delivery) = self.delivery.as_mut() {
            self.sender = delivery.sender();
            self.silenced = silences::path()
                .map(|p| silences::load(&p, now))
                .unwrap_or_default();
        }
        if !sent_before && self.sends() {
            self.take_saved();
        }
        let clusters: Vec<&str> = fleet.map_or_else(Vec::new, |f| {
            let slurm = f.slurm.iter().map(|c| c.name.as_str());
            slurm
                .chain(f.kubernetes.iter().map(|c| c.name.as_str()))
                .collect()
        });
        let seen = conditions(state, &clusters, now);
        let happened = self.notices.from_state(state, now);
        let mut events: Vec<AlertEvent> = self.engine.step(&seen, now);
        events.extend(happened);
        let mut events = placed(events, state);
        for event in &mut events {
            event.data.silenced = self.silenced.contains_key(&event.host);
        }
        self.send(fleet, &events);
        events
    }

    /// The digest of everything firing.
    pub fn digest(
        &mut self,
        state: &FleetState,
        fleet: Option<&FleetConfig>,
        now: DateTime<Utc>,
    ) -> Option<AlertEvent> {
        let event = self
            .engine
            .digest(now)?
            .placed(state.hosts.iter().map(|h| &h.config));
        self.send(fleet, std::slice::from_ref(&event));
        Some(event)
    }

    /// Pulls and teardowns recorded since the last look. A ledger that does not exist yet is
    /// empty; one that cannot be read is reported and looked at again next time.
    pub fn ledger_news(
        &mut self,
        state: &FleetState,
        fleet: Option<&FleetConfig>,
        now: DateTime<Utc>,
    ) -> Vec<AlertEvent> {
        let Some(path) = crate::ledger::default_path().filter(|_| self.delivery.is_some()) else {
            return Vec::new();
        };
        let read = if path.exists() {
            crate::ledger::Ledger::open(&path)
                .and_then(|l| Ok((l.pulls(None)?, l.teardowns(None)?)))
        } else {
            Ok((Vec::new(), Vec::new()))
        };
        let events = match read {
            Ok((pulls, teardowns)) => {
                placed(self.notices.from_ledger(&pulls, &teardowns, now), state)
            }
            Err(e) => {
                self.report(format!("ledger {} not read: {e}", path.display()));
                Vec::new()
            }
        };
        self.send(fleet, &events);
        events
    }

    /// Sends `events` (and what an earlier process left unsent) to the rules that want them:
    /// written durably first, marked sent (the outbox emptied) as soon as the sinks are
    /// called, so a kill at any moment repeats at most this one send, and loses nothing.
    fn send(&mut self, fleet: Option<&FleetConfig>, events: &[AlertEvent]) {
        let sends = self.sends();
        let Some(fleet) = fleet.filter(|_| sends) else {
            return;
        };
        let mut out = std::mem::take(&mut self.outbox);
        out.extend(events.iter().filter(|e| !e.data.silenced).cloned());
        if out.is_empty() && events.is_empty() {
            return;
        }
        self.write(&out);
        for event in &out {
            let tx = self.failures_tx.clone();
            sinks::dispatch(&fleet.alerts.rules, event, move |why| {
                let _ = tx.try_send(why);
            });
        }
        if !out.is_empty() {
            self.write(&[]);
        }
    }

    /// The alert states saved beside cost and last-seen, by the process that sends.
    pub fn keep(&self) {
        if self.sends() {
            self.write(&self.outbox);
        }
    }

    /// `S`: silences `host` for two hours in the file every rigwatch reads, or lifts its
    /// silence; what happened, in a line. The demo has nothing to silence and writes nothing.
    pub fn toggle_silence(&mut self, host: &str, now: DateTime<Utc>) -> String {
        let Some(path) = silences::path().filter(|_| self.delivery.is_some()) else {
            return "demo: nothing to silence; `rigwatch watch` obeys S on a live fleet".into();
        };
        let mut all = silences::load(&path, now);
        let said = if all.remove(host).is_some() {
            format!("{host}: silence lifted")
        } else {
            let until = now + chrono::Duration::hours(2);
            all.insert(host.to_string(), until);
            format!(
                "{host}: alerts silenced until {} (S again lifts it)",
                until.format("%H:%M UTC")
            )
        };
        let said = match silences::save(&path, &all) {
            Ok(()) => said,
            Err(e) => format!("silence not saved to {}: {e}", path.display()),
        };
        self.silenced = all;
        said
    }

    pub fn retime(&mut self, fleet: &FleetConfig) {
        self.engine.retime(Timing::of(&fleet.alerts));
    }

    pub fn report(&self, why: String) {
        let _ = self.failures_tx.try_send(why);
    }

    /// The next failure to show.
    pub async fn failures(&mut self) -> Option<String> {
        self.failures.recv().await
    }
}

/// Each event with its host's platform, for sinks that route by it.
fn placed(events: Vec<AlertEvent>, state: &FleetState) -> Vec<AlertEvent> {
    events
        .into_iter()
        .map(|e| e.placed(state.hosts.iter().map(|h| &h.config)))
        .collect()
}
