//! The login shells a pull costs the box, counted by a line in the box's `~/.bashrc` (sshd runs
//! the login shell for every channel; conda's block there costs 0.15–0.26 s of the box's CPU
//! each time): one helper shell per connection, shared by every pull over it, started as the
//! host connects where the front end pulls, never by monitoring alone. The SFTP channel
//! (sftp-server, which sshd starts through the login shell too) is kept the same way.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::ledger::PullRecord;
use rigwatch::transport::{BoxExec, ExecLimits, OneShell, Pool, TransportError};
use support::Lab;
use support::results::{box_to_pull, pull_fleet, pull_on, write_small};

const SETTLE: Duration = Duration::from_secs(30);

/// A box whose login shell logs the first line of what it was started for, and its fleet.
fn logging_box(lab: &mut Lab) -> (support::Sshd, PathBuf, PathBuf) {
    let sshd = lab.start_host("box");
    let log = sshd.log_login_shells();
    let run = sshd.dir.join("workspace/run");
    write_small(&run, 40);
    let dest = lab.path("results/box");
    let fleet = pull_fleet(lab, &sshd, &run, &dest);
    (sshd, fleet, log)
}

/// The helper shells (`exec sh`) the box's log shows so far.
fn helpers(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == "exec sh")
        .count()
}

/// The sftp-servers (each started through the login shell) the box's log shows so far.
fn sftp_servers(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("sftp-server"))
        .count()
}

/// As `logging_box`, with sftp-server a program of its own (a real box's, run through the login
/// shell) and a checkpoint too big for a tar batch, which goes over SFTP. Returns its path too.
fn logging_box_with_sftp(lab: &mut Lab) -> (support::Sshd, PathBuf, PathBuf, PathBuf) {
    let (mut sshd, fleet, log) = logging_box(lab);
    sshd.external_sftp();
    let ckpt = sshd.dir.join("workspace/run/final_ckpts/ckpt.bin");
    support::write_random(&ckpt, 4 << 20, 1);
    (sshd, fleet, log, ckpt)
}

/// The checkpoint came home whole in `record`, sent in full.
fn assert_ckpt_sent(record: &PullRecord) {
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let ckpt = record
        .files
        .iter()
        .find(|f| f.remote_path.ends_with(".bin"));
    assert_eq!(ckpt.map(|f| f.sent), Some(4 << 20), "{record:?}");
}

/// The box started `n` sftp-servers, its log shown where it did not.
fn assert_sftp_servers(log: &Path, n: usize) {
    let log_text = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(sftp_servers(log), n, "login shells:\n{log_text}");
}

/// The box started `n` helper shells, its log shown where it did not.
fn assert_helpers(log: &Path, n: usize) {
    let log_text = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(helpers(log), n, "login shells:\n{log_text}");
}

/// Two pulls over one connection (the dashboard's `p` pressed twice) start the box's login
/// shell for their commands once: the helper lives as long as the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pulls_on_one_connection_start_its_helper_shell_once() {
    let mut lab = Lab::new();
    let (_sshd, fleet, log) = logging_box(&mut lab);
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let first = pull_on(&session, &spec, None).await;
    assert!(first.files.iter().all(|f| f.is_good()), "{first:?}");
    let again = pull_on(&session, &spec, Some(&first)).await;
    assert!(again.files.iter().all(|f| f.is_good()), "{again:?}");
    pool.shutdown().await;
    assert_helpers(&log, 1);
}

/// A front end that pulls starts each pull host's helper and opens its SFTP channel as the host
/// connects, so `p` does not wait for the box's login shell; watching alone starts neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_that_pulls_starts_the_helper_and_sftp_as_the_host_connects_and_watching_neither() {
    let mut lab = Lab::new();
    let (_sshd, fleet, log, _) = logging_box_with_sftp(&mut lab);
    let config = fleet::load(&fleet).expect("fleet");

    let watching = Pool::start(&config);
    let states = watching.settle(SETTLE).await;
    let session = watching.get("box").and_then(|l| l.session());
    assert!(session.is_some(), "{states:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    watching.shutdown().await;
    assert_eq!(helpers(&log), 0, "a watching pool started a shell");
    assert_eq!(sftp_servers(&log), 0, "a watching pool opened SFTP");

    let pulling = Pool::start_for_pulls(&config);
    pulling.settle(SETTLE).await;
    let began = Instant::now();
    let warm = || helpers(&log) == 1 && sftp_servers(&log) == 1;
    while !warm() && began.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pulling.shutdown().await;
    assert_eq!(helpers(&log), 1, "no helper started as the host connected");
    assert_sftp_servers(&log, 1);
}

/// A box without SFTP sends each checkpoint as a `tail` stream on the helper, which the copy
/// stops at the file's last listed byte: the command ends then, so the helper serves the next
/// file instead of being replaced (a login shell per file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_from_a_box_without_sftp_share_one_helper_shell() {
    let mut lab = Lab::new();
    let (mut sshd, fleet, log) = logging_box(&mut lab);
    sshd.without_sftp();
    let run = sshd.dir.join("workspace/run");
    for i in 0..3 {
        let ckpt = run.join(format!("final_ckpts/ckpt{i}.bin"));
        support::write_random(&ckpt, 2 << 20, i);
    }
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let record = pull_on(&session, &spec, None).await;
    pool.shutdown().await;
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let ckpts = record
        .files
        .iter()
        .filter(|f| f.remote_path.ends_with(".bin"));
    assert_eq!(ckpts.map(|f| f.sent).sum::<u64>(), 3 * (2 << 20));
    assert_helpers(&log, 1);
}

/// Two pulls of a changed checkpoint over one connection open its SFTP channel once: the
/// channel, like the helper, lives as long as the connection, so the second `p` waits for no
/// sftp-server (the box's login shell and four round trips).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pulls_on_one_connection_open_its_sftp_channel_once() {
    let mut lab = Lab::new();
    let (_sshd, fleet, log, ckpt) = logging_box_with_sftp(&mut lab);
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let first = pull_on(&session, &spec, None).await;
    assert_ckpt_sent(&first);
    support::write_random(&ckpt, 4 << 20, 2);
    let again = pull_on(&session, &spec, Some(&first)).await;
    pool.shutdown().await;
    assert_ckpt_sent(&again);
    assert_sftp_servers(&log, 1);
}

/// A kept SFTP channel whose sftp-server has ended (killed, or crashed on the box) is not handed
/// to the next pull: that pull opens another and brings the checkpoint home.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_after_the_box_ended_its_sftp_server_opens_another() {
    let mut lab = Lab::new();
    let (sshd, fleet, log, ckpt) = logging_box_with_sftp(&mut lab);
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let first = pull_on(&session, &spec, None).await;
    assert_ckpt_sent(&first);
    let servers = || -> Vec<u32> {
        let all = sshd.cpu_breakdown().into_iter();
        all.filter(|(_, cmd, _)| cmd.contains("sftp-server"))
            .map(|(pid, _, _)| pid)
            .collect()
    };
    let pids = servers();
    assert_eq!(pids.len(), 1, "{:?}", sshd.cpu_breakdown());
    let killed = std::process::Command::new("kill")
        .arg(pids[0].to_string())
        .status()
        .expect("kill");
    assert!(killed.success());
    let began = Instant::now();
    while !servers().is_empty() && began.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(servers().is_empty(), "sftp-server still runs");
    support::write_random(&ckpt, 4 << 20, 2);
    let again = pull_on(&session, &spec, Some(&first)).await;
    pool.shutdown().await;
    assert_ckpt_sent(&again);
    assert_sftp_servers(&log, 2);
}

/// A pull dropped mid-copy (the dashboard's pull cancelled, `rigwatch pull` interrupted)
/// leaves no file open on the box: the SFTP channel is the connection's and outlives the pull,
/// so a handle left open would hold a descriptor in its sftp-server for as long as the host is
/// watched, one more each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_dropped_mid_copy_leaves_no_file_open_on_the_box() {
    let mut lab = Lab::new();
    let (sshd, _, _log, ckpt) = logging_box_with_sftp(&mut lab);
    support::write_random(&ckpt, 64 << 20, 3);
    // A link of 20 ms round trips: the copy is still under way when it is dropped.
    let proxy = support::delay::DelayProxy::start(sshd.port, Duration::from_millis(10));
    let run = sshd.dir.join("workspace/run");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry_via(&sshd, proxy.port),
        run.join("final_ckpts").display(),
        lab.path("results/box").display()
    );
    let config = fleet::load(&lab.fleet("slow.toml", "", &[("box", body)])).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let progress = std::sync::Arc::new(rigwatch::pull::Progress::default());
    let pulling = {
        let (session, spec, progress) = (session.clone(), spec.clone(), progress.clone());
        tokio::spawn(async move {
            let job = rigwatch::pull::PullJob::of("box", &spec, None);
            rigwatch::pull::pull(&session, &job, progress).await
        })
    };
    let began = Instant::now();
    while progress
        .bytes_done
        .load(std::sync::atomic::Ordering::Relaxed)
        < 4 << 20
    {
        assert!(began.elapsed() < SETTLE, "the copy never began");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    pulling.abort();
    assert!(
        pulling.await.is_err_and(|e| e.is_cancelled()),
        "the pull ended first"
    );
    // What holds the checkpoint open on the box, once its close has had time to cross.
    let holders = || -> Vec<String> {
        let pids = sshd.cpu_breakdown().into_iter().map(|(pid, _, _)| pid);
        pids.flat_map(|pid| {
            let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten();
            fds.flatten()
                .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == ckpt))
                .map(move |fd| format!("{pid}: {}", fd.path().display()))
                .collect::<Vec<_>>()
        })
        .collect()
    };
    let waited = Instant::now();
    while !holders().is_empty() && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = holders();
    // The next pull over the same connection (`p` pressed again) resumes and brings it home.
    let again = pull_on(&session, &spec, None).await;
    pool.shutdown().await;
    assert!(left.is_empty(), "still open on the box: {left:?}");
    assert!(again.files.iter().all(|f| f.is_good()), "{again:?}");
    let ckpt = again.files.iter().find(|f| f.remote_path.ends_with(".bin"));
    assert!(ckpt.is_some_and(|f| f.sent < 64 << 20), "{ckpt:?}");
}

/// A command that runs past its clock leaves the shared helper: the next command gets a new
/// one at once instead of waiting behind the one still running on the box.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_past_its_clock_leaves_the_helper_to_the_next_one() {
    let mut lab = Lab::new();
    let (_sshd, fleet, log) = logging_box(&mut lab);
    let config = fleet::load(&fleet).expect("fleet");
    let pool = Pool::start(&config);
    pool.settle(SETTLE).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    let shell = OneShell::new(&session);
    let limits = |secs| ExecLimits {
        timeout: Duration::from_secs(secs),
        max_output: 4096,
    };
    let hung = shell.exec("sleep 60", limits(1)).await;
    assert!(
        matches!(hung, Err(TransportError::Timeout { .. })),
        "{hung:?}"
    );
    let began = Instant::now();
    let next = shell.exec("echo ok", limits(20)).await.expect("echo");
    assert_eq!(next.stdout, b"ok\n");
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "waited {:?} behind the hung command",
        began.elapsed()
    );
    // A second pull's shell over the same connection is the new helper, not a third.
    let later = OneShell::new(&session)
        .exec("echo again", limits(20))
        .await
        .expect("echo");
    assert_eq!(later.stdout, b"again\n");
    assert_eq!(helpers(&log), 2, "the hung helper and its successor");
    pool.shutdown().await;
}
