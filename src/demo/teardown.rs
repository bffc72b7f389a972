//! The teardown guard on the demo fleet, so a newcomer sees it work: the zombie box (a dead run
//! on vast.ai, VRAM held, billing) has a verified pull on record and the guard accepts its typed
//! name; every other box has none and is refused. Nothing here reads the real ledger, and
//! nothing can run: a demo has no fleet config, hence no destroy command to carry out.

use chrono::{DateTime, Duration, Utc};

use crate::ledger::{PullRecord, PulledFile};
use crate::pull::{Currentness, NotCurrent};

/// The demo box whose results are home.
pub const READY: &str = "h100-zombie";
/// Its vast.ai instance, shown in the plan.
pub const READY_INSTANCE: &str = "21437001";

/// What the guard's check finds for a demo box at `now`: the pull on record, and whether the
/// box still holds exactly what it brought home.
pub fn check(host: &str, now: DateTime<Utc>) -> (Option<PullRecord>, Currentness) {
    if host != READY {
        return (None, Currentness::NotCurrent(vec![NotCurrent::NeverPulled]));
    }
    let finished = now - Duration::minutes(12);
    let file = |path: &str, size: u64, sha: &str| PulledFile {
        remote_path: format!("/workspace/run/{path}"),
        size,
        mtime: (finished - Duration::minutes(30)).timestamp(),
        stamp: Some("demo".into()),
        remote_sha256: Some(sha.into()),
        local_path: format!("~/results/h100-zombie/{path}"),
        local_sha256: Some(sha.into()),
        sent: size,
        verified: true,
        verification: "demo: a replayed record".into(),
        error: None,
        at: finished,
    };
    let files = vec![
        file("ckpt/step_4000.safetensors", 1_073_741_824, "9f2c"),
        file("metrics.jsonl", 48_213, "41ab"),
        file("config.yaml", 812, "07de"),
    ];
    let bytes = files.iter().map(|f| f.size).sum();
    let record = PullRecord {
        id: 7,
        host: host.into(),
        started: finished - Duration::minutes(3),
        finished,
        paths: vec!["/workspace/run".into()],
        unmatched: Vec::new(),
        instance_id: Some(READY_INSTANCE.into()),
        files,
        local_disk_full: false,
    };
    let current = Currentness::Current {
        pull_id: record.id,
        files: record.files.len(),
        bytes,
        fingerprint: 0,
    };
    (Some(record), current)
}
