//! What `watch` does with a tick's results: events on stdout and in the events file, sinks,
//! the ledger's news, and what it keeps for its next start.

use std::io::Write as _;
use std::path::Path;

use chrono::Utc;

use crate::alerts::AlertEvent;
use crate::alerts::engine::Engine;
use crate::alerts::notices::Notices;
use crate::alerts::sinks;
use crate::config::FleetConfig;
use crate::monitor::FleetState;

/// A tick that fires every `every`, or never.
pub(super) async fn every(timer: Option<&mut tokio::time::Interval>) {
    match timer {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Pulls and teardowns recorded since the last look. A ledger that does not exist yet is
/// empty; one that cannot be read is said on stderr and looked at again next time.
pub(super) fn ledger_news(notices: &mut Notices, now: chrono::DateTime<Utc>) -> Vec<AlertEvent> {
    let Some(path) = crate::ledger::default_path() else {
        return Vec::new();
    };
    if !path.exists() {
        return notices.from_ledger(&[], &[], now);
    }
    let read =
        crate::ledger::Ledger::open(&path).and_then(|l| Ok((l.pulls(None)?, l.teardowns(None)?)));
    match read {
        Ok((pulls, teardowns)) => notices.from_ledger(&pulls, &teardowns, now),
        Err(e) => {
            eprintln!("rigwatch: ledger {} not read: {e}", path.display());
            Vec::new()
        }
    }
}

pub(super) async fn recv<T>(rx: Option<&mut tokio::sync::mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

pub(super) async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The alert states, saved beside cost and last-seen (see Engine::save).
pub(super) fn keep_alerts(engine: &Engine) {
    let Some(path) = crate::config::paths::state_dir().map(|d| d.join("alerts.json")) else {
        return;
    };
    if let Err(e) = engine.save(&path) {
        eprintln!(
            "rigwatch: alert states not saved to {}: {e}",
            path.display()
        );
    }
}

pub(super) fn remember(
    state: &FleetState,
    memory: &mut crate::monitor::memory::FleetMemory,
    path: Option<&Path>,
) {
    state.remember(memory);
    if let Some(path) = path {
        if let Err(e) = crate::monitor::memory::save(path, memory) {
            eprintln!(
                "rigwatch: cost and last-seen not saved to {}: {e}",
                path.display()
            );
        }
    }
}

/// One JSON line on stdout and in the events file. A file that cannot be written (a full disk)
/// is said once on stderr; watching goes on, and stdout still has every event.
pub(super) fn publish(event: &AlertEvent, file: Option<&Path>, failing: &mut bool) {
    let Ok(line) = crate::sanitize::json_line(event) else {
        return;
    };
    println!("{line}");
    let _ = std::io::stdout().flush();
    let Some(path) = file else {
        return;
    };
    let written = crate::config::paths::private_file(path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    match written {
        Ok(()) if *failing => {
            *failing = false;
            eprintln!("rigwatch: writing {} again", path.display());
        }
        Ok(()) => {}
        Err(e) if !*failing => {
            *failing = true;
            eprintln!(
                "rigwatch: cannot write {}: {e}; events still go to stdout",
                path.display()
            );
        }
        Err(_) => {}
    }
}

/// Sends the event to every rule that wants it; a failure is said on stderr.
pub(super) fn dispatch(fleet: &FleetConfig, event: &AlertEvent) {
    sinks::dispatch(&fleet.alerts.rules, event, |why| {
        eprintln!("rigwatch: {why}")
    });
}
