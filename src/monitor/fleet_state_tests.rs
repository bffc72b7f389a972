//! Fleet state: links, clocks and cost turning into events and money, with `now` passed in.

use super::*;
use crate::config::{Billing, SshTarget};
use chrono::Duration;

fn host(name: &str) -> HostConfig {
    HostConfig {
        name: name.into(),
        target: SshTarget {
            user: None,
            host: name.into(),
            port: None,
        },
        identity: None,
        profile: "autodl".into(),
        accept_new: false,
        mounts: Vec::new(),
        run: None,
        log: None,
        ckpt_dir: None,
        billing: Billing {
            price_per_hour: Some(2.0),
            stopped_price_per_hour: Some(0.5),
            ..Billing::default()
        },
        instance_id: None,
        teardown: None,
        pull: None,
        queue: None,
        walltime: false,
    }
}

#[test]
fn links_clocks_and_cost_turn_into_events_and_money() {
    let t0 = DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000);
    let profiles = crate::clocks::load_all(None).expect("profiles");
    let mut state =
        FleetState::new(vec![host("a")], Thresholds::default()).with_profiles(profiles, None);
    let up = LinkState::Up {
        since: t0,
        rtt_ms: 1.0,
        banner: String::new(),
        auth: String::new(),
    };
    state.set_link("a", up.clone(), t0);
    assert!(
        !state.events.is_empty()
            && state
                .events
                .iter()
                .all(|e| e.text.starts_with("first contact, AutoDL: ")),
        "the first connection ever brings only the platform's warnings: {:?}",
        state.events
    );
    assert!(
        state.events[0]
            .text
            .contains("auto-released 15 days after stop"),
        "in the profile's order: {:?}",
        state.events
    );
    state.events.clear();
    state.tick(t0);
    let mut again = FleetState::new(vec![host("a")], Thresholds::default())
        .with_profiles(state.profiles.clone(), None);
    let mut memory = super::super::memory::FleetMemory::new();
    state.remember(&mut memory);
    again.recall(&memory);
    again.set_link("a", up, t0);
    assert!(
        again.events.is_empty(),
        "a box seen before: its connection is not news"
    );
    state.tick(t0 + Duration::hours(2));
    let spent = state.hosts[0].ledger.as_ref().map(|l| l.spent);
    assert!(spent.is_some_and(|s| (s - 4.0).abs() < 1e-6), "{spent:?}");

    let down = LinkState::Down {
        since: t0 + Duration::hours(2),
        reason: "gone".into(),
        retry_in_ms: 1000,
    };
    state.set_link("a", down, t0 + Duration::hours(2));
    assert!(
        state.events[0].text.starts_with("link up → down: gone"),
        "{:?}",
        state.events
    );
    let release = state.hosts[0]
        .clocks
        .iter()
        .find(|c| c.kind == crate::clocks::ClockKind::AutoRelease);
    assert_eq!(release.and_then(|c| c.remaining_secs), Some(15 * 86400));
    state.tick(t0 + Duration::hours(6));
    let spent = state.hosts[0].ledger.as_ref().map(|l| l.spent);
    assert!(
        spent.is_some_and(|s| (s - 6.0).abs() < 1e-6),
        "out of sight at the stopped rate: {spent:?}"
    );

    state.tick(t0 + Duration::days(15) + Duration::hours(1));
    assert!(
        state
            .events
            .iter()
            .any(|e| e.text.starts_with("clock today:")),
        "{:?}",
        state.events
    );
    state.tick(t0 + Duration::days(15) + Duration::hours(3));
    assert!(
        state
            .events
            .iter()
            .any(|e| e.text.starts_with("clock FIRED:") && e.severity == Severity::Crit)
    );
}
