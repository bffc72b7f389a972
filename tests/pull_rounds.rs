//! The round trips a pull waits for, on a far box. On a 100 ms link each one is a tenth of a
//! second of every pull: a checkpoint's pull waited for its SFTP handle's close to be answered,
//! then asked the box for its second look at the file. The look now follows the file's hash on
//! the box, in the hashing's own command, while the copy still runs; the close is sent and not
//! waited for. The whole pull's count is the delay proxy's (`DelayProxy::rounds`).

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rigwatch::config::fleet;
use support::Lab;
use support::delay::DelayProxy;
use support::results::{box_to_pull, pull_box, pull_fleet_via, pull_on, write_small};

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

/// One pull of the box in `fleet` on a connection already up: its record, and the round trips
/// it waited for in sequence (`proxy`'s count).
async fn counted_pull(fleet: &Path, proxy: &DelayProxy) -> (rigwatch::ledger::PullRecord, u32) {
    let config = fleet::load(fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let up = proxy.rounds();
    let record = pull_on(&session, &spec, None).await;
    let waited = proxy.rounds() - up;
    pool.shutdown().await;
    (record, waited)
}

/// Round trips in sequence are what a far link multiplies by its delay (a tenth of a second
/// each at 100 ms), so each is counted here and a new one shows. On a connection already up
/// (the dashboard's `p`), a pull of small files and a checkpoint waits for 2: the listing; the
/// tar batch and the checkpoint's SFTP open with its reads (sent with the handle the server
/// will give it: `transport::handles`), side by side (its hash and second look go in the same
/// round). Before the reads went with the open, they waited for its answer: 3. A fresh `rigwatch pull`
/// waits for 8 more before it: the SSH handshake and login (TCP's own, before the proxy, not
/// counted), then the helper shell and the SFTP channel, opened side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_waits_for_few_round_trips_in_sequence() {
    let mut lab = Lab::new();
    let (_sshd, proxy, fleet) = far_box(&mut lab, 20);
    let (record, warm) = counted_pull(&fleet, &proxy).await;
    assert_eq!(record.files.len(), 21, "{record:?}");
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    assert!(
        warm <= 2,
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
        cold <= 10,
        "a fresh `rigwatch pull` waited for {cold} round trips"
    );
}

/// The round trip of most far boxes here.
const FAR: Duration = Duration::from_millis(100);

/// A box whose SFTP subsystem `sftp` sets up, holding one checkpoint of `mib` MiB (random bytes
/// from `seed`), behind a proxy `rtt` round trip away: the box, the proxy, the checkpoint's
/// folder and a fleet file that pulls it.
fn checkpoint_box(
    lab: &mut Lab,
    sftp: impl FnOnce(&mut support::Sshd),
    (mib, seed, rtt): (u64, u64, Duration),
) -> (support::Sshd, DelayProxy, PathBuf, PathBuf) {
    let mut sshd = lab.start_host("box");
    sftp(&mut sshd);
    let folder = sshd.dir.join("workspace/run/final_ckpts");
    support::write_random(&folder.join("ckpt.bin"), mib << 20, seed);
    let proxy = DelayProxy::start(sshd.port, rtt / 2);
    let check = Some("test -s {file}");
    let fleet = pull_fleet_via(lab, (&sshd, proxy.port), &folder, check, "far.toml");
    (sshd, proxy, folder, fleet)
}

/// A far checkpoint's reads are held by the link and the pace, never by the SSH channel's
/// window. russh tops a window up only once half of it is used, so half of it is what the box
/// may have in flight: at 64 MiB a 16-core machine's 256 MiB pull at 100 ms moved ~310 MiB/s
/// where the link carried 800 (BENCHMARKS.md). Over 400 ms the pace's startup asks ~30, then
/// ~60 MiB, then the rest: a 128 MiB checkpoint comes in 4 round trips in sequence (the
/// listing, the open with its first reads, two rounds of reads); with a 64 MiB window, 6 (32 MiB
/// a round trip once the first 64 were sent). One more is allowed for a round this machine's
/// CPU could not fill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_checkpoint_is_held_by_the_link_not_the_ssh_window() {
    let mut lab = Lab::new();
    let far = (128, 11, Duration::from_millis(400));
    let (_sshd, proxy, _, fleet) = checkpoint_box(&mut lab, support::Sshd::external_sftp, far);
    let (record, waited) = counted_pull(&fleet, &proxy).await;
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    assert!(
        waited <= 5,
        "a 128 MiB pull at 400 ms waited for {waited} round trips in sequence"
    );
}

/// A checkpoint's first bytes need not wait for its SFTP handle: its first reads go with the
/// open, named by the handle the server will give (`transport::handles`), so on a connection
/// up they arrive one round trip after the listing, where reads sent on the open's answer
/// arrive two after it. On a 100 ms link that is a tenth of a second of every pull, a third of
/// what a 256 MiB pull spends waiting. Counted by the proxy: the bytes handed to the client at
/// each depth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_s_first_bytes_come_beside_its_open_not_after_it() {
    let mut lab = Lab::new();
    let (_sshd, proxy, _, fleet) =
        checkpoint_box(&mut lab, support::Sshd::external_sftp, (16, 3, FAR));
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
    // now the first reads; up + 3: the reads asked as they are answered.
    let early: u64 = (up + 1..=up + 2).map(came).sum();
    assert!(
        early >= 1 << 20,
        "{early} bytes came within two round trips of the pull's start: {after:?} (from depth {up})"
    );
}

/// The reads go with the open only where the server is OpenSSH's (it says `limits@openssh.com`),
/// whose handles are known beforehand and whose requests are answered in order. Green End's
/// server answers on threads of its own and names handles otherwise: its reads wait for the
/// open's answer (3 round trips where OpenSSH's takes 2), and the pull is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_wait_for_the_open_on_a_server_whose_handles_are_not_known() {
    let mut lab = Lab::new();
    let (_sshd, proxy, folder, fleet) =
        checkpoint_box(&mut lab, support::Sshd::greenend_sftp, (4, 5, FAR));
    let (record, warm) = counted_pull(&fleet, &proxy).await;
    assert_eq!(record.files.len(), 1, "{record:?}");
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let pulled = std::fs::read(&record.files[0].local_path).expect("pulled");
    let sent = std::fs::read(folder.join("ckpt.bin")).expect("sent");
    assert!(pulled == sent, "the pulled checkpoint differs");
    assert_eq!(warm, 3, "round trips in sequence");
}

/// The server's read size (`limits@openssh.com`) is asked as the connection's SFTP channel
/// opens, so a copy's first reads, sent with its open before any answer, are of that size
/// (255 KiB on OpenSSH 8.9+), not the 64 KiB every server answers whole: four times the
/// requests in the first round trip otherwise. sftp-server logs each read it is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_reads_are_of_the_server_s_own_size() {
    let mut lab = Lab::new();
    let events = lab.path("sftp.log");
    let logging = |sshd: &mut support::Sshd| sshd.external_sftp_logging_at(&events, "DEBUG");
    let (_sshd, _proxy, _, fleet) = checkpoint_box(&mut lab, logging, (8, 6, FAR));
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let record = pull_on(&session, &spec, None).await;
    pool.shutdown().await;
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let log = std::fs::read_to_string(&events).expect("sftp-server's log");
    let reads: Vec<&str> = log.lines().filter(|l| l.contains(": read ")).collect();
    assert!(reads.len() >= 8, "{log}");
    let small = reads.iter().filter(|l| l.ends_with("len 65536")).count();
    assert_eq!(
        small,
        0,
        "{small} of {} reads of 64 KiB:\n{log}",
        reads.len()
    );
}

/// A server that refused the SFTP subsystem (no `Subsystem sftp` line) refuses it for the
/// connection's life: sshd keeps the configuration it started with. The connection remembers,
/// so a pull from a box without SFTP, on a connection up, waits for 2 round trips (the listing,
/// the checkpoint's piece), not for the subsystem asked and refused again first (3: a round
/// trip more before the first piece could go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_box_that_refused_sftp_is_not_asked_again_on_its_connection() {
    let mut lab = Lab::new();
    let (_sshd, proxy, folder, fleet) =
        checkpoint_box(&mut lab, support::Sshd::without_sftp, (4, 7, FAR));
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let first = pull_on(&session, &spec, None).await;
    assert!(first.files.iter().all(|f| f.is_good()), "{first:?}");
    // The run writes a new checkpoint in its place: the next pull copies it again.
    support::write_random(&folder.join("ckpt.bin"), 4 << 20, 8);
    let up = proxy.rounds();
    let again = pull_on(&session, &spec, Some(&first)).await;
    let warm = proxy.rounds() - up;
    pool.shutdown().await;
    assert_eq!(again.files.len(), 1, "{again:?}");
    assert!(again.files.iter().all(|f| f.is_good()), "{again:?}");
    assert_eq!(again.files[0].sent, 4 << 20, "{again:?}");
    assert!(
        warm <= 2,
        "a pull on the connection up waited for {warm} round trips"
    );
}

/// A box whose sftp-server is not installed still grants the subsystem (its `Subsystem` line
/// names the missing program, as a minimal Debian image's does): the pull goes over exec as
/// soon as the program ends, not at the init's timeout, and the connection does not remember
/// that failure: installed since, the next pull on the same connection copies over SFTP
/// (sftp-server's log names the checkpoint's open).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sftp_server_installed_while_connected_is_used_by_the_next_pull() {
    let mut lab = Lab::new();
    let program = lab.path("box-bin/sftp-server");
    let log = lab.path("sftp.log");
    let missing = |sshd: &mut support::Sshd| sshd.sftp_program(&program);
    let (_sshd, _proxy, folder, fleet) = checkpoint_box(&mut lab, missing, (4, 9, FAR));
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let began = std::time::Instant::now();
    let first = pull_on(&session, &spec, None).await;
    let took = began.elapsed();
    assert!(first.files.iter().all(|f| f.is_good()), "{first:?}");
    // Not a speed bound: the subsystem's init has a minute's timeout, which this must not wait
    // for (it did: 59.9 s here, russh-sftp leaving the init unanswered at the stream's end).
    assert!(
        took < Duration::from_secs(30),
        "the first pull took {took:?}"
    );
    std::fs::create_dir_all(program.parent().expect("folder")).expect("bin");
    let script = format!(
        "#!/bin/sh\nexec /usr/lib/openssh/sftp-server -e -l INFO 2>>'{}'\n",
        log.display()
    );
    std::fs::write(&program, script).expect("sftp-server");
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("mode");
    support::write_random(&folder.join("ckpt.bin"), 4 << 20, 10);
    let again = pull_on(&session, &spec, Some(&first)).await;
    pool.shutdown().await;
    assert!(again.files.iter().all(|f| f.is_good()), "{again:?}");
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        said.contains("ckpt.bin"),
        "no SFTP open on the box: {said:?}"
    );
}
