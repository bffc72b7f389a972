//! Fleet state: links, clocks and cost turning into events and money, with `now` passed in.

use super::*;
use chrono::Duration;

fn host(name: &str) -> HostConfig {
    HostConfig::for_test(name)
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

    // 90 minutes left: today. (Exactly an hour left is within the hour, in the one set of
    // bands the views, events and alerts share: clocks::Urgency.)
    state.tick(t0 + Duration::days(15) + Duration::minutes(30));
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

#[test]
fn a_box_gone_before_rigwatch_starts_shows_its_remembered_cells_as_missing() {
    use crate::config::QueueConfig;
    use crate::fleet::memory::{FleetMemory, HostMemory, RememberedQueue};
    use crate::queue::{CellState, parse_final_listing, parse_queue_lenient};

    let t0 = DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000);
    let mut config = host("a");
    config.queue = Some(QueueConfig {
        file: "/w/queue.txt".into(),
        final_dir: "/w/final".into(),
        cell_log: None,
        progress: Vec::new(),
    });
    let queue = parse_queue_lenient("c/x.yaml t 1\nc/y.yaml t 1\nc/z.yaml t 1\n", "/w/queue.txt");
    let listing = parse_final_listing("1\t1\t./x/best.pth\n1\t1\t./x/metrics.json\n");
    let facts = crate::fleet::queues::QueueFacts {
        queue,
        listing,
        running: Some(1),
        run_alive: true,
        start_index: None,
        progress: None,
        log_tail: Vec::new(),
    };
    let mut memory = FleetMemory::new();
    memory.insert(
        "a".into(),
        HostMemory {
            last_seen_up: Some(t0 - Duration::hours(3)),
            queue: Some(RememberedQueue::of(&facts)),
            ..HostMemory::default()
        },
    );
    let text = serde_json::to_string(&memory).expect("to json");
    let memory: FleetMemory = serde_json::from_str(&text).expect("from json");

    let mut state = FleetState::new(vec![config], Thresholds::default());
    state.recall(&memory);
    let down = LinkState::Down {
        since: t0,
        reason: "connection refused".into(),
        retry_in_ms: 1000,
    };
    state.set_link("a", down, t0);
    state.tick(t0 + Duration::seconds(5));
    let roster = state.roster.as_ref().expect("a roster from memory");
    let states: Vec<(&str, &CellState)> = roster
        .cells
        .iter()
        .map(|c| (c.name.as_str(), &c.state))
        .collect();
    assert_eq!(
        states,
        [
            ("y", &CellState::Missing),
            ("z", &CellState::Missing),
            ("x", &CellState::Done { verified: false })
        ]
    );
    let resume = state.queue_summary("a").and_then(|s| s.resume.as_ref());
    assert_eq!(
        resume.map(|r| r.command.as_str()),
        Some("bash run_queue.sh /w/queue.txt 1")
    );

    let mut again = FleetMemory::new();
    state.remember(&mut again);
    assert_eq!(again["a"].queue, memory["a"].queue, "kept for the next run");
}

#[test]
fn an_old_memory_without_queues_still_loads() {
    let old = r#"{"a": {"boot": null, "last_seen_up": null, "ledger": null}}"#;
    let memory: crate::fleet::memory::FleetMemory = serde_json::from_str(old).expect("old file");
    assert_eq!(memory["a"].queue, None);
}

/// The overview's disk clock and the detail's words come from one judgement per tick: none
/// from a minute of data, the same estimate in both once there is enough.
#[test]
fn the_disk_clock_and_the_detail_agree_and_wait_for_enough_history() {
    let t0 = DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000);
    let mut state = FleetState::new(vec![host("a")], Thresholds::default());
    let reading = |minute: i64, used: u64| {
        let text = format!(
            "Filesystem 1-blocks Used Available Capacity Mounted on\n/dev/vda 1000 {used} {} 1% /\n",
            1000 - used
        );
        let mounts =
            crate::probe::merge_df(crate::probe::parse_df_bytes(&text).expect("df"), Vec::new());
        Observation::Host(Box::new(crate::readings::HostReading {
            at: t0 + Duration::minutes(minute),
            sample: crate::probe::sample::HostSample {
                mounts,
                ..Default::default()
            },
        }))
    };
    let disk_clock = |s: &FleetState| {
        s.hosts[0]
            .clocks
            .iter()
            .find(|c| c.kind == crate::clocks::ClockKind::DiskFull)
            .and_then(|c| c.remaining_secs)
    };
    state.observe("a", reading(0, 100), t0);
    state.observe("a", reading(1, 300), t0 + Duration::minutes(1));
    state.tick(t0 + Duration::minutes(1));
    assert_eq!(disk_clock(&state), None, "a minute of data is no estimate");
    assert!(matches!(
        state.hosts[0].fill[0].1,
        FillOutlook::TooLittleHistory { .. }
    ));
    // Then 20 blocks a minute for twenty minutes: 700 used by minute 21, 300 free.
    for minute in 2..=21 {
        state.observe(
            "a",
            reading(minute, 300 + 20 * (minute as u64 - 1)),
            t0 + Duration::minutes(minute),
        );
    }
    let now = t0 + Duration::minutes(21);
    state.tick(now);
    let outlook = &state.hosts[0].fill[0].1;
    let (_, left, _) = outlook.filling().expect("filling");
    assert_eq!(disk_clock(&state), Some(left.num_seconds()), "{outlook:?}");
    assert!(
        outlook.describe().starts_with("bytes full in ~"),
        "{}",
        outlook.describe()
    );
}
