//! The round trips a pull waits for, on a far box. On a 100 ms link each one is a tenth of a
//! second of every pull: a checkpoint's pull waited for its SFTP handle's close to be answered,
//! then asked the box for its second look at the file. The look now follows the file's hash on
//! the box, in the hashing's own command, while the copy still runs; the close is sent and not
//! waited for. The whole pull's count is the delay proxy's (`DelayProxy::rounds`).

mod support;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rigwatch::config::fleet;
use rigwatch::pull::Progress;
use support::Lab;
use support::delay::DelayProxy;
use support::results::{
    box_to_pull, pull_box, pull_fleet_via, pull_on, pull_while_listing_stalls, write_small,
};

/// The box's own record of a pull of one checkpoint over a 200 ms link: sftp-server logs the
/// file's open and close, a `find` shim each second look (`find … -maxdepth 0`), all appended
/// to one log in the order they happened. The look comes before the close, so nothing is asked
/// after the copy's last read: the hash (16 MiB, a few ms on the box) and its look end while the
/// copy's reads still cross the link (at least two round trips, 0.4 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_s_second_look_is_asked_while_it_is_copied_not_after() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    let events = sshd.dir.join("events.log");
    sshd.external_sftp_logging(&events);
    sshd.shim_script(
        "find",
        &format!(
            "#!/bin/sh\ncase \" $* \" in *' -maxdepth 0 '*) echo look >> '{}';; esac\n\
             PATH=/usr/local/bin:/usr/bin:/bin exec find \"$@\"\n",
            events.display()
        ),
    );
    let ckpt = sshd.dir.join("workspace/run/final_ckpts/ckpt.bin");
    support::write_random(&ckpt, 16 << 20, 5);
    let proxy = support::delay::DelayProxy::start(sshd.port, Duration::from_millis(100));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry_via(&sshd, proxy.port),
        ckpt.parent().expect("folder").display(),
        lab.path("results/box").display()
    );
    let config = fleet::load(&lab.fleet("far.toml", "", &[("box", body)])).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let record = pull_on(&session, &spec, None).await;
    // The close is sent, not waited for: it reaches the box half a round trip later.
    let name = ckpt.display().to_string();
    let read = || std::fs::read_to_string(&events).unwrap_or_default();
    let closed = || read().contains(&format!("close \"{name}\""));
    support::wait_until(Duration::from_secs(10), closed).await;
    pool.shutdown().await;

    let log = read();
    assert!(
        record.files.iter().all(|f| f.is_good()),
        "{record:?}\n{log}"
    );
    assert_eq!(record.files.len(), 1, "{record:?}");
    let seen: Vec<&str> = log
        .lines()
        .filter_map(|l| match l {
            "look" => Some("look"),
            _ if l.contains(&format!("close \"{name}\"")) => Some("close"),
            _ if l.contains(&format!("open \"{name}\"")) => Some("open"),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen.iter().filter(|e| **e == "look").count(),
        1,
        "one second look at the checkpoint:\n{log}"
    );
    assert_eq!(
        seen.last(),
        Some(&"close"),
        "the box was asked something after the copy ended:\n{log}"
    );
}

/// A far box with `cells` small results and one 4 MiB checkpoint (within one window of reads
/// in flight), behind a proxy 200 ms round trip away that counts the round trips a
/// conversation waits for in sequence (`DelayProxy::rounds`): the box, the proxy and a fleet
/// file that pulls its results.
fn far_box(lab: &mut Lab, cells: usize) -> (support::Sshd, DelayProxy, PathBuf) {
    let mut sshd = lab.start_host("box");
    sshd.external_sftp();
    let run = sshd.dir.join("workspace/run");
    write_small(&run, cells);
    support::write_random(&run.join("final_ckpts/ckpt.bin"), 4 << 20, 9);
    let proxy = DelayProxy::start(sshd.port, Duration::from_millis(100));
    let folder = run.join("final_ckpts");
    let check = Some("test -s {file}");
    let fleet = pull_fleet_via(lab, (&sshd, proxy.port), &folder, check, "far.toml");
    (sshd, proxy, fleet)
}

/// Round trips in sequence are what a far link multiplies by its delay (a tenth of a second
/// each at 100 ms), so each is counted here and a new one shows. On a connection already up
/// (the dashboard's `p`), a pull of small files and a checkpoint waits for 3: the listing; the
/// tar batch and the checkpoint's SFTP open, sent side by side (its hash and second look go in
/// the same round); the checkpoint's reads, all in flight at once. A fresh `rigwatch pull`
/// waits for 8 more before it: the SSH handshake and login (TCP's own, before the proxy, not
/// counted), then the helper shell and the SFTP channel, opened side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_waits_for_few_round_trips_in_sequence() {
    let mut lab = Lab::new();
    let (_sshd, proxy, fleet) = far_box(&mut lab, 20);
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let up = proxy.rounds();
    let record = pull_on(&session, &spec, None).await;
    let warm = proxy.rounds() - up;
    pool.shutdown().await;
    assert_eq!(record.files.len(), 21, "{record:?}");
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    assert!(
        warm <= 3,
        "a pull on a connection up waited for {warm} round trips"
    );

    let mut lab = Lab::new();
    let (_sshd, proxy, fleet) = far_box(&mut lab, 20);
    let said = pull_box(&lab, &fleet);
    assert!(
        said.contains("pull #1 of box") && said.contains("21 files"),
        "{said}"
    );
    let cold = proxy.rounds();
    assert!(
        cold <= 11,
        "a fresh `rigwatch pull` waited for {cold} round trips"
    );
}

/// A checkpoint's first bytes need not wait for its SFTP handle: a first piece of it goes to the
/// box's shell (`dd` from byte 0) beside the open, so on a connection up it arrives one round
/// trip after the listing, where the reads that need the handle arrive two after it. On a
/// 100 ms link that is a tenth of a second of every pull, a third of what a 256 MiB pull spends
/// waiting. Counted by the proxy: the bytes handed to the client at each depth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_s_first_bytes_come_beside_its_open_not_after_it() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    sshd.external_sftp();
    let folder = sshd.dir.join("workspace/run/final_ckpts");
    support::write_random(&folder.join("ckpt.bin"), 16 << 20, 3);
    let proxy = DelayProxy::start(sshd.port, Duration::from_millis(50));
    let check = Some("test -s {file}");
    let fleet = pull_fleet_via(&lab, (&sshd, proxy.port), &folder, check, "far.toml");
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let up = proxy.newest_rounds();
    let before = proxy.newest_bytes_by_depth();
    let record = pull_on(&session, &spec, None).await;
    let after = proxy.newest_bytes_by_depth();
    pool.shutdown().await;
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let came = |depth: u32| {
        after.get(&depth).copied().unwrap_or(0) - before.get(&depth).copied().unwrap_or(0)
    };
    // Depth up + 1: the listing (and the ping); up + 2: the open's answer, the box's hash, and
    // now the first piece; up + 3: the reads.
    let early: u64 = (up + 1..=up + 2).map(came).sum();
    assert!(
        early >= 1 << 20,
        "{early} bytes came within two round trips of the pull's start: {after:?} (from depth {up})"
    );
}

/// The first piece goes to the box's shell only once the box has listed: while its `find` still
/// runs there (a big tree's listing, whose first chunk is copied as it comes), a piece would
/// wait behind it and the copy's first bytes with it. Here the listing stalls in its second
/// pull path (its `readlink` of a glob waits for a file the test writes, at most 20 s) while
/// the first path's checkpoint is copied; no `dd` runs on the box in the whole pull.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_first_piece_is_asked_while_the_box_still_lists() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    sshd.external_sftp();
    let run = sshd.dir.join("workspace/run");
    support::write_random(&run.join("final_ckpts/ckpt.bin"), 8 << 20, 4);
    std::fs::write(run.join("metrics.jsonl"), "{}\n").expect("metrics");
    let dds = sshd.dir.join("dd.log");
    sshd.shim_script(
        "dd",
        &format!(
            "#!/bin/sh\necho \"dd $*\" >> '{}'\nPATH=/usr/local/bin:/usr/bin:/bin exec dd \"$@\"\n",
            dds.display()
        ),
    );
    let proxy = DelayProxy::start(sshd.port, Duration::from_millis(50));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\", \"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry_via(&sshd, proxy.port),
        run.join("final_ckpts").display(),
        run.join("*.jsonl").display(),
        lab.path("results/box").display()
    );
    let config = fleet::load(&lab.fleet("far.toml", "", &[("box", body)])).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let copied = |p: &Progress| p.bytes_done.load(Ordering::Relaxed) >= 8 << 20;
    let (record, while_listing) =
        pull_while_listing_stalls((&sshd, &session), &spec, None, copied).await;
    pool.shutdown().await;
    assert!(
        while_listing.is_some(),
        "the checkpoint was not copied while the box listed"
    );
    assert_eq!(record.files.len(), 2, "{record:?}");
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let ran = std::fs::read_to_string(&dds).unwrap_or_default();
    assert!(
        ran.is_empty(),
        "a piece was asked while the box listed:\n{ran}"
    );
}
