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

/// The heap one box's history holds at each of `marks` (seconds), fed a reading every 2 s: the
/// host reading always, the GPU reading where the box has GPUs.
fn held_at(gpus: &[GpuSample], host: &HostSample, marks: &[i64]) -> Vec<usize> {
    let from = DateTime::<Utc>::UNIX_EPOCH;
    let before = dhat::HeapStats::get().curr_bytes;
    let mut history = HostHistory::default();
    let mut held = Vec::new();
    let mut s = 0;
    for &mark in marks {
        while s < mark {
            let at = from + Duration::seconds(s);
            let gpu = (!gpus.is_empty()).then(|| GpuReading {
                at,
                gpus: gpus.to_vec(),
            });
            let sample = host.clone();
            history.extend(gpu, Some(HostReading { at, sample }));
            s += 2;
        }
        held.push(dhat::HeapStats::get().curr_bytes - before);
    }
    drop(history);
    held
}

fn kib(held: &[usize]) -> Vec<usize> {
    held.iter().map(|b| b / 1024).collect()
}

#[test]
fn a_boxs_history_stops_growing_once_its_rings_are_full() {
    let _heap = dhat::Profiler::builder().testing().build();
    let hours = [3600, 7200, 3 * 3600, 4 * 3600];
    let loaded = held_at(&gpus(), &host(), &hours);
    eprintln!(
        "one 8-GPU box's history after 1, 2, 3, 4 h: {:?} KiB; 200 boxes: {} MiB",
        kib(&loaded),
        (loaded[3] * 200) >> 20
    );
    // The older tiers span two hours behind the recent ones (5 minutes of GPU readings).
    assert!(
        loaded[1] > loaded[0],
        "the rings fill in the first two hours: {:?}",
        kib(&loaded)
    );
    assert_eq!(
        loaded[3],
        loaded[2],
        "full rings hold the same at 4 h as at 3 h: {:?}",
        kib(&loaded)
    );
    // Each reading that leaves the recent tier keeps only what judgements read later.
    assert!(
        loaded[3] < 1100 * 1024,
        "an 8-GPU box's two hours: {:?} KiB",
        kib(&loaded)
    );

    // A box like the soak's (no GPU, no log, no run): what its history holds after the soak's
    // 10 minutes, and its level.
    let lab = HostSample {
        gpu_processes: None,
        run_processes: Vec::new(),
        log_tail: Vec::new(),
        ..host()
    };
    let bare = held_at(&[], &lab, &[600, 3 * 3600, 4 * 3600]);
    eprintln!(
        "a box without GPUs after 10 min, 3 h, 4 h: {:?} KiB; 200 boxes at 10 min: {} MiB, \
         level: {} MiB",
        kib(&bare),
        (bare[0] * 200) >> 20,
        (bare[2] * 200) >> 20
    );
    assert_eq!(bare[2], bare[1], "level: {:?}", kib(&bare));
}
