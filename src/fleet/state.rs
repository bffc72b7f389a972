//! The whole fleet as the dashboard sees it: per host its config, link, readings, and the
//! judgement of them (run state and signals), re-judged when something arrives and once a
//! second for the clocks; plus the event history of what changed and when.
//!
//! Past 400 lines: every way the fleet's state changes (a link, a reading, a record, the tick)
//! is a method here, so what re-judges a host is in one place.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use crate::clocks::{ClockFacts, CostLedger, Profile, Urgency, clocks};
use crate::config::HostConfig;
use crate::config::fleet::Thresholds;
use crate::queue::Roster;
use crate::readings::{GpuAvailability, Observation};
use crate::signals::{
    FillOutlook, HostFacts, RunState, Severity, SignalKind, evaluate, fill_outlook,
};
use crate::transport::{LinkKind, LinkState};

use super::HostState;
use super::queues::{RosterEntry, presence, roster};

/// Events kept for the alerts pane.
pub const EVENTS_KEPT: usize = 500;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: DateTime<Utc>,
    /// The box, or the cluster, it is about.
    pub host: String,
    /// The cluster's job it is about, where it is about one.
    pub job: Option<String>,
    pub severity: Severity,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct FleetState {
    pub hosts: Vec<HostState>,
    pub events: VecDeque<Event>,
    pub thresholds: Thresholds,
    pub profiles: Vec<Profile>,
    /// The provider account's balance, for the runway clock.
    pub balance: Option<f64>,
    /// Every queue of the fleet reconciled; None when no host has a queue.
    pub roster: Option<Roster>,
    /// The probe's period: three of them without a reading make a host's data stale.
    pub poll: std::time::Duration,
    /// Each cluster's last reading, in the config's order: its jobs are rows like hosts.
    pub clusters: Vec<crate::cluster::ClusterReading>,
    /// What the ledger says about each member (last pull, last teardown), by name.
    pub(super) records: std::collections::BTreeMap<String, super::Records>,
}

impl FleetState {
    pub fn new(hosts: Vec<HostConfig>, thresholds: Thresholds) -> Self {
        FleetState {
            hosts: hosts.into_iter().map(HostState::new).collect(),
            events: VecDeque::new(),
            thresholds,
            profiles: Vec::new(),
            balance: None,
            roster: None,
            poll: std::time::Duration::from_secs(2),
            clusters: Vec::new(),
            records: std::collections::BTreeMap::new(),
        }
    }

    pub fn with_poll(mut self, poll: std::time::Duration) -> Self {
        self.poll = poll;
        self
    }

    fn index(&self, host: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.config.name == host)
    }

    pub fn host(&self, name: &str) -> Option<&HostState> {
        self.hosts.iter().find(|h| h.config.name == name)
    }

    pub(super) fn event(
        &mut self,
        at: DateTime<Utc>,
        host: &str,
        severity: Severity,
        text: String,
    ) {
        self.job_event(at, host, None, severity, text);
    }

    /// An event about `host`, or about one `job` of the cluster `host`.
    pub(super) fn job_event(
        &mut self,
        at: DateTime<Utc>,
        host: &str,
        job: Option<&str>,
        severity: Severity,
        text: String,
    ) {
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_back();
        }
        // Made of readings already cleaned; masked once more here, the one way into the pane.
        self.events.push_front(Event {
            at,
            host: host.to_string(),
            job: job.map(str::to_string),
            severity,
            text: crate::sanitize::mask_secrets(&text),
        });
    }

    pub fn set_link(&mut self, host: &str, link: LinkState, now: DateTime<Utc>) {
        let Some(i) = self.index(host) else { return };
        let before = self.hosts[i].link.kind();
        let after = link.kind();
        self.hosts[i].link = link;
        if before != after {
            let severity = match after {
                // A first connection is expected, not news, except the first ever: then the
                // platform's warnings are, once.
                LinkKind::Up if before == LinkKind::Connecting => {
                    if self.hosts[i].last_seen_up.is_none() {
                        self.first_contact(i, now);
                    }
                    self.judge_host(i, now);
                    return;
                }
                LinkKind::Up => Severity::Info,
                LinkKind::Degraded => Severity::Warn,
                LinkKind::Connecting => return,
                LinkKind::Down | LinkKind::AuthRefused | LinkKind::HostkeyRefused => Severity::Crit,
            };
            let detail = match &self.hosts[i].link {
                LinkState::Down { reason, .. }
                | LinkState::AuthRefused { reason, .. }
                | LinkState::HostkeyRefused { reason, .. }
                | LinkState::Degraded { reason, .. } => {
                    format!(": {}", crate::sanitize::line(reason, 160))
                }
                _ => String::new(),
            };
            self.event(
                now,
                host,
                severity,
                format!("link {} → {}{detail}", before.word(), after.word()),
            );
        }
        self.judge_host(i, now);
    }

    /// The first time rigwatch ever reaches a box: what its platform does silently.
    fn first_contact(&mut self, i: usize, now: DateTime<Utc>) {
        let name = self.hosts[i].config.name.clone();
        let Some(profile) = self.profile(&self.hosts[i].config.profile).cloned() else {
            return;
        };
        for warning in profile.warnings.iter().rev() {
            self.event(
                now,
                &name,
                Severity::Warn,
                format!("first contact, {}: {warning}", profile.title),
            );
        }
    }

    pub fn observe(&mut self, host: &str, observation: Observation, now: DateTime<Utc>) {
        let Some(i) = self.record(host, observation, now) else {
            return;
        };
        self.judge_host(i, now);
        if self.hosts[i].queue.is_some() {
            self.reconcile_queues(now);
        }
    }

    /// Stores an observation without judging it (a backlog; `tick` judges afterwards).
    pub fn record(
        &mut self,
        host: &str,
        observation: Observation,
        now: DateTime<Utc>,
    ) -> Option<usize> {
        let i = self.index(host)?;
        let h = &mut self.hosts[i];
        match observation {
            Observation::Gpu(reading) => {
                h.last_reading = Some(reading.at);
                h.gpu = GpuAvailability::Present;
                h.history.push_gpu(reading);
            }
            Observation::GpuAvailability(gpu) => h.gpu = gpu,
            Observation::Host(reading) => {
                h.last_reading = Some(reading.at);
                if let (Some(tracker), Some(config)) = (h.queue.as_mut(), h.config.queue.as_ref()) {
                    tracker.observe(config, &reading.sample, reading.at);
                }
                h.history.push_host(*reading);
            }
            Observation::ProbeError(e) => h.last_error = Some((now, e)),
            Observation::Provider(report) => h.provider = Some(report),
        }
        Some(i)
    }

    /// The platform profiles and balance the clocks and cost are computed from.
    pub fn with_profiles(mut self, profiles: Vec<Profile>, balance: Option<f64>) -> Self {
        self.profiles = profiles;
        self.balance = balance;
        self
    }

    /// Re-judges every host (signals and clocks depend on `now`) and accrues its cost.
    pub fn tick(&mut self, now: DateTime<Utc>) {
        for i in 0..self.hosts.len() {
            self.accrue(i, now);
            self.judge_host(i, now);
        }
        self.reconcile_queues(now);
        for cluster in &mut self.clusters {
            cluster.judge(now);
        }
    }

    /// Re-reconciles the roster: done on the once-a-second tick, as presence moves with time.
    fn reconcile_queues(&mut self, now: DateTime<Utc>) {
        let entries: Vec<RosterEntry<'_>> = self
            .hosts
            .iter()
            .filter_map(|h| {
                let tracker = h.queue.as_ref()?;
                Some(RosterEntry {
                    host: &h.config.name,
                    presence: presence(
                        &h.link,
                        &h.clocks,
                        h.last_seen_up,
                        h.provider_state().map(|p| &p.state),
                        now,
                    ),
                    facts: tracker.facts.as_ref()?,
                    verified: Some(&tracker.verified),
                })
            })
            .collect();
        self.roster = (!entries.is_empty()).then(|| roster(&entries));
    }

    pub fn profile(&self, name: &str) -> Option<&Profile> {
        crate::clocks::profiles::find(&self.profiles, name)
    }

    /// Hours the balance lasts at the current burn, when a balance is configured.
    pub fn runway_hours(&self) -> Option<f64> {
        let burn = self.burn_per_hour();
        self.balance.filter(|_| burn > 0.0).map(|b| b / burn)
    }

    /// Starts cost accounting for a host as of `since` (the demo's history begins in the past).
    pub fn seen_up_since(&mut self, host: &str, since: DateTime<Utc>) {
        if let Some(i) = self.index(host) {
            self.hosts[i].ledger = Some(CostLedger::start(since));
            self.hosts[i].last_seen_up = Some(since);
        }
    }

    /// The cells of a host's latest pull that came home verified; re-reconciles.
    pub fn set_verified(
        &mut self,
        host: &str,
        cells: std::collections::BTreeSet<String>,
        now: DateTime<Utc>,
    ) {
        let Some(i) = self.index(host) else { return };
        if let Some(tracker) = self.hosts[i].queue.as_mut() {
            tracker.verified = cells;
            self.reconcile_queues(now);
        }
    }

    /// The host's queue in the roster; None without a queue or before it is read.
    pub fn queue_summary(&self, host: &str) -> Option<&crate::queue::HostSummary> {
        self.roster.as_ref()?.hosts.iter().find(|s| s.host == host)
    }

    /// What the fleet bills per hour now: each box at the rate of how it is billed (running,
    /// stopped, or running out of sight where its provider says so). A box never seen up is
    /// not counted: rigwatch does not know it was ever rented.
    pub fn burn_per_hour(&self) -> f64 {
        self.hosts.iter().filter_map(|h| self.rate_of(h)).sum()
    }

    /// What `host` bills per hour now; None for a host never seen up, or without a price.
    pub fn rate_now(&self, host: &str) -> Option<f64> {
        self.host(host).and_then(|h| self.rate_of(h))
    }

    fn rate_of(&self, h: &HostState) -> Option<f64> {
        (h.link.is_usable() || h.last_seen_up.is_some())
            .then(|| h.rates(self.profile(&h.config.profile)).now(h.billed()))
            .flatten()
    }

    fn accrue(&mut self, i: usize, now: DateTime<Utc>) {
        let profile = crate::clocks::profiles::find(&self.profiles, &self.hosts[i].config.profile);
        let quota = profile.is_some_and(|p| p.timers.weekly_gpu_hours.is_some());
        let billed = self.hosts[i].billed();
        let rate = self.hosts[i].rates(profile).now(billed);
        let h = &mut self.hosts[i];
        if h.link.is_usable() {
            h.last_seen_up = Some(now);
            h.ledger.get_or_insert_with(|| CostLedger::start(now));
            if let (true, Some(start)) = (quota, h.session_start()) {
                h.sessions.record(start, now);
            }
        }
        if let Some(ledger) = h.ledger.as_mut() {
            ledger.accrue(now, billed, rate);
        }
    }

    fn judge_host(&mut self, i: usize, now: DateTime<Utc>) {
        let h = &self.hosts[i];
        let (run, signals) = evaluate(&HostFacts {
            host: &h.config,
            link: &h.link,
            history: &h.history,
            gpu: &h.gpu,
            previous_boot: h
                .history
                .previous_boot()
                .or_else(|| h.recalled_boot.clone()),
            // A box of a profile rigwatch does not know is taken to bill, as most do.
            bills: self.profile(&h.config.profile).is_none_or(|p| p.rented),
            thresholds: &self.thresholds,
            stale_after: crate::signals::stale_after(self.poll),
            now,
        });
        // A link's signal is already told by the link's own event, with its reason.
        let new_kinds: Vec<(SignalKind, Severity, String)> = signals
            .iter()
            .filter(|s| !s.kind.is_link())
            .filter(|s| {
                !h.signals
                    .iter()
                    .any(|old| old.kind == s.kind && old.severity == s.severity)
            })
            .map(|s| (s.kind, s.severity, s.message.clone()))
            .collect();
        let run_changed = std::mem::discriminant(&h.run) != std::mem::discriminant(&run)
            && !matches!(h.run, RunState::NotConfigured);
        let (name, old_run) = (h.config.name.clone(), h.run.word());
        let burn = self.burn_per_hour();
        let h = &self.hosts[i];
        let profile = crate::clocks::profiles::find(&self.profiles, &h.config.profile);
        let latest = h.history.latest_host();
        let window = h.history.host_since(
            now,
            chrono::Duration::minutes(crate::signals::GROWTH_WINDOW_MINUTES),
        );
        let fill: Vec<(String, FillOutlook)> = latest.map_or_else(Vec::new, |r| {
            r.sample
                .mounts
                .iter()
                .map(|m| (m.mount.clone(), fill_outlook(&window, &m.mount)))
                .collect()
        });
        let busy_at = h
            .history
            .gpu()
            .rev()
            .find(|r| r.gpus.iter().any(|g| g.util_gpu_pct.is_some_and(|u| u > 2)))
            .map(|r| r.at);
        let clock_list = clocks(&ClockFacts {
            profile,
            billing: &h.config.billing,
            link_up: h.link.is_usable(),
            last_seen_up: h.last_seen_up,
            session_start: h.session_start(),
            last_activity: if matches!(run, RunState::Alive { .. }) {
                Some(now)
            } else {
                busy_at
            },
            time_to_full: fill
                .iter()
                .filter_map(|(_, o)| o.filling())
                .min_by_key(|(_, d, _)| *d),
            checkpoint_age: latest
                .and_then(|r| r.sample.checkpoint.as_ref())
                .map(|c| now - c.modified),
            // The balance runway is the fleet's, shown once in the header, not on every host.
            fleet_burn_per_hour: burn,
            balance: None,
            provider: h.provider_state(),
            slurm: latest.and_then(|r| Some((r.sample.slurm_job.as_ref()?, r.at))),
            week_used: h
                .sessions
                .week_used(now)
                .filter(|_| profile.is_some_and(|p| p.timers.weekly_gpu_hours.is_some())),
            now,
        });
        // A clock that moves to a band with another word (today, soon, fired) is news; within
        // the hour and within ten minutes are both "soon" here (the alerts stage them apart).
        let crossed: Vec<(Severity, String)> = clock_list
            .iter()
            .filter_map(|c| {
                let band = Urgency::of(c);
                let before = self.hosts[i]
                    .clocks
                    .iter()
                    .find(|o| o.kind == c.kind)
                    .map(Urgency::of)?;
                let severity = band.severity()?;
                (before.word() != band.word())
                    .then(|| (severity, format!("clock {}: {}", band.word(), c.message)))
            })
            .collect();
        let h = &mut self.hosts[i];
        h.run = run;
        h.signals = signals;
        h.clocks = clock_list;
        h.fill = fill;
        let (word, dead) = (h.run.word(), matches!(h.run, RunState::Dead { .. }));
        for (severity, text) in crossed {
            self.event(now, &name, severity, text);
        }
        if run_changed {
            let severity = if dead { Severity::Crit } else { Severity::Info };
            self.event(now, &name, severity, format!("run {old_run} → {word}"));
        }
        for (_, severity, message) in new_kinds {
            if severity > Severity::Info {
                self.event(now, &name, severity, message);
            }
        }
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;

#[cfg(test)]
impl FleetState {
    /// For tests of what is judged before a box is read whole: `host`'s link up and a host
    /// reading (no GPUs in it) taken at `at`, its GPUs not heard from.
    pub fn read_without_gpus(&mut self, host: &str, at: DateTime<Utc>) {
        let up = crate::transport::LinkState::Up {
            since: at,
            rtt_ms: 1.0,
            banner: String::new(),
            auth: String::new(),
        };
        if !self.host(host).is_some_and(|h| h.link.is_usable()) {
            self.set_link(host, up, at);
        }
        let reading = crate::readings::HostReading {
            at,
            sample: crate::probe::sample::HostSample::default(),
        };
        self.record(
            host,
            crate::readings::Observation::Host(Box::new(reading)),
            at,
        );
    }
}
