//! Signals: what the readings mean, each with a severity and a plain message that says what to
//! do. Pure functions of the history, the link state and `now`; no I/O, no clock.

mod disk;
mod fill;
mod gpu;
pub mod host;
mod link;
mod run;
mod unjudged;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::config::fleet::{HostConfig, Thresholds};
use crate::readings::{BootMark, GpuAvailability, HostHistory};
use crate::transport::LinkState;

pub use disk::{GROWTH_WINDOW_MINUTES, Usage, disk_usage};
pub use fill::{FillConfidence, FillOutlook, fill_outlook};
pub use gpu::{zombie_gpus, zombie_holders};
pub use run::{RunState, run_state};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    Crit,
}

impl Severity {
    /// Its name as scripts read it (the JSON's, a sink's RIGWATCH_SEVERITY): "info", "warn",
    /// "crit".
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Crit => "crit",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "WARN",
            Severity::Crit => "CRIT",
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    ZombieVram,
    PowerCapped,
    Throttled,
    IdleButBilling,
    RunDead,
    RunUnknown,
    Rebooted,
    HungRun,
    StaleCheckpoint,
    DiskBytes,
    DiskInodes,
    DiskFillingUp,
    GpuXid,
    OomKill,
    /// The 5-minute load at or over the CPUs online.
    CpuBound,
    /// RAM in use at or over 90 %.
    RamLow,
    NoGpu,
    ProbeError,
    /// A judgement that needs a whole probe section the box printed too much of.
    NotJudged,
    LinkDown,
    LoginRefused,
    HostKeyRefused,
}

impl SignalKind {
    /// Its name as the JSON and the alerts say it: "zombie_vram", "run_dead".
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }

    /// Signals about reaching the box rather than about what runs on it.
    pub fn is_link(self) -> bool {
        matches!(
            self,
            SignalKind::LinkDown | SignalKind::LoginRefused | SignalKind::HostKeyRefused
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    pub kind: SignalKind,
    pub severity: Severity,
    pub message: String,
}

impl Signal {
    pub fn new(kind: SignalKind, severity: Severity, message: impl Into<String>) -> Self {
        Signal {
            kind,
            severity,
            message: message.into(),
        }
    }
}

/// Everything the signals look at for one host.
pub struct HostFacts<'a> {
    pub host: &'a HostConfig,
    pub link: &'a LinkState,
    pub history: &'a HostHistory,
    pub gpu: &'a GpuAvailability,
    /// The boot seen before the latest reading (from history, or persisted by `status`).
    pub previous_boot: Option<BootMark>,
    /// Whether this box costs money while it sits idle.
    pub bills: bool,
    pub thresholds: &'a Thresholds,
    /// A reading older than this (three poll periods) no longer says what the box does now.
    pub stale_after: chrono::Duration,
    pub now: DateTime<Utc>,
}

/// A reading older than this many poll periods is stale: shown with its age, and the run it
/// describes is unknown.
pub const STALE_PERIODS: u32 = 3;

pub fn stale_after(poll: std::time::Duration) -> chrono::Duration {
    chrono::Duration::from_std(poll * STALE_PERIODS).unwrap_or(chrono::Duration::seconds(6))
}

/// The run's state and every signal for one host, worst first.
pub fn evaluate(facts: &HostFacts<'_>) -> (RunState, Vec<Signal>) {
    let run_state = run::run_state(facts);
    let mut signals = link::link_signals(facts);
    signals.extend(run::run_signals(facts, &run_state));
    signals.extend(gpu::gpu_signals(facts));
    // A zombie is the more specific reading of an idle GPU: say that, not both.
    if !signals.iter().any(|s| s.kind == SignalKind::ZombieVram) {
        signals.extend(gpu::idle_but_billing(facts, &run_state));
    }
    signals.extend(gpu::kernel_signals(facts));
    signals.extend(disk::disk_signals(facts));
    signals.extend(host::host_signals(facts));
    signals.extend(unjudged::unjudged(facts));
    if let Some(latest) = facts.history.latest_host() {
        for error in &latest.sample.errors {
            signals.push(Signal::new(
                SignalKind::ProbeError,
                Severity::Warn,
                format!("probe section {} failed: {}", error.section, error.message),
            ));
        }
    }
    signals.sort_by_key(|s| std::cmp::Reverse(s.severity));
    (run_state, signals)
}

pub(crate) fn minutes(d: chrono::Duration) -> String {
    let secs = d.num_seconds().max(0);
    match secs {
        s if s < 90 => format!("{s}s"),
        s if s < 90 * 60 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        s => format!("{}d{:02}h", s / 86400, (s % 86400) / 3600),
    }
}

#[cfg(test)]
mod tests;
