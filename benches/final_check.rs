//! The teardown's final check re-hashes every proven file on the box (issue 27). What that
//! costs the box for 10 GiB, in one file and in many, with the command rigwatch runs (openssl
//! per file, as many at once as the box has cores) against what a user would run instead
//! (`sha256sum` over the files, one process).
//! Run: `cargo bench --bench final_check`. Prints a markdown table; BENCHMARKS.md records a run.
//!
//! The files are sparse (their bytes read from the page cache as zeros, with no disk I/O), so
//! the figures are the hashing itself: what the check adds beside a disk's own read speed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rigwatch::pull::remote::big_file_hash_command;

const TOTAL: u64 = 10 << 30;

fn sparse(dir: &Path, count: u64) -> Vec<PathBuf> {
    (0..count)
        .map(|i| {
            let path = dir.join(format!("ckpt{i:03}.bin"));
            let file = std::fs::File::create(&path).expect("create");
            file.set_len(TOTAL / count).expect("size");
            path
        })
        .collect()
}

fn timed(script: &str) -> (Duration, usize) {
    let started = Instant::now();
    let out = Command::new("sh")
        .args(["-c", script])
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = out.stdout.split(|b| *b == 0 || *b == b'\n').count() - 1;
    (started.elapsed(), records)
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!("10 GiB re-hashed on the box ({cores} cores):\n");
    println!("| files | `sha256sum` (what a user runs) | rigwatch's final check | ratio |");
    println!("|---|---|---|---|");
    for count in [1u64, 64] {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = sparse(dir.path(), count);
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let (user, n_user) = timed(&format!("sha256sum -- {}", names.join(" ")));
        let (ours, n_ours) = timed(&big_file_hash_command(&refs));
        assert_eq!((n_user, n_ours), (files.len(), files.len()));
        println!(
            "| {count} × {} MiB | {:.1} s | {:.1} s | {:.1}× |",
            (TOTAL / count) >> 20,
            user.as_secs_f64(),
            ours.as_secs_f64(),
            user.as_secs_f64() / ours.as_secs_f64()
        );
    }
}
