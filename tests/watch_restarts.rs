//! `rigwatch watch` stopped and started again, against a stand-in Slurm login node (a real
//! sshd whose `squeue` prints what the test says, or hangs) and a command sink that records
//! each call: an alert changes only on evidence, what was sent is not sent again, and news is
//! told once. Every watch runs with `--for`; every wait is bounded.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::tmux::Tmux;
use support::{Lab, Sshd, recorder};

/// Job 10 running with 50 minutes of walltime left: the 1 h band, critical.
const RUNNING: &str = "10|train-a|RUNNING|None|2:10:00|50:00|3:00:00|1|node1|cpu=1,gres/gpu=1|N/A|0|0|0:0|2026-12-01T05:00:00|2026-12-01T04:59:00\n";
/// Jobs that had ended before any watching began.
const ENDED: &str = "11|train-b|FAILED|NonZeroExitCode|1:00:00|0:00|3:00:00|1|node1|cpu=1,gres/gpu=1|N/A|0|0|1:0|2026-12-01T01:00:00|2026-12-01T00:59:00\n\
12|train-c|TIMEOUT|TimeLimit|3:00:00|0:00|3:00:00|1|node1|cpu=1,gres/gpu=1|N/A|0|0|0:15|2026-12-01T01:00:00|2026-12-01T00:59:00\n";

/// A fleet of the one cluster `hpc` read at the start and every 30 s, alerts after 2 s, every event to the
/// recording sink.
fn fleet(lab: &mut Lab, login: &Sshd, sink: &Path) -> PathBuf {
    let extra = format!(
        "[alerts]\ngroup_wait_secs = 2\n[[alert]]\nsink = \"command\"\nkinds = [\"*\"]\ncommand = [\"{}\"]\n\
         [[slurm]]\nname = \"hpc\"\n{}\nnames = [\"train-*\"]\n",
        sink.display(),
        lab.host_entry(login)
    );
    lab.fleet("fleet.toml", &extra, &[])
}

/// A first watch that sends the walltime alert (the recorded sink has it), then ends with
/// `signal`.
fn fire_walltime(lab: &Lab, config: &Path, sent: &Path, signal: &str) {
    let first = start_watch(lab, config);
    if !wait_for(sent, "clock_walltime", Duration::from_secs(60)) {
        let (events, stderr) = finish(first, "-TERM");
        panic!("the walltime alert fires first: {events:?}\n{stderr}");
    }
    finish(first, signal);
}

/// A watch of `secs` that says nothing of the walltime alert, the sink holding its one firing
/// from before.
fn the_next_watch_says_nothing_more(lab: &Lab, config: &Path, sent: &Path, secs: u64) {
    let watch = start_watch(lab, config);
    std::thread::sleep(Duration::from_secs(secs));
    let (events, stderr) = finish(watch, "-TERM");
    assert_eq!(
        about(&events, "clock_walltime"),
        Vec::<(&str, &str)>::new(),
        "{stderr}"
    );
    assert_eq!(
        about(&calls(sent), "clock_walltime"),
        [("firing", "10")],
        "one sink call in all"
    );
}

fn start_watch(lab: &Lab, config: &Path) -> Child {
    lab.watch(config, 120, &[])
}

/// Ends the watch with `signal`, returning its events (stdout) and stderr.
fn finish(child: Child, signal: &str) -> (Vec<Value>, String) {
    let _ = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status();
    let out = child.wait_with_output().expect("watch output");
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (events, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn wait_for(path: &Path, needle: &str, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn calls(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l.rsplit_once(' ').map_or(l, |(j, _)| j)).ok())
        .collect()
}

fn about<'a>(events: &'a [Value], kind: &str) -> Vec<(&'a str, &'a str)> {
    events
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| {
            (
                e["state"].as_str().unwrap_or(""),
                e["data"]["subject"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

/// The walltime alert fired and saved; the watch restarts while squeue hangs: no queue was
/// read, so nothing resolves (and nothing fires again) however long it waits.
#[test]
fn a_restart_while_squeue_hangs_resolves_nothing() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    let (_data, hang) = login.shim_cluster_squeue(&lab, RUNNING);
    let (sink, sent) = recorder(&lab, "pager");
    let config = fleet(&mut lab, &login, &sink);
    fire_walltime(&lab, &config, &sent, "-TERM");
    std::fs::write(&hang, "").expect("hang squeue");
    the_next_watch_says_nothing_more(&lab, &config, &sent, 8);
}

/// kill -9 right after the alert was sent, then a restart: the alert is not sent again, and
/// its payload carries the id a receiver would drop a repeat by.
#[test]
fn a_kill_right_after_a_send_does_not_send_it_again() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    login.shim_cluster_squeue(&lab, RUNNING);
    let (sink, sent) = recorder(&lab, "pager");
    let config = fleet(&mut lab, &login, &sink);
    fire_walltime(&lab, &config, &sent, "-KILL");
    the_next_watch_says_nothing_more(&lab, &config, &sent, 8);
    let sent = calls(&sent);
    let id = sent[0]["data"]["id"].as_str().unwrap_or("");
    assert!(
        id.starts_with("hpc/clock_walltime/10@"),
        "a stable id: {}",
        sent[0]
    );
}

/// Jobs that had ended before the first watch are not news, in that run or any after it.
#[test]
fn jobs_ended_before_watching_began_are_never_news() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    login.shim_cluster_squeue(&lab, ENDED);
    let (sink, sent) = recorder(&lab, "pager");
    let config = fleet(&mut lab, &login, &sink);
    let mut said = Vec::new();
    for _ in 0..3 {
        let watch = start_watch(&lab, &config);
        std::thread::sleep(Duration::from_secs(5));
        let (events, _) = finish(watch, "-TERM");
        said.extend(events);
    }
    assert_eq!(about(&said, "job_ended"), Vec::<(&str, &str)>::new());
    assert_eq!(
        about(&calls(&sent), "job_ended"),
        Vec::<(&str, &str)>::new()
    );
}

/// The dashboard sent the walltime alert and quit; `watch` starts from the dashboard's saved
/// alert state: it neither resolves the alert before reading the queue nor fires it again.
#[test]
fn dashboard_then_watch_sends_no_resolve_firing_pair() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    login.shim_cluster_squeue(&lab, RUNNING);
    let (sink, sent) = recorder(&lab, "pager");
    let config = fleet(&mut lab, &login, &sink);
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; echo RIGWATCH-EXITED-$?; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("dash-watch", &command);
    assert!(
        wait_for(&sent, "clock_walltime", Duration::from_secs(60)),
        "the dashboard sends the walltime alert: {}",
        tmux.screen()
    );
    tmux.keys(&["q"]);
    tmux.wait_for("the dashboard quits", Duration::from_secs(15), |s| {
        s.contains("RIGWATCH-EXITED-0")
    });
    the_next_watch_says_nothing_more(&lab, &config, &sent, 10);
}

/// Job 10 ran while watched, then left the queue between runs: the next watch tells it once,
/// and the runs after it (the hourly cron recipe) do not tell it again.
#[test]
fn a_job_that_ended_between_runs_is_told_once() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    let (data, _) = login.shim_cluster_squeue(&lab, RUNNING);
    let (sink, sent) = recorder(&lab, "pager");
    let config = fleet(&mut lab, &login, &sink);
    fire_walltime(&lab, &config, &sent, "-TERM");
    let ended = ENDED
        .lines()
        .next()
        .unwrap_or("")
        .replace("11|train-b", "10|train-a");
    std::fs::write(&data, format!("{ended}\n")).expect("job 10 ended");
    let mut said = Vec::new();
    for _ in 0..3 {
        let watch = start_watch(&lab, &config);
        std::thread::sleep(Duration::from_secs(6));
        let (events, _) = finish(watch, "-TERM");
        said.extend(events);
    }
    assert_eq!(about(&said, "job_ended"), [("notice", "10")], "{said:?}");
    assert_eq!(
        about(&calls(&sent), "job_ended"),
        [("notice", "10")],
        "one page in all"
    );
}
