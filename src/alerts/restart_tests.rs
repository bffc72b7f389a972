//! Across a restart, a saved alert changes only on evidence: a cluster not read since the
//! start, or whose read failed, resolves nothing.

use chrono::{DateTime, Duration, Utc};

use super::engine::{Engine, Timing};
use super::*;
use crate::cluster::{ClusterReading, Scheduler};

pub(super) fn at(secs: i64) -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000) + Duration::seconds(secs)
}

fn walltime() -> Condition {
    Condition {
        host: "hpc".into(),
        kind: AlertKind::parse("clock_walltime").expect("a known kind"),
        severity: Severity::Crit,
        message: "job 10 (train-a) reaches its walltime in 50m".into(),
        stage: Some("1h".into()),
        subject: Some("10".into()),
    }
}

/// An engine whose walltime alert for job 10 fired, saved and taken back as a restart does.
fn restarted(dir: &std::path::Path) -> Engine {
    let timing = Timing {
        group_wait: Duration::seconds(2),
        ..Timing::default()
    };
    let mut first = Engine::new(timing);
    let fired: Vec<_> = (0..4)
        .flat_map(|s| {
            let seen = Seen {
                conditions: vec![walltime()],
                ..Seen::default()
            };
            first.step(&seen, at(s))
        })
        .collect();
    assert_eq!(fired.len(), 1, "{fired:?}");
    let path = dir.join("alerts.json");
    let saved = super::saved::Saved {
        tracks: first.tracks(),
        ..Default::default()
    };
    super::saved::save(&path, &saved).expect("saved");
    let mut second = Engine::new(timing);
    second.restore(super::saved::load(&path).tracks);
    second
}

/// A read of cluster `hpc` without jobs, taken at 5 s: failed with `error`, or not.
pub(super) fn reading(error: Option<&str>) -> ClusterReading {
    ClusterReading {
        name: "hpc".into(),
        scheduler: Scheduler::Slurm,
        via: "login".into(),
        jobs: Vec::new(),
        ended_state_unknown: Vec::new(),
        error: error.map(str::to_string),
        read_at: at(5),
        quota: None,
    }
}

fn state() -> FleetState {
    FleetState::new(Vec::new(), crate::config::Thresholds::default())
}

#[test]
fn a_cluster_not_read_since_the_restart_resolves_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut engine = restarted(dir.path());
    let state = state();
    for s in 10..70 {
        let seen = conditions(&state, &["hpc"], at(s));
        let events = engine.step(&seen, at(s));
        assert!(events.is_empty(), "at {s}s, no queue read yet: {events:?}");
    }
}

#[test]
fn a_cluster_whose_read_failed_says_so_and_resolves_nothing_else() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut engine = restarted(dir.path());
    let mut state = state();
    state
        .clusters
        .push(reading(Some("squeue on login: no answer within 30s")));
    let mut said = Vec::new();
    for s in 10..70 {
        let seen = conditions(&state, &["hpc"], at(s));
        said.extend(engine.step(&seen, at(s)));
    }
    let kinds: Vec<(String, AlertState)> =
        said.iter().map(|e| (e.kind.to_string(), e.state)).collect();
    assert_eq!(kinds, [("cluster_unread".to_string(), AlertState::Firing)]);
}

#[test]
fn a_fresh_read_without_the_condition_resolves_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut engine = restarted(dir.path());
    let mut state = state();
    state.clusters.push(reading(None));
    let said: Vec<AlertEvent> = (10..20)
        .flat_map(|s| engine.step(&conditions(&state, &["hpc"], at(s)), at(s)))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0].state, AlertState::Resolved);
}

/// A box whose host section answered after the restart and whose GPUs have not yet: its saved
/// zombie alert is not resolved by a reading that has no GPUs in it.
#[test]
fn a_box_read_only_in_part_since_the_restart_resolves_nothing() {
    let timing = Timing {
        group_wait: Duration::seconds(2),
        ..Timing::default()
    };
    let zombie = Condition {
        host: "a".into(),
        kind: AlertKind::parse("zombie_vram").expect("a known kind"),
        severity: Severity::Crit,
        message: "GPU0 holds 20 GB and computes nothing".into(),
        stage: None,
        subject: None,
    };
    let mut engine = Engine::new(timing);
    for s in 0..4 {
        let seen = Seen {
            conditions: vec![zombie.clone()],
            ..Seen::default()
        };
        engine.step(&seen, at(s));
    }
    let mut state = FleetState::new(
        vec![crate::config::HostConfig::for_test("a")],
        crate::config::Thresholds::default(),
    );
    for s in 10..70 {
        state.read_without_gpus("a", at(s));
        let events = engine.step(&conditions(&state, &[], at(s)), at(s));
        assert!(events.is_empty(), "at {s}s, GPUs not read yet: {events:?}");
    }
}
