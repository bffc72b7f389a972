//! A pull as the CLI and the dashboard run it (its records into the ledger as it goes) must
//! hold almost nothing per file at its peak: measured by this test binary's own allocator
//! (dhat), apart from `pull_memory` because the allocator's peak is the process's since it
//! began.

mod support;

use support::Lab;
use support::results::{Way, peak_per_file};

#[global_allocator]
static HEAP: dhat::Alloc = dhat::Alloc;

fn heap() -> (usize, usize) {
    let now = dhat::HeapStats::get();
    (now.curr_bytes, now.max_bytes)
}

/// What a recorded pull may hold per file at its peak: a digest of its name and of where it
/// lands (so no file is listed or landed twice), 62 B as measured. The peak of the chunks in
/// hand moves between runs (which of their stages overlap: up to a MB with two chunks, 2–3 MB
/// with three), which the span of files measured below keeps well under the bound; the code
/// before (1 219 B a file) is far past it. Before the listing was spooled and read a chunk at a time and the records went to the ledger as each chunk ended,
/// the listing, every file's copy, hashes, second listing and record were held to the pull's
/// end.
const PER_FILE: usize = 400;

/// 8 192 and then 24 576 files: both past the three chunks a pull works on at once, so what the
/// extra 16 384 cost is what the pull keeps of every file to its end. (6 000 and 12 000 while
/// two chunks were in hand; with three, and tar batches of up to 2 048 files, the peak of the
/// chunks in hand moves by 2–3 MB between runs, which over 6 000 files read as 387–429 B a
/// file.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_pulls_peak_memory_per_file_is_a_few_bytes() {
    let _heap = dhat::Profiler::builder().testing().build();
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let per_file = peak_per_file(&lab, &sshd, (8_192, 24_576), Way::Recorded, heap).await;
    assert!(
        per_file < PER_FILE,
        "a recorded pull's peak grew {per_file} B per file"
    );
}
