use std::time::Duration;

use chrono::{TimeZone, Utc};

use super::*;

fn row(id: &str, phase: Phase, state: &str) -> JobRow {
    JobRow {
        id: id.into(),
        name: format!("job-{id}"),
        phase,
        state: state.into(),
        reason: None,
        reason_words: None,
        exit: None,
        nodes: Some(1),
        node_list: Some("n1".into()),
        gpus: Some(2),
        elapsed_secs: Some(60),
        limit_secs: Some(3600),
        left: (phase == Phase::Running).then_some(Duration::from_secs(3540)),
        restarts: Some(0),
        restart_limit: None,
        requeue: Some(false),
        walltime: None,
        checkpoint_age_secs: None,
        dangers: Vec::new(),
        gpu_truth: Vec::new(),
        pods: Vec::new(),
    }
}

fn reading(jobs: Vec<JobRow>, error: Option<&str>) -> ClusterReading {
    let mut r = ClusterReading {
        name: "hpc".into(),
        scheduler: Scheduler::Slurm,
        via: "me@login".into(),
        jobs,
        ended_state_unknown: Vec::new(),
        error: error.map(str::to_string),
        read_at: Utc.with_ymd_and_hms(2026, 11, 26, 3, 0, 0).unwrap(),
        quota: None,
    };
    r.judge(r.read_at);
    r
}

#[test]
fn a_running_job_that_leaves_the_queue_is_gone_never_running() {
    let first = reading(
        vec![
            row("1", Phase::Running, "RUNNING"),
            row("2", Phase::Failed, "FAILED"),
        ],
        None,
    );
    let next = reading(Vec::new(), None).merge(Some(&first));
    let one = next.jobs.iter().find(|j| j.id == "1").expect("kept");
    assert_eq!(one.phase, Phase::Gone);
    assert_eq!(one.state, "ENDED?");
    assert!(one.walltime.is_none(), "a gone job has no clock");
    assert_eq!(next.ended_state_unknown, vec!["1".to_string()]);
    let two = next.jobs.iter().find(|j| j.id == "2").expect("kept");
    assert_eq!(two.phase, Phase::Failed, "an end state read stays read");
    assert_eq!(one.severity(), Severity::Warn);
    assert_eq!(two.severity(), Severity::Crit);
}

#[test]
fn a_queue_that_could_not_be_read_keeps_the_last_jobs_as_they_were() {
    let first = reading(vec![row("1", Phase::Running, "RUNNING")], None);
    let next = reading(Vec::new(), Some("hpc: squeue on login: timed out")).merge(Some(&first));
    assert_eq!(next.jobs[0].phase, Phase::Running);
    assert!(next.ended_state_unknown.is_empty());
    assert_eq!(next.severity(), Severity::Warn);
}

#[test]
fn the_walltime_clock_runs_down_between_reads_and_warns_in_the_last_hour() {
    let mut r = reading(vec![row("1", Phase::Running, "RUNNING")], None);
    let left = |r: &ClusterReading| r.jobs[0].walltime.as_ref().and_then(|c| c.remaining_secs);
    assert_eq!(left(&r), Some(3540));
    assert_eq!(r.jobs[0].severity(), Severity::Warn, "59 min left");
    r.judge(r.read_at + chrono::Duration::seconds(3000));
    assert_eq!(left(&r), Some(540));
    assert_eq!(r.jobs[0].severity(), Severity::Crit, "9 min left");
}

#[test]
fn a_checkpoint_older_than_the_walltime_left_is_said_in_the_clock() {
    let mut job = row("1", Phase::Running, "RUNNING");
    job.checkpoint_age_secs = Some(2 * 3600);
    let r = reading(vec![job], None);
    let message = &r.jobs[0].walltime.as_ref().expect("clock").message;
    assert!(message.contains("older than the 59 min left"), "{message}");
}

#[test]
fn summary_says_the_exit_and_the_reason() {
    let mut job = row("2", Phase::Failed, "FAILED");
    job.exit = Some(Exit {
        code: 3,
        signal: None,
    });
    job.reason_words = Some("its script exited with a non-zero code".into());
    assert_eq!(
        job.summary(),
        "FAILED (exit 3): its script exited with a non-zero code"
    );
}

/// Runs `command` as sshd would (`sh -c`), its stdin a pipe held open until `close_after`, or
/// until it ends (None), as a channel that is not closed holds it.
fn run_as_sshd(command: &str, close_after: Option<Duration>) -> (std::process::Output, Duration) {
    use std::os::unix::process::CommandExt as _;
    use std::process::{Command, Stdio};
    let started = std::time::Instant::now();
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("sh");
    let stdin = child.stdin.take();
    let held = match close_after {
        Some(after) => {
            std::thread::sleep(after);
            drop(stdin);
            None
        }
        None => stdin,
    };
    let out = child.wait_with_output().expect("wait");
    drop(held);
    (out, started.elapsed())
}

/// Every login-node command runs under `timeout`, a second inside rigwatch's own limit, its text
/// quoted whole (a `'` in it stays inside), and says what it says with its own status.
#[test]
fn a_login_node_command_is_bounded_there() {
    let cmd = super::bounded("printf '%s' \"it's\"; exit 3", Duration::from_secs(30));
    assert!(cmd.contains("exec timeout -k 2 29 sh -c"), "{cmd}");
    assert!(super::bounded("x", Duration::from_millis(300)).contains("timeout -k 2 1 sh"));
    let (out, _) = run_as_sshd(&cmd, None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "it's");
    assert_eq!(out.status.code(), Some(3));
}

/// The channel's end is the command's end: sshd closes its stdin, and the command with all it
/// started is gone at once, not at its timeout (a hung squeue left behind by every watch that
/// ended would pile up on the login node).
#[test]
fn a_login_node_command_ends_with_its_channel() {
    let cmd = super::bounded("sleep 30; echo late", Duration::from_secs(30));
    let (out, took) = run_as_sshd(&cmd, Some(Duration::from_millis(300)));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("late"));
    // A destroy is the exception: it finishes whatever became of the channel.
    let cmd = super::bounded_to_finish("sleep 1; echo done", Duration::from_secs(30));
    let (out, _) = run_as_sshd(&cmd, Some(Duration::from_millis(100)));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
}
