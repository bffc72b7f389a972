//! One host as the dashboard sees it: its config, link, readings, their judgement, and what it
//! costs. FleetState owns these and re-judges them; this file only answers questions about one.

use chrono::{DateTime, Utc};

use crate::clocks::{Billed, Clock, CostLedger, Profile, Rates, SessionLog, billed, rates};
use crate::config::HostConfig;
use crate::readings::{GpuAvailability, HostHistory};
use crate::signals::{FillOutlook, RunState, Severity, Signal, SignalKind};
use crate::transport::LinkState;

use super::queues::QueueTracker;

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
    pub last_seen_up: Option<DateTime<Utc>>,
    /// Danger clocks, nearest first.
    pub clocks: Vec<Clock>,
    /// Each mount of the latest reading and when it fills, judged once per tick so the
    /// overview's clock and the detail say the same thing.
    pub fill: Vec<(String, FillOutlook)>,
    /// Cost since the box was first seen up; None until then.
    pub ledger: Option<CostLedger>,
    /// None when the host has no queue configured.
    pub queue: Option<QueueTracker>,
    /// What the provider's CLI last said; None where no provider CLI is asked.
    pub provider: Option<crate::provider::ProviderReport>,
    /// Sessions seen this week, for a weekly quota.
    pub sessions: SessionLog,
    /// The boot an earlier run of rigwatch last saw: a reboot between runs is still noticed
    /// when this run has only one reading.
    pub recalled_boot: Option<crate::readings::BootMark>,
}

impl HostState {
    /// Whether what this host shows is not known now: its link is not usable, or its last
    /// reading is older than the stale period for `poll`. The alerts hold such a host's
    /// conditions as they were (stale data resolves nothing) and the views grey it: both ask
    /// here, so they cannot disagree about which hosts are current.
    pub fn is_stale(&self, now: DateTime<Utc>, poll: std::time::Duration) -> bool {
        let period = crate::signals::stale_after(poll);
        !self.link.is_usable() || self.last_reading.is_none_or(|t| now - t > period)
    }

    /// Whether its GPU section has not answered since the start: what that section judges
    /// (zombie, idle, clocks) is not known yet, so the host is not read whole.
    pub fn gpus_unheard(&self) -> bool {
        self.gpu == GpuAvailability::Unknown
    }

    pub fn new(config: HostConfig) -> Self {
        HostState {
            link: LinkState::Connecting { attempt: 0 },
            history: HostHistory::default(),
            gpu: GpuAvailability::Unknown,
            run: RunState::NotConfigured,
            signals: Vec::new(),
            last_error: None,
            last_reading: None,
            last_seen_up: None,
            clocks: Vec::new(),
            fill: Vec::new(),
            ledger: None,
            queue: config.queue.as_ref().map(QueueTracker::new),
            provider: None,
            sessions: SessionLog::default(),
            recalled_boot: None,
            config,
        }
    }

    /// What the provider last reported about the box's state and price.
    pub fn provider_state(&self) -> Option<&crate::provider::ProviderState> {
        self.provider.as_ref().and_then(|p| p.state.as_ref())
    }

    pub fn rates(&self, profile: Option<&Profile>) -> Rates {
        rates(profile, &self.config.billing, self.provider_state())
    }

    /// How this moment is billed: running, idle, stopped (out of sight) or not at all.
    pub fn billed(&self) -> Billed {
        let idle = self
            .signals
            .iter()
            .any(|s| matches!(s.kind, SignalKind::IdleButBilling | SignalKind::ZombieVram));
        billed(
            self.link.is_usable(),
            idle,
            self.provider_state().map(|p| &p.state),
        )
    }

    /// Cost so far and the rate now, with where the rate comes from; None until seen up.
    pub fn cost(&self, profile: Option<&Profile>) -> Option<crate::clocks::CostReport> {
        let ledger = self.ledger.as_ref()?;
        let (rate, billed) = (self.rates(profile), self.billed());
        Some(crate::clocks::CostReport {
            per_hour: rate.now(billed),
            per_hour_from: match billed {
                Billed::Running | Billed::Idle => rate.running_source,
                Billed::Unseen => rate.stopped_source,
                Billed::Gone => crate::clocks::RateSource::Unknown,
            },
            so_far: ledger.spent,
            idle_so_far: ledger.idle_spent,
            since: ledger.first_seen_up,
            currency: (self.config.billing.currency.clone()).unwrap_or_else(|| "USD".into()),
        })
    }

    /// When the box's current boot began, from its uptime.
    pub(super) fn session_start(&self) -> Option<DateTime<Utc>> {
        let r = self.history.latest_host()?;
        let up = chrono::Duration::from_std(r.sample.uptime.as_ref()?.up).ok()?;
        Some(r.at - up)
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
