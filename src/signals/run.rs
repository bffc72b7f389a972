//! Is the run alive? Separate from the link: a dropped link makes the run unknown, never dead.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::{HostFacts, Severity, Signal, SignalKind, minutes};
use crate::fleet::BootMark;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum RunState {
    /// No `run` configured for this host.
    NotConfigured,
    Alive {
        how: String,
    },
    Dead {
        last_seen_alive: Option<DateTime<Utc>>,
    },
    /// The link is down or nothing was read yet: rigwatch does not know.
    Unknown {
        since: Option<DateTime<Utc>>,
        reason: String,
    },
}

impl RunState {
    pub fn word(&self) -> &'static str {
        match self {
            RunState::NotConfigured => "-",
            RunState::Alive { .. } => "alive",
            RunState::Dead { .. } => "DEAD",
            RunState::Unknown { .. } => "unknown",
        }
    }
}

pub fn run_state(f: &HostFacts<'_>) -> RunState {
    let Some(pattern) = f.host.run.as_deref() else {
        return RunState::NotConfigured;
    };
    let latest = f.history.latest_host();
    if !f.link.is_usable() {
        return RunState::Unknown {
            since: latest.map(|r| r.at),
            reason: format!("link {}", f.link.word()),
        };
    }
    let Some(latest) = latest else {
        return RunState::Unknown {
            since: None,
            reason: "no probe reading yet".into(),
        };
    };
    match alive_how(&latest.sample, pattern) {
        Some(how) => RunState::Alive { how },
        None => RunState::Dead {
            last_seen_alive: f
                .history
                .host()
                .rev()
                .find(|r| alive_how(&r.sample, pattern).is_some())
                .map(|r| r.at),
        },
    }
}

fn alive_how(sample: &crate::probe::sample::HostSample, pattern: &str) -> Option<String> {
    let pane = sample
        .tmux_panes
        .iter()
        .find(|p| p.session == pattern && !p.dead);
    if let Some(pane) = pane {
        return Some(format!(
            "tmux session {} ({} pid {})",
            pattern, pane.command, pane.pid
        ));
    }
    let in_tmux = sample
        .tmux_sessions
        .iter()
        .flatten()
        .any(|s| s.name == pattern);
    if in_tmux && sample.tmux_panes.iter().all(|p| p.session != pattern) {
        return Some(format!("tmux session {pattern}"));
    }
    sample.run_processes.first().map(|p| {
        format!(
            "process {} {}",
            p.pid,
            crate::sanitize::line(&p.cmdline, 80)
        )
    })
}

pub fn run_signals(f: &HostFacts<'_>, state: &RunState) -> Vec<Signal> {
    let mut out = Vec::new();
    match state {
        RunState::Dead { last_seen_alive } => {
            let when = last_seen_alive.map_or_else(
                || "not seen alive by rigwatch".into(),
                |t| format!("last seen alive {} ago", minutes(f.now - t)),
            );
            out.push(Signal::new(
                SignalKind::RunDead,
                Severity::Crit,
                format!(
                    "run {:?} is not running: no live tmux session or process matches ({when}). \
                     Check its log, then resume it or pull results and stop the box",
                    f.host.run.as_deref().unwrap_or_default()
                ),
            ));
        }
        RunState::Unknown { since, reason } => {
            let since = since.map_or_else(
                || "not read yet".to_string(),
                |t| format!("unknown since {}", t.format("%H:%M:%S UTC")),
            );
            out.push(Signal::new(
                SignalKind::RunUnknown,
                Severity::Warn,
                format!("run state {since} ({reason}); a dropped link is not a dead run"),
            ));
        }
        _ => {}
    }
    let Some(latest) = f.history.latest_host() else {
        return out;
    };
    if let (Some(before), current) = (&f.previous_boot, BootMark::of(latest)) {
        if let Some(message) = reboot(before, &current) {
            out.push(Signal::new(SignalKind::Rebooted, Severity::Crit, message));
        }
    }
    if matches!(state, RunState::Alive { .. }) {
        if let Some(log) = &latest.sample.log {
            let quiet = f.now - log.modified;
            if quiet > minutes_f(f.thresholds.hung_log_minutes) {
                out.push(Signal::new(
                    SignalKind::HungRun,
                    Severity::Warn,
                    format!("run is alive but its log was last written {} ago: it may be hung; look at the log tail and the GPU", minutes(quiet)),
                ));
            }
        }
    }
    if let Some(ckpt) = &latest.sample.checkpoint {
        let age = f.now - ckpt.modified;
        if age > minutes_f(f.thresholds.stale_ckpt_minutes) {
            out.push(Signal::new(
                SignalKind::StaleCheckpoint,
                Severity::Warn,
                format!(
                    "newest checkpoint {} is {} old: a crash now loses that much work",
                    crate::sanitize::line(ckpt.path.as_deref().unwrap_or("?"), 120),
                    minutes(age)
                ),
            ));
        }
    }
    out
}

fn reboot(before: &BootMark, now: &BootMark) -> Option<String> {
    let id_changed = matches!((&before.boot_id, &now.boot_id), (Some(a), Some(b)) if a != b);
    let went_back =
        matches!((before.uptime_secs, now.uptime_secs), (Some(a), Some(b)) if b + 1.0 < a);
    if !id_changed && !went_back {
        return None;
    }
    let booted = now
        .uptime_secs
        .map(|u| now.at - Duration::milliseconds((u * 1000.0) as i64));
    let when = booted.map_or_else(String::new, |t| {
        format!(" at about {}", t.format("%Y-%m-%d %H:%M UTC"))
    });
    Some(format!(
        "box rebooted{when}: processes started before then are gone, the run is orphaned; \
         check what survived on disk before resuming"
    ))
}

pub(crate) fn minutes_f(m: f64) -> Duration {
    Duration::milliseconds((m.max(0.0) * 60_000.0) as i64)
}
