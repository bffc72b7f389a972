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

/// 1 024 and then 2 048 files, both within one chunk and both with every tar batch slot busy:
/// what the extra 1 024 cost at the peak, per file, with every record kept (what a chunk holds
/// of each of its files while it is copied and finished, and the record: 993 B as measured).
/// Before the finishing stage made its per-file work as it went, every file's waiting finish
/// was built up front (about 3 KiB each: 100 000 files peaked at 522 MB of RSS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pulls_peak_memory_per_file_is_a_small_record() {
    let _heap = dhat::Profiler::builder().testing().build();
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let per_file = peak_per_file(&lab, &sshd, (1_024, 2_048), Way::Kept, heap).await;
    assert!(per_file < 1536, "a pull's peak grew {per_file} B per file");
}
