//! The alert engine and the notices over restarts at any tick, with readings missing or late:
//! never a resolve without a fresh reading that shows the condition gone, never the same alert
//! fired twice without a resolve between, never the same news twice.

use std::collections::BTreeSet;

use chrono::Duration;
use proptest::prelude::*;

use super::engine::{Engine, Timing};
use super::notices::Notices;
use super::restart_tests::at;
use super::saved::{Saved, load, save};
use super::*;
use crate::cluster::{ClusterReading, JobRow, Phase, Scheduler};

#[derive(Debug, Clone, Copy)]
enum Tick {
    /// The process is killed and started again: only what was saved survives.
    Restart,
    /// A fresh reading: the condition holds, or it does not.
    Read(bool),
    /// No reading: the link not known yet (a restart's first seconds), or the data stale.
    Unread(bool),
}

fn tick() -> impl Strategy<Value = (Tick, i64)> {
    let t = prop_oneof![
        1 => Just(Tick::Restart),
        4 => any::<bool>().prop_map(Tick::Read),
        2 => any::<bool>().prop_map(Tick::Unread),
    ];
    (t, 1i64..40)
}

fn dead() -> Condition {
    Condition {
        host: "a".into(),
        kind: AlertKind::parse("run_dead").expect("a known kind"),
        severity: Severity::Crit,
        message: "run is not running".into(),
        stage: None,
        subject: None,
    }
}

/// Saved and taken back, as a kill and a start do (the sender writes before every send).
fn restart(engine: &Engine, notices: &Notices, dir: &std::path::Path) -> (Engine, Notices) {
    let path = dir.join("alerts.json");
    let saved = Saved {
        tracks: engine.tracks(),
        notices: notices.clone(),
        outbox: Vec::new(),
    };
    save(&path, &saved).expect("saved");
    let back = load(&path);
    let mut engine = Engine::new(timing());
    engine.restore(back.tracks);
    (engine, back.notices)
}

fn timing() -> Timing {
    Timing {
        group_wait: Duration::seconds(30),
        ..Timing::default()
    }
}

fn job(id: &str, phase: Phase) -> JobRow {
    JobRow::for_test(
        id,
        &format!("train-{id}"),
        phase,
        &format!("{phase:?}").to_uppercase(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn alerts_change_only_on_evidence_across_restarts(ticks in prop::collection::vec(tick(), 1..120)) {
        let dir = tempfile::tempdir().expect("tmp");
        let mut engine = Engine::new(timing());
        let notices = Notices::default();
        let mut now = 0;
        let mut firing = false;
        for (step, gap) in ticks {
            now += gap;
            let seen = match step {
                Tick::Restart => {
                    engine = restart(&engine, &notices, dir.path()).0;
                    continue;
                }
                Tick::Read(holds) => Seen {
                    conditions: if holds { vec![dead()] } else { Vec::new() },
                    ..Seen::default()
                },
                Tick::Unread(link_unknown) => {
                    let host: BTreeSet<String> = ["a".to_string()].into();
                    if link_unknown {
                        Seen { link_unknown: host, ..Seen::default() }
                    } else {
                        Seen { frozen: host, ..Seen::default() }
                    }
                }
            };
            for e in engine.step(&seen, at(now)) {
                match e.state {
                    AlertState::Resolved => {
                        prop_assert!(matches!(step, Tick::Read(false)), "resolved at {step:?}");
                        prop_assert!(firing, "resolved what was not firing");
                        firing = false;
                    }
                    AlertState::Firing if !e.data.repeat => {
                        prop_assert!(matches!(step, Tick::Read(true)), "fired at {step:?}");
                        prop_assert!(!firing, "fired twice without a resolve");
                        firing = true;
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn news_is_told_once_across_restarts(
        ends in prop::collection::vec(0usize..30, 3),
        reads in prop::collection::vec((0u8..4, any::<bool>()), 1..40),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let mut notices = Notices::default();
        let mut told: Vec<String> = Vec::new();
        for (i, (kind, errs)) in reads.iter().enumerate() {
            if *kind == 0 {
                notices = restart(&Engine::new(timing()), &notices, dir.path()).1;
                continue;
            }
            let jobs = ends
                .iter()
                .enumerate()
                .map(|(j, end)| {
                    let phase = if i >= *end { Phase::Failed } else { Phase::Running };
                    job(&j.to_string(), phase)
                })
                .collect();
            let mut state = FleetState::new(Vec::new(), crate::config::Thresholds::default());
            state.clusters.push(ClusterReading {
                name: "hpc".into(),
                scheduler: Scheduler::Slurm,
                via: "login".into(),
                jobs: if *errs { Vec::new() } else { jobs },
                ended_state_unknown: Vec::new(),
                error: errs.then(|| "squeue: no answer".to_string()),
                read_at: at(i as i64),
                quota: None,
            });
            for e in notices.from_state(&state, at(i as i64)) {
                let subject = e.data.subject.clone().unwrap_or_default();
                prop_assert!(!told.contains(&subject), "job {subject} ended twice");
                told.push(subject);
            }
        }
    }
}
