//! A pull's memory against its file count, measured by this test binary's own allocator
//! (dhat's count of heap bytes): a pull of many
//! small files from a real sshd must not hold per-file state beyond a small record each.

mod support;

use support::Lab;
use support::results::{Way, peak_per_file};

// dhat counts every allocation of this test binary (its heap, not RSS: the same figure on
// every run and machine), without unsafe code here.
#[global_allocator]
static HEAP: dhat::Alloc = dhat::Alloc;

fn heap() -> (usize, usize) {
    let now = dhat::HeapStats::get();
    (now.curr_bytes, now.max_bytes)
}

/// 8 192 and then 16 384 files, with every record kept: both past the three chunks a pull works
/// on at once, each with every tar batch slot busy, so what the extra 8 192 cost at the peak is
/// what the pull holds of each file to its end (0–460 B a file measured, the records kept; the
/// peak, 22–26 MB, is the three chunks in hand). (It was 4 096 and 8 192 while two chunks were in
/// hand; with three, 4 096 files never had a third chunk in flight and 8 192 did, and the pair
/// differed by a whole chunk: 1 747 B a file. Before that 1 024 and 2 048, while a batch held
/// 256 files.) Before the finishing stage made its per-file work as it went, every file's
/// waiting finish was built up front (about 3 KiB each: 100 000 files peaked at 522 MB of RSS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pulls_peak_memory_per_file_is_a_small_record() {
    let _heap = dhat::Profiler::builder().testing().build();
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let per_file = peak_per_file(&lab, &sshd, (8_192, 16_384), Way::Kept, heap).await;
    assert!(per_file < 1536, "a pull's peak grew {per_file} B per file");
}
