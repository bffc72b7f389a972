use serde_json::json;

use super::super::{
    FinalListing, HostQueue, Presence, Progress, QueueStatus, RosterOptions, compact_duration,
    overview_label, parse_final_listing, parse_queue, reconcile,
};

#[test]
fn overview_label_has_the_exact_shape() {
    assert_eq!(
        overview_label(7, 12, Some((3, 50)), Some(5 * 3600 + 10 * 60)),
        "7/12 · ep 3/50 · ETA 5h10m"
    );
    assert_eq!(overview_label(7, 12, None, None), "7/12");
    assert_eq!(overview_label(0, 3, Some((1, 20)), None), "0/3 · ep 1/20");
    assert_eq!(overview_label(2, 3, None, Some(42 * 60)), "2/3 · ETA 42m");
}

#[test]
fn compact_durations_round_to_minutes() {
    assert_eq!(compact_duration(0), "<1m");
    assert_eq!(compact_duration(29), "<1m");
    assert_eq!(compact_duration(30), "1m");
    assert_eq!(compact_duration(59 * 60 + 29), "59m");
    assert_eq!(compact_duration(59 * 60 + 30), "1h00m");
    assert_eq!(compact_duration(5 * 3600 + 5 * 60), "5h05m");
    assert_eq!(compact_duration(130 * 3600), "130h00m");
    assert_eq!(compact_duration(u64::MAX), "5124095576030431h00m");
}

#[test]
fn queue_status_json_has_the_contract_field_names() {
    let q = parse_queue(
        "c/a.yaml t 20\nc/b.yaml t 20\nc/c.yaml t 20\n",
        "queue_a.txt",
    )
    .expect("queue");
    let listing = parse_final_listing("9\t1714650000\ta/best.pth\n9\t1714650000\ta/metrics.json\n");
    let host = HostQueue {
        host: "gpu-a",
        presence: Presence::Up,
        queue: &q,
        listing: &listing,
        running: Some(1),
        run_alive: true,
        start_index: None,
        verified: None,
    };
    let roster = reconcile(&[host], &RosterOptions::default());
    let progress = Progress {
        epoch: Some((3, 20)),
        step: Some((450, 1000)),
        fraction: Some(0.5),
    };
    let status = QueueStatus::new(&roster.hosts[0], &q, Some(progress), Some(3600));
    let v = serde_json::to_value(&status).expect("serialises");
    assert_eq!(
        v,
        json!({
            "file": "queue_a.txt", "total": 3, "done": 1, "running": 1, "pending": 1, "failed": 0,
            "current": {
                "index": 1, "name": "b",
                "progress": {"epoch": [3, 20], "step": [450, 1000], "fraction": 0.5},
                "eta_secs": 3600
            },
            "resume_index": null
        })
    );
}

#[test]
fn killed_queue_status_has_resume_index_and_no_current() {
    let q = parse_queue("# header\nc/a.yaml t 20\nc/b.yaml t 20\n", "queue_a.txt").expect("queue");
    let listing = FinalListing::default();
    let host = HostQueue {
        host: "gpu-a",
        presence: Presence::Up,
        queue: &q,
        listing: &listing,
        running: Some(0),
        run_alive: false,
        start_index: None,
        verified: None,
    };
    let roster = reconcile(&[host], &RosterOptions::default());
    let status = QueueStatus::new(&roster.hosts[0], &q, None, Some(60));
    assert_eq!(status.current, None);
    assert_eq!(
        status.resume_index,
        Some(1),
        "start_index units: the comment line counts"
    );
    assert_eq!((status.failed, status.pending), (1, 1));
}
