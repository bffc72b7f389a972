//! The roster's reconciling of queues, final folders and running cells, case by case. Past
//! 400 lines: a table of cases, each read on its own.

use std::collections::BTreeSet;

use super::super::{
    CellRef, CellState, FinalListing, HostQueue, Presence, Queue, Resume, Roster, RosterOptions,
    parse_final_listing, parse_queue, parse_queue_lenient, reconcile, resume_command,
};

/// Five cells; line 3 is a comment, so cell i sits on line i+1 for i < 2 and i+2 after.
const QUEUE_A: &str = "\
configs/a/a0.yaml recon 20
configs/a/a1.yaml recon 20
# configs/a/dropped.yaml recon 20
configs/a/a2.yaml recon 20
configs/a/a3.yaml det 50
configs/a/a4.yaml seg
";

fn done_listing(names: &[&str]) -> FinalListing {
    let text: String = names
        .iter()
        .map(|n| format!("1048576\t1714650000\t{n}/best.pth\n300\t1714650000\t{n}/metrics.json\n"))
        .collect();
    parse_final_listing(&text)
}

fn host<'a>(name: &'a str, q: &'a Queue, l: &'a FinalListing) -> HostQueue<'a> {
    HostQueue {
        host: name,
        presence: Presence::Up,
        queue: q,
        listing: l,
        running: None,
        run_alive: true,
        start_index: None,
        verified: None,
    }
}

/// States of one host's cells, in queue order.
fn states(r: &Roster, host: &str) -> Vec<(String, CellState)> {
    let mut v: Vec<_> = r.cells.iter().filter(|c| c.host == host).collect();
    v.sort_by_key(|c| c.index);
    v.into_iter()
        .map(|c| (c.name.clone(), c.state.clone()))
        .collect()
}

fn named(v: &[(&str, CellState)]) -> Vec<(String, CellState)> {
    v.iter()
        .map(|(n, s)| ((*n).to_owned(), s.clone()))
        .collect()
}

const DONE: CellState = CellState::Done { verified: false };

#[test]
fn live_queue_done_running_pending() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0", "a1"]);
    let r = reconcile(
        &[HostQueue {
            running: Some(2),
            ..host("gpu-a", &q, &l)
        }],
        &RosterOptions::default(),
    );
    assert_eq!(
        states(&r, "gpu-a"),
        named(&[
            ("a0", DONE),
            ("a1", DONE),
            ("a2", CellState::Running),
            ("a3", CellState::Pending),
            ("a4", CellState::Pending),
        ])
    );
    let s = &r.hosts[0];
    assert_eq!(
        (s.total, s.done, s.running, s.pending, s.failed),
        (5, 2, 1, 2, 0)
    );
    assert_eq!(
        (s.missing, s.colliding, s.current, s.resume.clone()),
        (0, 0, Some(2), None)
    );
}

#[test]
fn a_passed_cell_without_durable_copy_failed() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0", "a2"]);
    let r = reconcile(
        &[HostQueue {
            running: Some(3),
            ..host("gpu-a", &q, &l)
        }],
        &RosterOptions::default(),
    );
    assert_eq!(
        states(&r, "gpu-a"),
        named(&[
            ("a0", DONE),
            ("a1", CellState::Failed),
            ("a2", DONE),
            ("a3", CellState::Running),
            ("a4", CellState::Pending),
        ])
    );
    // Display order: failed first, done last.
    assert_eq!(r.cells[0].name, "a1");
    assert_eq!(r.cells[0].state, CellState::Failed);
    assert_eq!(r.cells.last().map(|c| c.state.clone()), Some(DONE));
}

#[test]
fn killed_queue_resumes_at_first_not_done_in_start_index_units() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0", "a1"]);
    let h = HostQueue {
        running: Some(2),
        run_alive: false,
        ..host("gpu-a", &q, &l)
    };
    let r = reconcile(&[h], &RosterOptions::default());
    assert_eq!(
        states(&r, "gpu-a"),
        named(&[
            ("a0", DONE),
            ("a1", DONE),
            ("a2", CellState::Failed),
            ("a3", CellState::Pending),
            ("a4", CellState::Pending),
        ])
    );
    // Cell 2 is on line 4 (the comment on line 3 counts), so `run_queue.sh` needs k = 3.
    assert_eq!(
        r.hosts[0].resume,
        Some(Resume {
            cell_index: 2,
            start_index: 3,
            command: "bash run_queue.sh queue_a.txt 3".into()
        })
    );
    assert_eq!(r.hosts[0].current, None);
}

#[test]
fn killed_queue_without_running_index_fails_only_the_gaps() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0", "a2"]);
    let h = HostQueue {
        run_alive: false,
        ..host("gpu-a", &q, &l)
    };
    let r = reconcile(&[h], &RosterOptions::default());
    assert_eq!(
        states(&r, "gpu-a"),
        named(&[
            ("a0", DONE),
            ("a1", CellState::Failed),
            ("a2", DONE),
            ("a3", CellState::Pending),
            ("a4", CellState::Pending),
        ])
    );
    let resume = r.hosts[0].resume.clone().expect("killed queue resumes");
    assert_eq!((resume.cell_index, resume.start_index), (1, 1));
}

#[test]
fn finished_queue_has_nothing_to_resume() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0", "a1", "a2", "a3", "a4"]);
    let r = reconcile(
        &[HostQueue {
            run_alive: false,
            ..host("gpu-a", &q, &l)
        }],
        &RosterOptions::default(),
    );
    assert_eq!(r.hosts[0].done, 5);
    assert_eq!(r.hosts[0].resume, None);
}

#[test]
fn start_index_skipped_cells_without_copy_are_failed() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a1"]);
    // Launched with k = 3: lines 1..=3 skipped (a0, a1, the comment); a2 is first to run.
    let h = HostQueue {
        start_index: Some(3),
        ..host("gpu-a", &q, &l)
    };
    let r = reconcile(&[h], &RosterOptions::default());
    assert_eq!(
        states(&r, "gpu-a"),
        named(&[
            ("a0", CellState::Failed),
            ("a1", DONE),
            ("a2", CellState::Pending),
            ("a3", CellState::Pending),
            ("a4", CellState::Pending),
        ])
    );
}

#[test]
fn vanished_box_cells_are_missing_unless_durable() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0"]);
    let h = HostQueue {
        presence: Presence::Gone,
        running: Some(1),
        ..host("gpu-a", &q, &l)
    };
    let r = reconcile(&[h], &RosterOptions::default());
    assert_eq!(
        states(&r, "gpu-a"),
        named(&[
            ("a0", DONE),
            ("a1", CellState::Missing),
            ("a2", CellState::Missing),
            ("a3", CellState::Missing),
            ("a4", CellState::Missing),
        ])
    );
    let s = &r.hosts[0];
    assert_eq!((s.done, s.missing, s.running, s.current), (1, 4, 0, None));
    assert_eq!(s.presence, Presence::Gone);
    // What to run on a replacement box.
    assert_eq!(
        s.resume.as_ref().map(|x| x.command.as_str()),
        Some("bash run_queue.sh queue_a.txt 1")
    );
    assert_eq!(r.cells[0].state, CellState::Missing, "missing sorts first");
}

#[test]
fn unreachable_box_keeps_last_known_running_cell() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0"]);
    let h = HostQueue {
        presence: Presence::Unreachable,
        running: Some(1),
        ..host("gpu-a", &q, &l)
    };
    let r = reconcile(&[h], &RosterOptions::default());
    assert_eq!(r.hosts[0].current, Some(1));
    assert_eq!(
        (
            r.hosts[0].missing,
            r.hosts[0].failed,
            r.hosts[0].resume.clone()
        ),
        (0, 0, None)
    );
}

#[test]
fn verified_pulls_count_as_done_even_without_listing() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = done_listing(&["a0"]);
    let verified: BTreeSet<String> = ["a0", "a1"].iter().map(|s| (*s).to_owned()).collect();
    let h = HostQueue {
        presence: Presence::Gone,
        verified: Some(&verified),
        ..host("gpu-a", &q, &l)
    };
    let r = reconcile(&[h], &RosterOptions::default());
    let st = states(&r, "gpu-a");
    assert_eq!(st[0].1, CellState::Done { verified: true });
    assert_eq!(st[1].1, CellState::Done { verified: true });
    assert_eq!(st[2].1, CellState::Missing);
    let a1 = r.cells.iter().find(|c| c.name == "a1").expect("a1 listed");
    assert!(
        !a1.durable,
        "verified locally, but no durable copy on the box"
    );
}

#[test]
fn duplicate_name_on_one_box_collides_both_ways() {
    let q = parse_queue_lenient(
        "x/abl.yaml recon 20\ny/other.yaml det 5\nz/abl.yml seg 5\n",
        "q.txt",
    );
    let l = done_listing(&["abl", "other"]);
    let r = reconcile(&[host("gpu-a", &q, &l)], &RosterOptions::default());
    let at = |line| CellRef {
        host: "gpu-a".into(),
        file: "q.txt".into(),
        line,
    };
    assert_eq!(
        states(&r, "gpu-a"),
        named(&[
            ("abl", CellState::Colliding { with: vec![at(3)] }),
            ("other", DONE),
            ("abl", CellState::Colliding { with: vec![at(1)] }),
        ])
    );
    assert!(
        r.cells
            .iter()
            .filter(|c| c.name == "abl")
            .all(|c| c.durable)
    );
    assert_eq!((r.hosts[0].colliding, r.hosts[0].done), (2, 1));
}

#[test]
fn same_name_on_two_boxes_collides() {
    let qa = parse_queue(
        "configs/a/shared.yaml recon 20\nconfigs/a/a1.yaml recon 20\n",
        "queue_a.txt",
    )
    .expect("queue a");
    let qb = parse_queue("configs/b/shared.yaml det 50\n", "queue_b.txt").expect("queue b");
    let l = FinalListing::default();
    let r = reconcile(
        &[
            HostQueue {
                running: Some(1),
                ..host("gpu-a", &qa, &l)
            },
            host("gpu-b", &qb, &l),
        ],
        &RosterOptions::default(),
    );
    let b_ref = CellRef {
        host: "gpu-b".into(),
        file: "queue_b.txt".into(),
        line: 1,
    };
    let a_ref = CellRef {
        host: "gpu-a".into(),
        file: "queue_a.txt".into(),
        line: 1,
    };
    assert_eq!(
        states(&r, "gpu-a")[0].1,
        CellState::Colliding { with: vec![b_ref] }
    );
    assert_eq!(states(&r, "gpu-a")[1].1, CellState::Running);
    assert_eq!(
        states(&r, "gpu-b")[0].1,
        CellState::Colliding { with: vec![a_ref] }
    );
    assert_eq!(r.hosts.len(), 2);
    assert_eq!(r.hosts[1].host, "gpu-b");
}

#[test]
fn out_of_range_running_index_is_ignored() {
    let q = parse_queue(QUEUE_A, "queue_a.txt").expect("queue");
    let l = FinalListing::default();
    let r = reconcile(
        &[HostQueue {
            running: Some(99),
            ..host("gpu-a", &q, &l)
        }],
        &RosterOptions::default(),
    );
    assert_eq!((r.hosts[0].running, r.hosts[0].pending), (0, 5));
}

#[test]
fn resume_template_is_a_parameter_and_quotes_the_file() {
    let q = parse_queue("c/a.yaml t 1\n", "my queues/q 1.txt").expect("queue");
    let l = FinalListing::default();
    let opts = RosterOptions {
        resume_template: "tmux new -d -s q 'bash /shared/run_queue.v2.sh {queue_file} {k}'".into(),
        ..RosterOptions::default()
    };
    let r = reconcile(
        &[HostQueue {
            run_alive: false,
            ..host("gpu-a", &q, &l)
        }],
        &opts,
    );
    assert_eq!(
        r.hosts[0].resume.as_ref().map(|x| x.command.as_str()),
        Some("tmux new -d -s q 'bash /shared/run_queue.v2.sh 'my queues/q 1.txt' 0'")
    );
    assert_eq!(
        resume_command("bash run_queue.sh {queue_file} {k}", "q{k}.txt", 4),
        "bash run_queue.sh 'q{k}.txt' 4"
    );
    assert_eq!(resume_command("x {other} {k}", "q.txt", 2), "x {other} 2");
}

#[test]
fn cell_report_json_flattens_the_state() {
    let q = parse_queue("c/a.yaml t 20\n", "q.txt").expect("queue");
    let l = done_listing(&["a"]);
    let r = reconcile(&[host("gpu-a", &q, &l)], &RosterOptions::default());
    let v = serde_json::to_value(&r.cells[0]).expect("serialises");
    assert_eq!(v["state"], "done");
    assert_eq!(v["verified"], false);
    assert_eq!(v["durable"], true);
    assert_eq!(v["line"], 1);
}
