//! The whole fleet as the dashboard sees it: per host its config, link, readings, and the
//! judgement of them (run state and signals), re-judged when something arrives and once a
//! second for the clocks; plus the event history of what changed and when.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use crate::config::HostConfig;
use crate::config::fleet::Thresholds;
use crate::fleet::{GpuAvailability, HostHistory, Observation};
use crate::signals::{HostFacts, RunState, Severity, Signal, SignalKind, evaluate};
use crate::transport::LinkState;

/// Events kept for the alerts pane.
pub const EVENTS_KEPT: usize = 500;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: DateTime<Utc>,
    pub host: String,
    pub severity: Severity,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct HostState {
    pub config: HostConfig,
    pub link: LinkState,
    pub history: HostHistory,
    pub gpu: GpuAvailability,
    pub run: RunState,
    pub signals: Vec<Signal>,
    pub last_error: Option<(DateTime<Utc>, String)>,
    /// When the last reading of any kind arrived: the data's age.
    pub last_reading: Option<DateTime<Utc>>,
}

impl HostState {
    pub fn new(config: HostConfig) -> Self {
        HostState {
            config,
            link: LinkState::Connecting { attempt: 0 },
            history: HostHistory::default(),
            gpu: GpuAvailability::Unknown,
            run: RunState::NotConfigured,
            signals: Vec::new(),
            last_error: None,
            last_reading: None,
        }
    }

    /// The worst severity among this host's signals and its link.
    pub fn worst(&self) -> Option<Severity> {
        let link = match self.link {
            LinkState::Down { .. }
            | LinkState::AuthRefused { .. }
            | LinkState::HostkeyRefused { .. } => Some(Severity::Crit),
            LinkState::Degraded { .. } => Some(Severity::Warn),
            _ => None,
        };
        self.signals.iter().map(|s| s.severity).max().max(link)
    }
}

#[derive(Debug, Clone)]
pub struct FleetState {
    pub hosts: Vec<HostState>,
    pub events: VecDeque<Event>,
    pub thresholds: Thresholds,
}

impl FleetState {
    pub fn new(hosts: Vec<HostConfig>, thresholds: Thresholds) -> Self {
        FleetState {
            hosts: hosts.into_iter().map(HostState::new).collect(),
            events: VecDeque::new(),
            thresholds,
        }
    }

    fn index(&self, host: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.config.name == host)
    }

    fn event(&mut self, at: DateTime<Utc>, host: &str, severity: Severity, text: String) {
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_back();
        }
        self.events.push_front(Event {
            at,
            host: host.to_string(),
            severity,
            text,
        });
    }

    pub fn set_link(&mut self, host: &str, link: LinkState, now: DateTime<Utc>) {
        let Some(i) = self.index(host) else { return };
        let before = self.hosts[i].link.word();
        let after = link.word();
        self.hosts[i].link = link;
        if before != after {
            let severity = match after {
                // A first connection is expected, not news.
                "up" if before == "connecting" => {
                    self.judge_host(i, now);
                    return;
                }
                "up" => Severity::Info,
                "degraded" => Severity::Warn,
                "connecting" => return,
                _ => Severity::Crit,
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
                format!("link {before} → {after}{detail}"),
            );
        }
        self.judge_host(i, now);
    }

    pub fn observe(&mut self, host: &str, observation: Observation, now: DateTime<Utc>) {
        let Some(i) = self.record(host, observation, now) else {
            return;
        };
        self.judge_host(i, now);
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
                h.history.push_host(*reading);
            }
            Observation::ProbeError(e) => h.last_error = Some((now, e)),
        }
        Some(i)
    }

    /// Re-judges every host: signals depend on `now` (idle for how long, checkpoint age).
    pub fn tick(&mut self, now: DateTime<Utc>) {
        for i in 0..self.hosts.len() {
            self.judge_host(i, now);
        }
    }

    fn judge_host(&mut self, i: usize, now: DateTime<Utc>) {
        let h = &self.hosts[i];
        let (run, signals) = evaluate(&HostFacts {
            host: &h.config,
            link: &h.link,
            history: &h.history,
            gpu: &h.gpu,
            previous_boot: h.history.previous_boot(),
            bills: h.config.profile != "local",
            thresholds: &self.thresholds,
            now,
        });
        let new_kinds: Vec<(SignalKind, Severity, String)> = signals
            .iter()
            .filter(|s| {
                !h.signals
                    .iter()
                    .any(|old| old.kind == s.kind && old.severity == s.severity)
            })
            .map(|s| (s.kind, s.severity, s.message.clone()))
            .collect();
        let run_changed = h.run.word() != run.word() && !matches!(h.run, RunState::NotConfigured);
        let (name, old_run) = (h.config.name.clone(), h.run.word());
        let h = &mut self.hosts[i];
        h.run = run;
        h.signals = signals;
        if run_changed {
            let word = h.run.word();
            let severity = if word == "DEAD" {
                Severity::Crit
            } else {
                Severity::Info
            };
            self.event(now, &name, severity, format!("run {old_run} → {word}"));
        }
        for (_, severity, message) in new_kinds {
            if severity > Severity::Info {
                self.event(now, &name, severity, message);
            }
        }
    }
}
