use chrono::{TimeZone, Utc};

use super::*;
use crate::probe::ProcessLine;
use crate::probe::sample::{FileStat, QueueSample};
use crate::queue::{CellState, parse_final_listing};

const QUEUE: &str = "configs/a.yaml cls 2\nconfigs/b.yaml cls 2\nconfigs/c.yaml cls 4\n";

fn config() -> QueueConfig {
    QueueConfig {
        file: "/box/queue.txt".into(),
        final_dir: "/box/final".into(),
        cell_log: Some("/box/logs/{name}.log".into()),
        progress: Vec::new(),
    }
}

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 0)
        .single()
        .expect("valid time")
}

fn sample(alive: bool, log_secs: i64, tail: &str) -> HostSample {
    let processes = if alive {
        vec![ProcessLine {
            pid: 7,
            cmdline: "bash run_queue.sh queue.txt 1".into(),
        }]
    } else {
        Vec::new()
    };
    HostSample {
        queue: Some(QueueSample {
            text: Some(QUEUE.into()),
            listing: parse_final_listing("10\t1\t./a/best.pth\n5\t1\t./a/metrics.json\n"),
            processes,
            cell_log: Some(FileStat {
                path: Some("/box/logs/b.log".into()),
                size_bytes: 100,
                modified: at(log_secs),
            }),
            cell_log_tail: vec![tail.into()],
        }),
        ..HostSample::default()
    }
}

#[test]
fn facts_name_the_running_cell_from_its_log_and_the_start_index_from_the_queue_process() {
    let facts = facts(&config(), &sample(true, 0, "Epoch 2/4"), &[]).expect("facts");
    assert_eq!(facts.running, Some(1));
    assert!(
        facts.run_alive,
        "run_queue.sh queue.txt is the configured file"
    );
    assert_eq!(facts.start_index, Some(1));
    assert_eq!(facts.progress.and_then(|p| p.epoch), Some((2, 4)));
    let dead = super::facts(&config(), &sample(false, 0, ""), &[]).expect("facts");
    assert!(!dead.run_alive && dead.start_index.is_none());
}

#[test]
fn a_log_of_another_queue_file_does_not_count_as_alive() {
    assert!(same_file("queue.txt", "/box/queue.txt"));
    assert!(same_file("./queue.txt", "/box/queue.txt"));
    assert!(!same_file("/other/queue.txt", "/box/queue.txt"));
    assert!(!same_file("myqueue.txt", "/box/queue.txt"));
    assert_eq!(log_cell_name("/l/{name}.log", "/l/lr3.log"), Some("lr3"));
    assert_eq!(log_cell_name("/l/{name}.log", "/l/x/lr3.log"), None);
}

#[test]
fn samples_are_dated_by_the_log_and_repeats_add_none() {
    let config = config();
    let mut tracker = QueueTracker::new(&config);
    tracker.observe(&config, &sample(true, 0, "Epoch 1/4"), at(5));
    tracker.observe(&config, &sample(true, 0, "Epoch 1/4"), at(7));
    tracker.observe(&config, &sample(true, 100, "Epoch 2/4"), at(105));
    let times: Vec<_> = tracker.samples().iter().map(|s| s.at).collect();
    assert_eq!(times, [at(0), at(100)]);
}

#[test]
fn the_roster_and_status_of_a_live_queue() {
    let config = config();
    let mut tracker = QueueTracker::new(&config);
    tracker.observe(&config, &sample(true, 0, "Epoch 1/4"), at(0));
    tracker.observe(&config, &sample(true, 100, "Epoch 2/4"), at(100));
    let facts = tracker.facts.clone().expect("facts");
    let r = roster(&[RosterEntry {
        host: "a",
        presence: Presence::Up,
        facts: &facts,
        verified: None,
    }]);
    let states: Vec<(usize, &CellState)> = r.cells.iter().map(|c| (c.index, &c.state)).collect();
    assert_eq!(
        states,
        [
            (1, &CellState::Running),
            (2, &CellState::Pending),
            (0, &CellState::Done { verified: false })
        ]
    );
    let summary = &r.hosts[0];
    let status = status(summary, &facts, tracker.samples(), at(100));
    let current = status.current.expect("current");
    assert_eq!((current.index, current.name.as_str()), (1, "b"));
    assert!(current.eta_secs.is_some(), "two samples give a rate");
    assert!(label(summary, &facts, tracker.samples(), at(100)).starts_with("1/3 · ep 2/4 · ETA "));
}

#[test]
fn presence_follows_the_link_and_the_release_clock() {
    let down = LinkState::Down {
        since: at(0),
        reason: "gone".into(),
        retry_in_ms: 0,
    };
    assert_eq!(
        presence(&down, &[], None, None, at(60)),
        Presence::Unreachable
    );
    assert_eq!(presence(&down, &[], None, None, at(3601)), Presence::Gone);
    assert_eq!(
        presence(&down, &[], Some(at(-3600)), None, at(60)),
        Presence::Gone,
        "down since before this run of rigwatch began"
    );
    assert_eq!(
        presence(&down, &[], Some(at(30)), None, at(60)),
        Presence::Unreachable
    );
    let up = LinkState::Connecting { attempt: 0 };
    assert_eq!(
        presence(&up, &[], Some(at(0)), None, at(9999)),
        Presence::Up
    );
    let destroyed = crate::provider::InstanceState::Destroyed;
    assert_eq!(
        presence(&down, &[], Some(at(30)), Some(&destroyed), at(60)),
        Presence::Gone,
        "the provider says destroyed and the box is unreachable"
    );
    let reachable = LinkState::Up {
        since: at(0),
        rtt_ms: 1.0,
        banner: String::new(),
        auth: String::new(),
    };
    assert_eq!(
        presence(&reachable, &[], Some(at(30)), Some(&destroyed), at(60)),
        Presence::Up,
        "a box that answers is there, whatever a listing says"
    );
}

#[test]
fn verified_pulls_mark_cells_done_and_verified() {
    let config = config();
    let facts = facts(&config, &sample(false, 0, ""), &[]).expect("facts");
    let verified: BTreeSet<String> = ["c".to_string()].into();
    let r = roster(&[RosterEntry {
        host: "a",
        presence: Presence::Gone,
        facts: &facts,
        verified: Some(&verified),
    }]);
    let state = |name: &str| r.cells.iter().find(|c| c.name == name).map(|c| &c.state);
    assert_eq!(state("c"), Some(&CellState::Done { verified: true }));
    assert_eq!(state("b"), Some(&CellState::Missing));
    assert_eq!((r.hosts[0].done, r.hosts[0].verified), (2, 1));
}

#[test]
fn the_queue_files_read_error_is_found_for_the_message() {
    let mut s = sample(true, 0, "");
    assert_eq!(read_error(&s), None);
    s.errors.push(crate::probe::sample::SectionError {
        section: "qfile".into(),
        message: "queue file line 1: 70000 bytes, over the 60 KiB".into(),
    });
    assert!(read_error(&s).is_some_and(|m| m.contains("70000 bytes")));
}
