//! What a box's history holds once its rings are full, counted by this test binary's allocator
//! (dhat's heap count, the same on every run): the tiered rings fill for two hours (one host
//! reading a minute, one GPU reading per 30 s) and then stop growing, so a long soak's RSS
//! levels off there (about 1 MiB for an 8-GPU box). Readings are built from the real H100
//! captures.

use chrono::{DateTime, Duration, Utc};
use rigwatch::probe::sample::HostSample;
use rigwatch::probe::{self, GpuSample};
use rigwatch::readings::{GpuReading, HostHistory, HostReading};

#[global_allocator]
static HEAP: dhat::Alloc = dhat::Alloc;

/// A capture's output: the lines between its `$ command` line and its `[exit N]` line.
fn capture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/h100/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    text.lines()
        .filter(|l| !l.starts_with("$ ") && !l.starts_with("[exit "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// An eight-GPU box under load, from the one-GPU capture.
fn gpus() -> Vec<GpuSample> {
    let one = probe::parse_gpu_csv(&capture("q_load_csv.txt")).expect("gpu capture");
    (0..8).flat_map(|_| one.clone()).collect()
}

/// A loaded box's probe-loop reading, with a full log tail and its VRAM holders.
fn host() -> HostSample {
    HostSample {
        gpu_processes: Some(probe::parse_apps_csv(&capture("apps_load.txt")).expect("apps")),
        mounts: probe::parse_df_output(&capture("df_output.txt")).expect("df"),
        uptime: probe::parse_uptime(&capture("proc_uptime.txt")).ok(),
        load: probe::parse_loadavg(&capture("loadavg.txt")).ok(),
        memory: probe::parse_meminfo(&capture("meminfo.txt")).ok(),
        cpus: Some(26),
        boot_id: Some("0f6c41e0-6b5c-4be4-9c84-1e3b3c1f7a42".into()),
        run_processes: probe::parse_pgrep(&capture("pgrep_load.txt")).expect("pgrep"),
        log_tail: (0..15)
            .map(|i| format!("step {i}: loss 0.{i:04} lr 3e-4 {}", "=".repeat(150)))
            .collect(),
        ..Default::default()
    }
}

/// Heap held by one box's history after `hours` of readings every 2 s.
fn held_after(history: &mut HostHistory, from: DateTime<Utc>, secs: std::ops::Range<i64>) {
    let (gpus, host) = (gpus(), host());
    for s in secs.step_by(2) {
        let at = from + Duration::seconds(s);
        history.extend(
            Some(GpuReading {
                at,
                gpus: gpus.clone(),
            }),
            Some(HostReading {
                at,
                sample: host.clone(),
            }),
        );
    }
}

#[test]
fn a_boxs_history_stops_growing_once_its_rings_are_full() {
    let _heap = dhat::Profiler::builder().testing().build();
    let from = DateTime::<Utc>::UNIX_EPOCH;
    let before = dhat::HeapStats::get().curr_bytes;
    let mut history = HostHistory::default();
    let mut held = Vec::new();
    for hour in 0..4 {
        held_after(&mut history, from, hour * 3600..(hour + 1) * 3600);
        held.push(dhat::HeapStats::get().curr_bytes - before);
    }
    let kib: Vec<usize> = held.iter().map(|b| b / 1024).collect();
    eprintln!(
        "one 8-GPU box's history after 1, 2, 3, 4 h: {kib:?} KiB; 200 boxes: {} MiB",
        (held[3] * 200) >> 20
    );
    // The older tiers span two hours behind the recent ones (5 minutes of GPU readings).
    assert!(
        held[1] > held[0],
        "the rings fill in the first two hours: {kib:?}"
    );
    assert_eq!(
        held[3], held[2],
        "full rings hold the same at 4 h as at 3 h: {kib:?}"
    );
    // Each reading that leaves the recent tier keeps only what judgements read later.
    assert!(
        held[3] < 1100 * 1024,
        "an 8-GPU box's two hours: {kib:?} KiB"
    );
}
