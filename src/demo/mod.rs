//! The demo fleet: eight boxes on several platforms whose probe output is replayed from the real
//! captures THROUGH THE SAME readers, parsers, state and signals as live hosts, covering every
//! state the dashboard must show. No config, no network.

mod captures;
mod clusters;
mod queue;
mod scenario;
pub mod teardown;

use chrono::{DateTime, Duration, Utc};

use crate::config::Thresholds;
use crate::fleet::FleetState;
use crate::transport::LinkState;

pub use scenario::Scenario;

/// The demo account's balance: enough for a few hours of the fleet's burn.
const DEMO_BALANCE: f64 = 60.0;

/// Spacing of the history the demo starts with (coarser than live, to start fast).
const BACKFILL_STEP_SECS: i64 = 10;

pub struct Demo {
    scenarios: Vec<Scenario>,
}

impl Demo {
    /// The demo fleet as of `now`, each box with its history already behind it.
    pub fn start(now: DateTime<Utc>) -> (Demo, FleetState) {
        Demo::start_sized(now, 1)
    }

    /// The eight boxes `copies` times over (names suffixed), to see and measure a big fleet.
    pub fn start_sized(now: DateTime<Utc>, copies: usize) -> (Demo, FleetState) {
        let scenarios: Vec<Scenario> = (0..copies.max(1))
            .flat_map(|copy| {
                let mut set = scenario::all(now);
                if copy > 0 {
                    for s in &mut set {
                        s.config.name = format!("{}-{}", s.config.name, copy + 1);
                    }
                }
                set
            })
            .collect();
        // The shipped profiles are compiled in and tested to load; the demo shows no clocks
        // rather than fail if that ever broke.
        let profiles = crate::clocks::load_all(None).unwrap_or_default();
        let mut state = FleetState::new(
            scenarios.iter().map(|s| s.config.clone()).collect(),
            Thresholds::default(),
        )
        .with_profiles(profiles, Some(DEMO_BALANCE * copies.max(1) as f64));
        let mut demo = Demo { scenarios };
        for s in &mut demo.scenarios {
            let start = now - Duration::minutes(s.history_minutes);
            state.seen_up_since(&s.config.name, start);
            let end = s.down_since.unwrap_or(now);
            let mut at = start;
            while at <= end {
                for observation in s.observe(at) {
                    state.record(&s.config.name, observation, at);
                }
                at += Duration::seconds(BACKFILL_STEP_SECS);
            }
            state.set_link(&s.config.name, s.link(now), now);
        }
        state.observe_cluster(clusters::slurm(now), now);
        state.observe_cluster(clusters::kubernetes(now), now);
        state.tick(now);
        (demo, state)
    }

    /// One more poll period of readings for every box that is up.
    pub fn advance(&mut self, state: &mut FleetState, now: DateTime<Utc>) {
        for s in &mut self.scenarios {
            if s.down_since.is_some() {
                continue;
            }
            for observation in s.observe(now) {
                state.observe(&s.config.name, observation, now);
            }
            if let LinkState::Up { .. } = s.link(now) {
                state.set_link(&s.config.name, s.link(now), now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::{Severity, SignalKind};

    fn kinds(state: &FleetState, host: &str) -> Vec<(SignalKind, Severity)> {
        let h = state
            .hosts
            .iter()
            .find(|h| h.config.name == host)
            .expect("host");
        h.signals.iter().map(|s| (s.kind, s.severity)).collect()
    }

    #[test]
    fn every_demo_box_shows_its_state_through_the_real_pipeline() {
        let now = DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000);
        let (mut demo, mut state) = Demo::start(now);
        assert_eq!(state.hosts.len(), 8);
        let has = |state: &FleetState, host: &str, kind: SignalKind, severity: Severity| {
            kinds(state, host).contains(&(kind, severity))
        };
        assert!(has(
            &state,
            "h100-capped",
            SignalKind::PowerCapped,
            Severity::Info
        ));
        assert!(
            has(
                &state,
                "h100-zombie",
                SignalKind::ZombieVram,
                Severity::Crit
            ),
            "{:?}",
            kinds(&state, "h100-zombie")
        );
        assert!(has(
            &state,
            "h100-zombie",
            SignalKind::RunDead,
            Severity::Crit
        ));
        assert!(
            has(
                &state,
                "h100-idle",
                SignalKind::IdleButBilling,
                Severity::Crit
            ),
            "{:?}",
            kinds(&state, "h100-idle")
        );
        assert!(has(
            &state,
            "h100-inodes",
            SignalKind::DiskInodes,
            Severity::Crit
        ));
        assert!(has(
            &state,
            "h100-down",
            SignalKind::RunUnknown,
            Severity::Warn
        ));
        assert!(
            has(
                &state,
                "h100-rebooted",
                SignalKind::Rebooted,
                Severity::Crit
            ),
            "{:?}",
            kinds(&state, "h100-rebooted")
        );
        assert!(
            has(
                &state,
                "h100x2-fill",
                SignalKind::DiskFillingUp,
                Severity::Crit
            ),
            "{:?}",
            kinds(&state, "h100x2-fill")
        );
        let train = state
            .hosts
            .iter()
            .find(|h| h.config.name == "h100-train")
            .expect("train");
        assert_eq!(train.run.word(), "alive");
        assert!(train.worst() < Some(Severity::Warn), "{:?}", train.signals);
        let multi = state
            .hosts
            .iter()
            .find(|h| h.config.name == "h100x2-fill")
            .expect("fill");
        assert_eq!(multi.history.latest_gpu().map(|g| g.gpus.len()), Some(2));

        let later = now + Duration::seconds(2);
        demo.advance(&mut state, later);
        assert_eq!(
            state.hosts[0].history.latest_gpu().map(|g| g.at),
            Some(later),
            "the demo keeps producing readings"
        );
    }
}
