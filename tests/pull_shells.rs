//! The login shells a pull costs the box, counted by a line in the box's `~/.bashrc` (sshd runs
//! the login shell for every channel; conda's block there costs 0.15–0.26 s of the box's CPU
//! each time): one helper shell per connection, shared by every pull over it, started as the
//! host connects where the front end pulls, never by monitoring alone.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rigwatch::config::{PullConfig, fleet};
use rigwatch::ledger::PullRecord;
use rigwatch::pull::{Progress, PullJob, pull};
use rigwatch::transport::{BoxExec, ExecLimits, OneShell, Pool, Session, TransportError};
use support::Lab;
use support::results::{box_to_pull, pull_fleet, write_small};

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

/// The box started `n` helper shells, its log shown where it did not.
fn assert_helpers(log: &Path, n: usize) {
    let log_text = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(helpers(log), n, "login shells:\n{log_text}");
}

/// One pull of "box" over `session`, against `previous`.
async fn pull_over(
    session: &Session,
    spec: &PullConfig,
    previous: Option<&PullRecord>,
) -> PullRecord {
    let job = PullJob::of("box", spec, previous);
    pull(session, &job, Arc::new(Progress::default()))
        .await
        .expect("pull")
}

/// Two pulls over one connection (the dashboard's `p` pressed twice) start the box's login
/// shell for their commands once: the helper lives as long as the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pulls_on_one_connection_start_its_helper_shell_once() {
    let mut lab = Lab::new();
    let (_sshd, fleet, log) = logging_box(&mut lab);
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let first = pull_over(&session, &spec, None).await;
    assert!(first.files.iter().all(|f| f.is_good()), "{first:?}");
    let again = pull_over(&session, &spec, Some(&first)).await;
    assert!(again.files.iter().all(|f| f.is_good()), "{again:?}");
    pool.shutdown().await;
    assert_helpers(&log, 1);
}

/// A front end that pulls starts each pull host's helper as the host connects, so `p` does not
/// wait for the box's login shell; watching alone starts no shell on the box.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_that_pulls_starts_the_helper_as_the_host_connects_and_watching_starts_none() {
    let mut lab = Lab::new();
    let (_sshd, fleet, log) = logging_box(&mut lab);
    let config = fleet::load(&fleet).expect("fleet");

    let watching = Pool::start(&config);
    watching.settle(SETTLE).await;
    assert!(watching.get("box").and_then(|l| l.session()).is_some());
    tokio::time::sleep(Duration::from_secs(1)).await;
    watching.shutdown().await;
    assert_eq!(helpers(&log), 0, "a watching pool started a shell");

    let pulling = Pool::start_for_pulls(&config);
    pulling.settle(SETTLE).await;
    let began = Instant::now();
    while helpers(&log) == 0 && began.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pulling.shutdown().await;
    assert_eq!(helpers(&log), 1, "no helper started as the host connected");
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
    let record = pull_over(&session, &spec, None).await;
    pool.shutdown().await;
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let ckpts = record
        .files
        .iter()
        .filter(|f| f.remote_path.ends_with(".bin"));
    assert_eq!(ckpts.map(|f| f.sent).sum::<u64>(), 3 * (2 << 20));
    assert_helpers(&log, 1);
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
