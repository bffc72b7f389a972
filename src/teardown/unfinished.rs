//! Destroys with an intent and no outcome: rigwatch was stopped (SIGKILL, a crash, a second
//! Ctrl-C) while one ran, and the command may or may not have taken effect. Every start that
//! reads the ledger says so; where the provider can be asked, what it sees becomes the outcome.
//! Destroys whose outcome was left open (UNCONFIRMED, FAILED) get one later look by the next
//! start that can ask the provider: what it says is added as a row of its own (`later_looks`),
//! never written over the outcome.

use std::path::Path;

use chrono::Utc;

use super::destroy::{LONGEST, with_ledger};
use super::ready::{PROVIDER_TIMEOUT, provider_cli};
use crate::clocks::Profile;
use crate::config::FleetConfig;
use crate::ledger::locks::{Act, Busy};
use crate::ledger::{DestroyOutcome, LaterLook, TeardownFinish, TeardownRecord};
use crate::provider::{InstanceState, query};

/// One line per interrupted destroy, after asking the provider where `fleet` says how. A
/// ledger that cannot be read says nothing here: the commands that need it report that.
pub async fn unfinished(ledger: &Path, fleet: Option<(&FleetConfig, &[Profile])>) -> Vec<String> {
    if !ledger.exists() {
        return Vec::new();
    }
    let Ok(rows) = with_ledger(ledger, |l| l.teardowns(None)).await else {
        return Vec::new();
    };
    let now = Utc::now();
    let mut lines = Vec::new();
    for t in rows.iter().filter(|t| t.outcome.is_none()) {
        let in_flight = t.pid.is_some_and(crate::process::running)
            && (now - t.at).to_std().is_ok_and(|age| age < LONGEST);
        if in_flight {
            continue;
        }
        // The destroy command holds its target's lock for as long as it runs (its stdin), so a
        // rigwatch killed meanwhile leaves the lock held by the destroy itself: still running,
        // nothing to ask the provider yet.
        let what = format!("box {}", t.host);
        let held = crate::ledger::locks::default_dir()
            .and_then(|dir| crate::ledger::locks::holder_of(&dir, &t.host, &what));
        let destroying = match &held {
            Some(Busy::By(holder)) => holder.act == Act::Teardown,
            Some(Busy::Unknown(_)) => true,
            Some(Busy::Io { .. }) | None => false,
        };
        if destroying {
            lines.push(format!(
                "a destroy of {} (instance {}) started by pid {} at {} is still running: \
                 the first look after it has ended asks the provider and records the outcome",
                crate::sanitize::line(&t.host, 80),
                crate::sanitize::line(t.instance_id.as_deref().unwrap_or("-"), 80),
                t.pid.map_or("?".into(), |p| p.to_string()),
                t.at.format("%Y-%m-%d %H:%M:%S UTC")
            ));
            continue;
        }
        let mut line = format!(
            "destroy of {} (instance {}) started {} has no recorded outcome: rigwatch was \
             stopped while it ran; check the provider",
            crate::sanitize::line(&t.host, 80),
            crate::sanitize::line(t.instance_id.as_deref().unwrap_or("-"), 80),
            t.at.format("%Y-%m-%d %H:%M:%S UTC")
        );
        if let Some((fleet, profiles)) = fleet {
            if let Some(said) = ask(ledger, t, fleet, profiles).await {
                line.push_str(&format!("; {said}"));
            }
        }
        lines.push(line);
    }
    if let Some((fleet, profiles)) = fleet {
        for t in rows.iter().filter(|t| t.open()) {
            if let Some(said) = look_again(ledger, t, fleet, profiles).await {
                lines.push(said);
            }
        }
    }
    lines
}

/// One later look at a destroy left open: the provider asked once, its answer added to the
/// record; a line when it changed what is known (the instance is gone after all).
async fn look_again(
    ledger: &Path,
    t: &TeardownRecord,
    fleet: &FleetConfig,
    profiles: &[Profile],
) -> Option<String> {
    let (outcome, seen) = provider_sees(t, fleet, profiles).await?;
    let outcome = match outcome {
        DestroyOutcome::Confirmed => outcome,
        // Still listed once the destroy has ended: what the record said stands.
        _ => t.outcome?,
    };
    let look = LaterLook {
        at: Utc::now(),
        outcome,
        why: format!("looked again after the destroy had ended: {seen}"),
    };
    let id = t.id;
    let recorded = with_ledger(ledger, move |l| l.record_later_look(id, &look)).await;
    (outcome == DestroyOutcome::Confirmed).then(|| {
        format!(
            "destroy of {} (instance {}) recorded {} at {}: looked at again, {seen}: {}",
            crate::sanitize::line(&t.host, 80),
            crate::sanitize::line(t.instance_id.as_deref().unwrap_or("-"), 80),
            t.outcome.map_or("-".into(), |o| o.to_string()),
            t.at.format("%Y-%m-%d %H:%M:%S UTC"),
            match recorded {
                Ok(()) => "now confirmed".to_string(),
                Err(e) => format!("NOT RECORDED: {e}"),
            }
        )
    })
}

/// Asks the provider about `t`'s instance once and records what it sees; what was recorded, or
/// None when it could not be asked.
async fn ask(
    ledger: &Path,
    t: &TeardownRecord,
    fleet: &FleetConfig,
    profiles: &[Profile],
) -> Option<String> {
    let (outcome, seen) = provider_sees(t, fleet, profiles).await?;
    let finish = TeardownFinish {
        finished: Utc::now(),
        exit_status: None,
        output: String::new(),
        outcome,
        why: format!("rigwatch was stopped while the destroy ran; asked afterwards, {seen}"),
    };
    let id = t.id;
    match with_ledger(ledger, move |l| l.record_outcome(id, &finish)).await {
        Ok(true) => Some(format!("{seen}: recorded as {outcome}")),
        _ => Some(seen),
    }
}

/// What the provider lists for `t`'s instance now, in words: None when there is no provider
/// CLI for its host, no instance id, or the provider could not be asked.
async fn provider_sees(
    t: &TeardownRecord,
    fleet: &FleetConfig,
    profiles: &[Profile],
) -> Option<(DestroyOutcome, String)> {
    let host = fleet.hosts.iter().find(|h| h.name == t.host)?;
    let profile = crate::clocks::profiles::find(profiles, &host.profile)?;
    let (provider, program) = provider_cli(profile, fleet)?;
    let id = crate::sanitize::line(t.instance_id.as_deref()?, 80);
    let rows = query(provider, &program, PROVIDER_TIMEOUT).await.ok()?;
    let name = provider.default_program();
    Some(match rows.iter().find(|r| r.instance_id == id) {
        None => (
            DestroyOutcome::Confirmed,
            format!("{name} no longer lists instance {id}"),
        ),
        Some(r) if r.state == InstanceState::Destroyed => (
            DestroyOutcome::Confirmed,
            format!("{name} lists instance {id} as destroyed"),
        ),
        Some(r) => (
            DestroyOutcome::Unconfirmed,
            format!(
                "{name} still lists instance {id} as {}",
                crate::sanitize::line(r.state.word(), 40)
            ),
        ),
    })
}
