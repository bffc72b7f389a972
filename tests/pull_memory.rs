//! A pull's memory against its file count, measured by this test binary's own allocator
//! (dhat's count of heap bytes): a pull of many
//! small files from a real sshd must not hold per-file state beyond a small record each.

mod support;

use std::sync::Arc;

use rigwatch::pull::{Progress, PullJob, pull};
use support::Lab;
use support::results::{box_to_pull, write_cells};

// dhat counts every allocation of this test binary (its heap, not RSS: the same figure on
// every run and machine), without unsafe code here.
#[global_allocator]
static HEAP: dhat::Alloc = dhat::Alloc;

/// The heap's peak during one pull of `count` files, above its level when the pull began.
async fn peak_of_pull(lab: &Lab, sshd: &support::Sshd, count: usize) -> usize {
    let run = lab.path(&format!("run-{count}"));
    write_cells(&run, count, 500);
    let dest = lab.path(&format!("home-{count}"));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n",
        lab.host_entry(sshd),
        run.display(),
        dest.display()
    );
    let config = rigwatch::config::fleet::load(&lab.fleet(
        &format!("fleet-{count}.toml"),
        "",
        &[("box", body)],
    ))
    .expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let before = dhat::HeapStats::get().curr_bytes;
    let record = pull(
        &session,
        &PullJob::of("box", &spec, None),
        Arc::new(Progress::default()),
    )
    .await
    .expect("pull");
    // The heap's highest level so far: the pulls run smallest first, so it is this one's.
    let peak = dhat::HeapStats::get().max_bytes.saturating_sub(before);
    let verified = record.files.iter().filter(|f| f.verified).count();
    assert_eq!(
        verified,
        count,
        "every file pulled: {:?}",
        record.files.iter().find(|f| !f.verified)
    );
    drop(record);
    pool.shutdown().await;
    peak
}

/// 1 000 and then 4 000 files: what the extra 3 000 cost at the peak, per file. Before the
/// finishing stage made its per-file work as it went, every file's waiting finish was built up
/// front (about 3 KiB each: 100 000 files peaked at 522 MB of RSS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pulls_peak_memory_per_file_is_a_small_record() {
    let _heap = dhat::Profiler::builder().testing().build();
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let small = peak_of_pull(&lab, &sshd, 1_000).await;
    let large = peak_of_pull(&lab, &sshd, 4_000).await;
    let per_file = large.saturating_sub(small) / 3_000;
    eprintln!("peak heap: {small} B for 1 000 files, {large} B for 4 000: {per_file} B per file");
    assert!(
        per_file < 1024,
        "a pull's peak grew {per_file} B per file (1 000 files: {small} B, 4 000: {large} B)"
    );
}
