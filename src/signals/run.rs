//! Is the run alive? Separate from the link: a dropped link makes the run unknown, never dead.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::{HostFacts, Severity, Signal, SignalKind, minutes};
use crate::probe::sample::HostSample;
use crate::readings::BootMark;

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
        /// What the probe saw instead of the run.
        why: String,
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
    if f.host.run.is_none() && f.host.run_process.is_none() {
        return RunState::NotConfigured;
    }
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
    // A reading this old says nothing about now: a frozen box looks exactly like its last
    // answer, so the run is unknown, never still alive.
    let age = f.now - latest.at;
    if age > f.stale_after {
        return RunState::Unknown {
            since: Some(latest.at),
            reason: format!("no reading for {}s", age.num_seconds()),
        };
    }
    match look(&latest.sample, f.host) {
        Seen::Alive(how) => RunState::Alive { how },
        Seen::CannotTell(reason) => RunState::Unknown {
            since: Some(latest.at),
            reason,
        },
        Seen::Gone(why) => RunState::Dead {
            last_seen_alive: f
                .history
                .host()
                .rev()
                .find(|r| matches!(look(&r.sample, f.host), Seen::Alive(_)))
                .map(|r| r.at),
            why,
        },
    }
}

/// What one reading says about the run, in words for the detail.
enum Seen {
    Alive(String),
    Gone(String),
    CannotTell(String),
}

/// `run_process` decides when it is set (the process is the run); otherwise `run`'s tmux session,
/// by its exact name, decides: alive while one of its panes runs something other than a shell
/// sitting at its prompt.
fn look(sample: &HostSample, host: &crate::config::HostConfig) -> Seen {
    let session = host.run.as_deref().map(|name| session_look(sample, name));
    if let Some(pattern) = host.run_process.as_deref() {
        let with_session = |text: String| match &session {
            Some(Seen::Alive(s) | Seen::Gone(s) | Seen::CannotTell(s)) => format!("{text}; {s}"),
            None => text,
        };
        return match sample
            .run_processes
            .iter()
            .find(|p| !is_bystander(&p.cmdline))
        {
            Some(p) => Seen::Alive(with_session(format!(
                "process {}: {}",
                p.pid,
                crate::sanitize::line(&p.cmdline, 120)
            ))),
            None => Seen::Gone(with_session(format!(
                "no process matches run_process {pattern:?} (tmux, pagers, editors, ssh and \
                 rigwatch's own probe never count)"
            ))),
        };
    }
    session.unwrap_or_else(|| Seen::CannotTell("no run configured".into()))
}

fn session_look(sample: &HostSample, name: &str) -> Seen {
    if sample.tmux_missing {
        return Seen::CannotTell("tmux is not installed on the box".into());
    }
    let live: Vec<_> = sample.tmux_panes.iter().filter(|p| !p.dead).collect();
    let busy = live
        .iter()
        .find(|p| !is_shell(&p.command) || p.has_children != Some(false));
    match (busy, live.first()) {
        (Some(p), _) => Seen::Alive(format!(
            "tmux session {name}: pane pid {} runs {}",
            p.pid,
            crate::sanitize::line(&p.command, 40)
        )),
        (None, Some(p)) => Seen::Gone(format!(
            "tmux session {name} is at a {} prompt (pid {}): what ran in it has ended",
            crate::sanitize::line(&p.command, 20),
            p.pid
        )),
        (None, None) if sample.tmux_panes.is_empty() => {
            Seen::Gone(format!("no tmux session named exactly {name:?}"))
        }
        (None, None) => Seen::Gone(format!("every pane of tmux session {name} has exited")),
    }
}

/// Shells, as tmux names a pane's foreground program (login shells start with `-`).
fn is_shell(command: &str) -> bool {
    matches!(
        command.trim_start_matches('-'),
        "sh" | "bash" | "zsh" | "fish" | "dash" | "ksh" | "tcsh" | "csh" | "ash"
    )
}

/// Programs whose command line can carry the run's pattern without being the run: a tmux
/// server keeps `new -s train` in its argv after the session ends; pagers and editors open
/// `train.log` or `train.py`; ssh and rigwatch's own probe name what they look at.
const BYSTANDERS: &[&str] = &[
    "tmux",
    "screen",
    "less",
    "more",
    "most",
    "man",
    "vi",
    "vim",
    "nvim",
    "view",
    "vimdiff",
    "nano",
    "pico",
    "emacs",
    "emacsclient",
    "micro",
    "joe",
    "kak",
    "hx",
    "tail",
    "head",
    "cat",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "watch",
    "ssh",
    "sshd",
    "scp",
    "sftp",
    "rsync",
    "mosh-server",
    "pgrep",
    "pkill",
    "ps",
    "top",
    "htop",
    "btop",
    "nvtop",
];

fn is_bystander(cmdline: &str) -> bool {
    let program = cmdline.split_whitespace().next().unwrap_or_default();
    let name = program.rsplit('/').next().unwrap_or(program);
    cmdline.contains("@@rw-") || BYSTANDERS.contains(&name.trim_end_matches(':'))
}

pub fn run_signals(f: &HostFacts<'_>, state: &RunState) -> Vec<Signal> {
    let mut out = Vec::new();
    match state {
        RunState::Dead {
            last_seen_alive,
            why,
        } => {
            let when = last_seen_alive.map_or_else(
                || "not seen alive by rigwatch".into(),
                |t| format!("last seen alive {} ago", minutes(f.now - t)),
            );
            out.push(Signal::new(
                SignalKind::RunDead,
                Severity::Crit,
                format!(
                    "run is not running: {} ({when}). Check its log, then resume it or pull \
                     results and stop the box",
                    crate::sanitize::line(why, 160)
                ),
            ));
        }
        RunState::Unknown { since, reason } => {
            // Never read yet is loading (the first seconds after start), not a warning: the
            // link's own signals say when it will not come.
            let severity = match since {
                Some(_) => Severity::Warn,
                None => Severity::Info,
            };
            let since = since.map_or_else(
                || "not read yet".to_string(),
                |t| format!("unknown since {}", t.format("%H:%M:%S UTC")),
            );
            out.push(Signal::new(
                SignalKind::RunUnknown,
                severity,
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
