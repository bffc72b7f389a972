//! The demo's sweep: `h100-train` runs a learning-rate sweep with `run_queue.sh`, so `R` (the
//! roster), the QUEUE column and the detail's queue show cells. Its probe sections are what the
//! live probe prints for such a box: the queue file, `final_dir` listed two levels deep, the
//! `run_queue.sh` process and the newest cell log, read through the same parsers.

use chrono::{DateTime, Utc};

use crate::config::QueueConfig;

/// The box that runs the sweep.
pub const HOST: &str = "h100-train";
const FILE: &str = "/root/sweep/queue.txt";
const FINAL_DIR: &str = "/workspace/final";
/// Epochs each cell trains for.
const EPOCHS: u32 = 30;
/// Minutes one epoch takes, so the running cell moves on while the demo runs.
const EPOCH_MINUTES: i64 = 3;

/// The queue's keys as fleet.toml would give them.
pub fn config() -> QueueConfig {
    QueueConfig {
        file: FILE.into(),
        final_dir: FINAL_DIR.into(),
        cell_log: Some("/root/logs/{name}.log".into()),
        progress: Vec::new(),
    }
}

/// The queue file: a comment, then six cells; the first two are done, the third runs.
fn queue_file() -> String {
    let mut text = String::from("# ViT-B/16 on imagenet-100: learning rate, then weight decay\n");
    for cfg in [
        "vit_lr1e-3",
        "vit_lr3e-4",
        "vit_lr1e-4",
        "vit_lr3e-5",
        "vit_wd0.1",
        "vit_wd0.05",
    ] {
        text.push_str(&format!("configs/{cfg}.yaml cls {EPOCHS}\n"));
    }
    text
}

/// The probe's queue sections at `at`, the sweep having started its running cell at `started`.
pub fn sections(at: DateTime<Utc>, started: DateTime<Utc>) -> Vec<(&'static str, String, i32)> {
    let done = |name: &str, at: i64| {
        format!("214748364\t{at}\t./{name}/best.pth\n48213\t{at}\t./{name}/metrics.json\n")
    };
    let finished = (started - chrono::Duration::minutes(40)).timestamp();
    let listing = format!(
        "{}{}",
        done("vit_lr1e-3", finished - 90 * 60),
        done("vit_lr3e-4", finished)
    );
    let minutes = (at - started).num_minutes().max(0);
    let epoch = (1 + minutes / EPOCH_MINUTES).min(i64::from(EPOCHS));
    let log = format!(
        "{} {} /root/logs/vit_lr1e-4.log\nEpoch {epoch}/{EPOCHS}  loss 1.92  acc 0.541\n",
        4096 + minutes * 310,
        at.timestamp()
    );
    vec![
        ("qfile", queue_file(), 0),
        ("qfinal", listing, 0),
        ("qproc", format!("4121 bash run_queue.sh {FILE} 0\n"), 0),
        ("qlog", log, 0),
    ]
}
