//! A pull reads the box's listing as it comes: its chunks begin while the box still lists,
//! instead of after the last record. A re-pull of a big tree spent its first half second
//! waiting for `find` on the box with this machine idle, then read the whole listing once more
//! only to count it.

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rigwatch::config::fleet;
use rigwatch::pull::{Progress, PullJob, pull};
use support::Lab;
use support::results::{box_to_pull, hash_logging_box, pull_on, pull_while_listing_stalls};

/// A box with 30 cells under its first pull path and one file matching its second (a glob),
/// pulled once: every file proven, each copy's identity recorded.
async fn pulled_once(
    lab: &mut Lab,
) -> (
    support::Sshd,
    rigwatch::transport::Pool,
    Arc<rigwatch::transport::Session>,
    rigwatch::config::PullConfig,
    rigwatch::ledger::PullRecord,
) {
    let (sshd, _log, _run, fleet) = hash_logging_box(lab, 30);
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let first = pull_on(&session, &spec, None).await;
    assert_eq!(first.files.len(), 31, "{first:?}");
    assert!(first.files.iter().all(|f| f.is_good()), "{first:?}");
    (sshd, pool, session, spec, first)
}

/// The box's listing stalls after the first pull path (its `readlink` of the second, a glob,
/// waits for a file the test writes): the first path's 30 unchanged files are carried by stat,
/// and counted done, while the box is still listing. The stall is bounded (20 s), so on code
/// that waits for the whole listing the test fails rather than hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_pull_carries_unchanged_files_while_the_box_still_lists() {
    let mut lab = Lab::new();
    let (sshd, pool, session, spec, mut first) = pulled_once(&mut lab).await;
    first.id = 7;

    let done = |p: &Progress| p.files_done.load(Ordering::Relaxed) >= 30;
    let (second, while_listing) =
        pull_while_listing_stalls((&sshd, &session), &spec, Some(first), done).await;
    pool.shutdown().await;

    assert!(
        while_listing.is_some(),
        "the first path's 30 files were not done while the box listed"
    );
    assert_eq!(second.files.len(), 31, "{second:?}");
    for f in &second.files {
        assert!(f.is_good(), "{f:?}");
        assert_eq!(f.settled_since, Some(7), "carried by stat: {f:?}");
        assert_eq!(f.sent, 0, "{f:?}");
    }
}

/// The box's shell dies half way through its listing (its `readlink` of the second pull path
/// kills its process group): the pull is an error naming the listing, even though the first
/// path's files were carried meanwhile, never a pull of the files it happened to see.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_that_dies_half_way_fails_the_pull_though_chunks_began() {
    let mut lab = Lab::new();
    let (sshd, pool, session, spec, first) = pulled_once(&mut lab).await;

    sshd.shim_script(
        "readlink",
        "#!/bin/sh\ncase \"$*\" in *.jsonl*) sleep 1; kill -9 0;; esac\n\
         PATH=/usr/local/bin:/usr/bin:/bin exec readlink \"$@\"\n",
    );
    let progress = Arc::new(Progress::default());
    let job = PullJob::of("box", &spec, Some(&first));
    let second = tokio::time::timeout(
        Duration::from_secs(60),
        pull(&session, &job, progress.clone()),
    )
    .await
    .expect("the pull ends");
    pool.shutdown().await;
    let done = progress.files_done.load(Ordering::Relaxed);
    let e = second.expect_err("a pull whose listing died");
    assert!(e.to_string().contains("list"), "{e}");
    assert_eq!(
        done, 30,
        "the first path's files were carried while the box listed"
    );
}
