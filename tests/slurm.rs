//! Against a real one-node Slurm (tests/support/slurm.rs): the cluster itself, the squeue
//! command rigwatch runs, and what it reads from it.

mod support;

use std::time::Duration;

use support::slurm::Slurm;

/// `rigwatch status --json` on `config`: its exit status and its document.
fn status_json(lab: &support::Lab, config: &std::path::Path) -> (Option<i32>, serde_json::Value) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["status", "--json", "--timeout", "20", "--config"])
        .arg(config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("status");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), json)
}

#[test]
fn a_real_cluster_runs_and_fails_a_job() {
    let slurm = Slurm::start();
    let failed = slurm.sbatch(&["-J", "fails", "--wrap", "exit 3"]);
    slurm.wait_for_state(&failed, "FAILED", Duration::from_secs(60));
    let exit = slurm.run(
        "squeue",
        &["-h", "-t", "all", "-j", &failed, "-O", "exit_code:|"],
    );
    // 22.05 prints the wait status: exit 3 is 3 << 8.
    assert_eq!(exit.trim(), "768|");
}

/// The command rigwatch runs, run for real here, and every job state read back through the
/// parser: what the cluster says, not what a capture said once.
#[test]
fn the_squeue_command_reads_every_state_from_a_real_cluster() {
    use rigwatch::probe::squeue::{
        JobState, SqueueQuery, parse_squeue_rows, separator, squeue_command,
    };
    let slurm = Slurm::start();
    let runs = slurm.sbatch(&["-J", "runs", "--requeue", "--wrap", "sleep 300"]);
    let fails = slurm.sbatch(&["-J", "fails", "--wrap", "exit 3"]);
    let times_out = slurm.sbatch(&["-J", "times-out", "-t", "1", "--wrap", "sleep 300"]);
    let later = slurm.sbatch(&["-J", "later", "--begin=now+1hour", "--wrap", "true"]);
    let cancelled = slurm.sbatch(&["-J", "cancelled", "--begin=now+1hour", "--wrap", "true"]);
    slurm.run("scancel", &[&cancelled]);
    slurm.wait_for_state(&runs, "RUNNING", Duration::from_secs(30));
    slurm.run("scontrol", &["requeue", &runs]);
    // Slurm checks limits about every 30 s; -t 1 ends within ~100 s.
    slurm.wait_for_state(&times_out, "TIMEOUT", Duration::from_secs(150));
    let sep = separator("0123456789abcdef");
    let query = SqueueQuery {
        user: None,
        partition: None,
    };
    let out = slurm.run("sh", &["-c", &squeue_command(&query, &sep)]);
    let rows = parse_squeue_rows(&out, &sep).expect("real squeue output parses");
    let row = |id: &str| {
        rows.iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("job {id} missing from {rows:?}"))
    };
    assert_eq!(row(&fails).state, JobState::Failed);
    assert_eq!(row(&fails).exit.map(|e| e.code), Some(3));
    assert_eq!(row(&times_out).state, JobState::Timeout);
    assert_eq!(row(&later).reason.as_deref(), Some("BeginTime"));
    assert_eq!(row(&cancelled).state, JobState::Cancelled);
    let requeued = row(&runs);
    assert_eq!((requeued.restarts, requeued.requeue), (Some(1), Some(true)));
    assert_eq!(
        requeued.state,
        JobState::Pending,
        "a requeued job pends again"
    );
}

/// `rigwatch status` on a `[[slurm]]` cluster, through its login node (a loopback sshd whose
/// `squeue` reaches the real test cluster): one squeue for all jobs, each watched job with its
/// state, a failure with its exit code, a pending job's reason in words, and a watched id the
/// queue no longer holds said as ended, state unknown, never running.
#[test]
fn status_reads_a_clusters_jobs_through_its_login_node() {
    use std::process::Command;
    let slurm = Slurm::start();
    let mut lab = support::Lab::new();
    let login = lab.start_host("login");
    slurm.shim_clients_on(&login);
    login.shim_nvidia_smi(&support::GpuShim::LOAD);
    let runs = slurm.sbatch(&[
        "-J",
        "train-a",
        "-t",
        "10",
        "--gres=gpu:1",
        "--wrap",
        "sleep 300",
    ]);
    let fails = slurm.sbatch(&["-J", "train-b", "--wrap", "exit 3"]);
    let later = slurm.sbatch(&["-J", "train-c", "--begin=now+1hour", "--wrap", "true"]);
    let other = slurm.sbatch(&["-J", "not-watched", "--begin=now+1hour", "--wrap", "true"]);
    slurm.wait_for_state(&runs, "RUNNING", Duration::from_secs(30));
    slurm.wait_for_state(&fails, "FAILED", Duration::from_secs(60));
    // train-a's newest checkpoint is two hours old, with ten minutes of walltime left.
    let ckpt = lab.path("cluster-fs/ckpt/train-a");
    std::fs::create_dir_all(&ckpt).expect("ckpt dir");
    std::fs::write(ckpt.join("step_100.pt"), b"weights").expect("ckpt");
    let touched = Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(ckpt.join("step_100.pt"))
        .status()
        .expect("touch");
    assert!(touched.success());
    let cluster = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\nnames = [\"train-*\"]\njobs = [999999]\n\
         checkpoints = \"{}/{{name}}\"\n",
        lab.host_entry(&login),
        lab.path("cluster-fs/ckpt").display()
    );
    let config = lab.fleet("fleet.toml", &cluster, &[]);
    let (code, json) = status_json(&lab, &config);
    let hpc = &json["clusters"][0];
    assert_eq!(hpc["name"], "hpc", "{json}");
    assert!(hpc["error"].is_null(), "{hpc}");
    let job = |id: &str| {
        hpc["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("job {id} missing: {hpc}"))
    };
    assert_eq!(job(&runs)["state"], "RUNNING", "{hpc}");
    // Its walltime as a danger clock: ten minutes, less what it has run.
    let walltime = &job(&runs)["walltime"];
    assert_eq!(walltime["kind"], "walltime", "{hpc}");
    let left = walltime["remaining_secs"].as_i64().unwrap_or(0);
    assert!((1..=600).contains(&left), "{walltime}");
    assert!(
        walltime["message"]
            .as_str()
            .is_some_and(|m| m.contains("SIGTERM, then SIGKILL after KillWait")),
        "{walltime}"
    );
    // GPU truth from inside the allocation: srun --overlap on the job's node ran nvidia-smi
    // (the login node's shim, the H100 under load: SM 1365 MHz).
    let truth = &job(&runs)["gpu_truth"][0];
    assert_eq!(truth["node"], slurm.node.as_str(), "{hpc}");
    assert!(truth["error"].is_null(), "{truth}");
    assert_eq!(truth["gpus"][0]["sm_clock_mhz"], 1365, "{truth}");
    assert!(
        job(&fails)["gpu_truth"].is_null(),
        "an ended job is not probed"
    );
    let age = job(&runs)["checkpoint_age_secs"].as_u64().unwrap_or(0);
    assert!((7000..7400).contains(&age), "{hpc}");
    let danger = job(&runs)["dangers"][0].as_str().unwrap_or("").to_string();
    assert!(
        danger.starts_with("newest checkpoint ")
            && danger.contains(" old, older than the ")
            && danger.contains("m of walltime left: the next may not land before SIGKILL"),
        "{hpc}"
    );
    assert!(
        job(&fails)["walltime"].is_null(),
        "an ended job has no clock: {hpc}"
    );
    assert_eq!(job(&fails)["state"], "FAILED", "{hpc}");
    assert_eq!(job(&fails)["exit"]["code"], 3, "{hpc}");
    assert_eq!(job(&later)["state"], "PENDING", "{hpc}");
    assert_eq!(job(&later)["reason"], "BeginTime", "{hpc}");
    assert!(
        hpc["jobs"]
            .as_array()
            .is_some_and(|jobs| jobs.iter().all(|j| j["id"] != other.as_str())),
        "only the watched jobs: {hpc}"
    );
    assert_eq!(hpc["ended_state_unknown"][0], "999999", "{hpc}");
    assert_eq!(
        code,
        Some(2),
        "a failed job needs action now, as a critical signal on a box does"
    );
    slurm.run("scancel", &[&runs]);
}

/// `watch` on a `[[slurm]]` cluster: the runtime reads the queue at the cluster's period, a
/// watched job that fails while watching is news once (critical, with its exit code), a
/// running job's walltime is a clock, and `--metrics` carries every job's phase, GPUs and
/// walltime left. The real cluster, through the real login node; every wait is bounded.
#[test]
fn watch_and_metrics_follow_a_clusters_jobs_as_they_change() {
    use std::process::{Command, Stdio};
    let slurm = Slurm::start();
    let mut lab = support::Lab::new();
    let login = lab.start_host("login");
    slurm.shim_clients_on(&login);
    let fails = slurm.sbatch(&["-J", "train-fails", "--wrap", "sleep 12; exit 3"]);
    let runs = slurm.sbatch(&[
        "-J",
        "train-runs",
        "-t",
        "30",
        "--gres=gpu:1",
        "--wrap",
        "sleep 300",
    ]);
    slurm.wait_for_state(&runs, "RUNNING", Duration::from_secs(30));
    let cluster = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\nnames = [\"train-*\"]\nperiod_secs = 10\n",
        lab.host_entry(&login)
    );
    let config = lab.fleet("fleet.toml", &cluster, &[]);
    let port = support::free_port();
    let watch = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["watch", "--for", "60", "--metrics"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--config")
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .env_remove("SSH_AUTH_SOCK")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch");
    let failed_line = format!(
        "rigwatch_job_phase{{cluster=\"hpc\",job=\"{fails}\",name=\"train-fails\",phase=\"failed\",state=\"FAILED\"}} 1"
    );
    let started = std::time::Instant::now();
    let mut text = String::new();
    while started.elapsed() < Duration::from_secs(50) {
        text = support::scrape(port);
        if text.contains(&failed_line) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = Command::new("kill").arg(watch.id().to_string()).status();
    let out = watch.wait_with_output().expect("watch output");
    slurm.run("scancel", &[&runs]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(&failed_line), "{text}\n{stderr}");
    assert!(
        text.contains(&format!(
            "rigwatch_job_phase{{cluster=\"hpc\",job=\"{runs}\",name=\"train-runs\",phase=\"running\",state=\"RUNNING\"}} 1"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "rigwatch_job_gpus{{cluster=\"hpc\",job=\"{runs}\"}} 1"
        )),
        "{text}"
    );
    let left: f64 = text
        .lines()
        .find(|l| {
            l.starts_with(&format!(
                "rigwatch_job_walltime_remaining_seconds{{cluster=\"hpc\",job=\"{runs}\"}}"
            ))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no walltime for {runs}: {text}"));
    assert!((1.0..=1800.0).contains(&left), "{left}");
    assert!(
        text.contains("rigwatch_cluster_queue_read{cluster=\"hpc\"} 1"),
        "{text}"
    );
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let ended: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["kind"] == "job_ended" && e["host"] == "hpc")
        .collect();
    assert_eq!(ended.len(), 1, "the failure is news once: {events:?}");
    assert_eq!(ended[0]["severity"], "crit", "{events:?}");
    assert_eq!(ended[0]["data"]["subject"], fails.as_str(), "{events:?}");
    let message = ended[0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("FAILED (exit 3)") && message.contains("train-fails"),
        "{message}"
    );
}

/// A real cluster running one job, `train-a`; a login node with Slurm's clients; results on
/// the "cluster filesystem"; and the `[[slurm]]` entry (with `extra` keys) that pulls them.
struct JobLab {
    slurm: Slurm,
    lab: support::Lab,
    login: support::Sshd,
    runs: String,
    cluster: String,
}

fn job_lab(extra: &str) -> JobLab {
    let slurm = Slurm::start();
    let mut lab = support::Lab::new();
    let login = lab.start_host("login");
    slurm.shim_clients_on(&login);
    let results = lab.path("cluster-fs/run");
    std::fs::create_dir_all(&results).expect("results dir");
    std::fs::write(results.join("metrics.json"), "{\"loss\": 0.12}\n").expect("metrics");
    let runs = slurm.sbatch(&["-J", "train-a", "--wrap", "sleep 300"]);
    slurm.wait_for_state(&runs, "RUNNING", Duration::from_secs(30));
    let cluster = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\nnames = [\"train-*\"]\n{extra}[slurm.pull]\n\
         paths = [\"{}\"]\ndest = \"{}\"\n",
        lab.host_entry(&login),
        results.display(),
        lab.path("home-copy").display()
    );
    JobLab {
        slurm,
        lab,
        login,
        runs,
        cluster,
    }
}

/// `rigwatch teardown hpc --job JOB` at a real terminal: the cluster's name typed, Enter again
/// for the live job; the final screen, with `EXIT=<status>`.
fn teardown_at_a_terminal(
    lab: &support::Lab,
    config: &std::path::Path,
    job: &str,
    tag: &str,
) -> String {
    let command = format!(
        "env XDG_STATE_HOME='{}' {} --config {} teardown hpc --job {job}; echo EXIT=$?; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = support::tmux::Tmux::start(tag, &command);
    tmux.wait_for("the name prompt", Duration::from_secs(30), |s| {
        s.contains("Type the cluster's name")
    });
    tmux.keys(&["hpc", "Enter"]);
    tmux.wait_for("the second confirmation", Duration::from_secs(30), |s| {
        s.contains("Press Enter to cancel it anyway")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the end", Duration::from_secs(90), |s| s.contains("EXIT="))
}

/// `rigwatch teardown CLUSTER --job ID`: `scancel` only through the guard. Refused while the
/// cluster's results were never pulled (the job keeps running); after `rigwatch pull` of
/// `[slurm.pull]` through the login node and the cluster's name typed at a real terminal,
/// `scancel` runs once on the login node and the outcome is confirmed only because the queue
/// then shows the job CANCELLED. A job already ended is refused at the door (nothing to
/// cancel), and the ledger holds one teardown, relying on the pull.
#[test]
fn scancel_runs_only_through_the_guard_and_the_job_must_be_seen_ended() {
    use std::process::Command;
    let JobLab {
        slurm,
        lab,
        login,
        runs,
        cluster,
    } = job_lab("");
    let config = lab.fleet("fleet.toml", &cluster, &[]);
    let rigwatch = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rigwatch"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("XDG_STATE_HOME", lab.path("state"))
            .env_remove("SSH_AUTH_SOCK")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("rigwatch")
    };
    let state_of = |id: &str| {
        slurm
            .run("squeue", &["-h", "-t", "all", "-j", id, "-o", "%T"])
            .trim()
            .to_string()
    };

    let out = rigwatch(&["teardown", "hpc", "--job", &runs]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("REFUSED"), "{text}");
    assert!(
        text.contains(&format!("will run on hpc: scancel '{runs}'")),
        "{text}"
    );
    assert_eq!(
        state_of(&runs),
        "RUNNING",
        "refused: the job must keep running"
    );

    let out = rigwatch(&["pull", "hpc"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = rigwatch(&["teardown", "hpc", "--job", &runs]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("needs a person at a terminal"), "{text}");
    assert_eq!(state_of(&runs), "RUNNING");

    let screen = teardown_at_a_terminal(&lab, &config, &runs, "scancel");
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        screen.contains(&format!("shows job {runs} CANCELLED")),
        "confirmed only by the queue: {screen}"
    );
    assert_eq!(state_of(&runs), "CANCELLED");

    let out = rigwatch(&["ledger", "hpc", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
    let teardowns = doc["teardowns"].as_array().expect("teardowns");
    assert_eq!(teardowns.len(), 1, "{doc}");
    assert_eq!(teardowns[0]["instance_id"], runs.as_str());
    assert_eq!(teardowns[0]["command"], format!("scancel '{runs}'"));
    assert_eq!(teardowns[0]["outcome"], "confirmed");
    assert_eq!(teardowns[0]["pull_id"], doc["pulls"][0]["id"]);

    // An ended job has nothing to cancel: refused before any guard, nothing recorded.
    let out = rigwatch(&["teardown", "hpc", "--job", &runs]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("has already ended (CANCELLED"), "{said}");
    let doc: serde_json::Value =
        serde_json::from_slice(&rigwatch(&["ledger", "hpc", "--json"]).stdout).expect("json");
    assert_eq!(doc["teardowns"].as_array().map(Vec::len), Some(1), "{doc}");

    // A scancel that exits 0 and cancels nothing: the job is still there afterwards, so the
    // outcome is recorded as NOT confirmed, and the exit status says so.
    let stays = slurm.sbatch(&["-J", "train-b", "--wrap", "sleep 300"]);
    slurm.wait_for_state(&stays, "RUNNING", Duration::from_secs(30));
    std::fs::write(login.bin.join("scancel"), "#!/bin/sh\nexit 0\n").expect("no-op scancel");
    let short = format!("[teardown]\nconfirm_within_secs = 4\nconfirm_every_secs = 1\n{cluster}");
    let config = lab.fleet("fleet-short.toml", &short, &[]);
    let screen = teardown_at_a_terminal(&lab, &config, &stays, "scancel-noop");
    assert!(screen.contains("EXIT=4"), "{screen}");
    assert!(
        screen.contains(&format!("squeue still shows job {stays} RUNNING")),
        "{screen}"
    );
    assert_eq!(state_of(&stays), "RUNNING");
    let doc: serde_json::Value =
        serde_json::from_slice(&rigwatch(&["ledger", "hpc", "--json"]).stdout).expect("json");
    let last = doc["teardowns"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["instance_id"] == stays.as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("no teardown of {stays}: {doc}"));
    assert_eq!(last["outcome"], "unconfirmed", "{doc}");
    slurm.run("scancel", &[&stays]);

    // A job that ends on its own while scancel is on its way: the queue shows it COMPLETED, and
    // the record says the cancel ended nothing (it is not credited with the end).
    let ends = slurm.sbatch(&["-J", "train-c", "--wrap", "sleep 6"]);
    slurm.wait_for_state(&ends, "RUNNING", Duration::from_secs(30));
    std::fs::write(login.bin.join("scancel"), "#!/bin/sh\nsleep 9\nexit 0\n").expect("late");
    let screen = teardown_at_a_terminal(&lab, &config, &ends, "scancel-late");
    assert!(
        screen.replace('\n', "").contains(&format!(
            "job {ends} had already COMPLETED on its own; scancel ended nothing"
        )),
        "{screen}"
    );
    assert_eq!(state_of(&ends), "COMPLETED");
}

/// The dashboard on a fleet with a cluster: the job is a row of the jobs pane, and `T` on it
/// opens the same guarded modal as a box's. Refused before the cluster's results were pulled
/// (the job keeps running); `p` pulls them through the login node; then the cluster's name,
/// Enter, and Enter again for the live job run `scancel` once, confirmed by the queue.
#[test]
fn the_dashboard_cancels_a_job_through_the_modal_only_after_a_pull() {
    // The login node lives as long as the test (a field left out would drop its sshd now).
    let JobLab {
        slurm,
        lab,
        login: _login,
        runs,
        cluster,
    } = job_lab("period_secs = 10\n");
    let config = lab.fleet("fleet.toml", &cluster, &[]);
    let state_of = |id: &str| {
        slurm
            .run("squeue", &["-h", "-t", "all", "-j", id, "-o", "%T"])
            .trim()
            .to_string()
    };
    let command = format!(
        "env XDG_STATE_HOME='{}' {} --config {}; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = support::tmux::Tmux::start("jobs-modal", &command);
    tmux.wait_for("the job's row", Duration::from_secs(40), |s| {
        s.contains(&format!("hpc/{runs}")) && s.contains("train-a") && s.contains("RUNNING")
    });
    tmux.keys(&["Tab", "T"]);
    let screen = tmux.wait_for("the refusal", Duration::from_secs(30), |s| {
        s.contains("REFUSED — not until") && s.contains("never pulled")
    });
    assert!(
        screen.contains(&format!("will run on hpc: scancel '{runs}'")),
        "{screen}"
    );
    assert_eq!(state_of(&runs), "RUNNING", "refused: the job keeps running");
    tmux.escape_closing(&format!("Teardown Slurm job {runs} on hpc — guarded"));
    tmux.keys(&["p"]);
    tmux.wait_for("the pull", Duration::from_secs(60), |s| {
        s.contains("pull #1 of hpc: 1/1 files hashed and verified")
    });
    tmux.keys(&["T"]);
    tmux.wait_for("a verified-current pull", Duration::from_secs(30), |s| {
        s.contains("The last pull is verified-current")
    });
    tmux.keys(&["h", "p", "c", "Enter"]);
    tmux.wait_for("the second confirmation", Duration::from_secs(30), |s| {
        s.contains("the job has not ended") && s.contains("Press Enter again to cancel it anyway")
    });
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the outcome", Duration::from_secs(60), |s| {
        s.contains(&format!("shows job {runs} CANCELLED"))
    });
    assert!(screen.contains("confirmed"), "{screen}");
    assert_eq!(state_of(&runs), "CANCELLED");
}

/// A watched job the controller has already purged: squeue no longer knows it, so its end
/// state is read from accounting (here the job completion log, `sacct -c`: the test cluster
/// has no slurmdbd, and plain `sacct` says "accounting storage is disabled"). It is FAILED
/// with its exit code, not "ended, state unknown", and never running.
#[test]
fn a_job_purged_from_the_queue_gets_its_end_state_from_accounting() {
    let slurm = Slurm::start_with_min_job_age(2);
    let mut lab = support::Lab::new();
    let login = lab.start_host("login");
    slurm.shim_clients_on(&login);
    let fails = slurm.sbatch(&["-J", "train-gone", "--wrap", "exit 3"]);
    slurm.wait_for_state(&fails, "FAILED", Duration::from_secs(60));
    // slurmctld purges ended jobs older than MinJobAge in a pass about once a minute.
    let started = std::time::Instant::now();
    while !slurm
        .run("squeue", &["-h", "-t", "all", "-o", "%i"])
        .lines()
        .all(|l| l.trim() != fails)
    {
        assert!(
            started.elapsed() < Duration::from_secs(200),
            "job {fails} was never purged"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    let cluster = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\njobs = [{fails}, 999999]\n",
        lab.host_entry(&login)
    );
    let config = lab.fleet("fleet.toml", &cluster, &[]);
    let (_, json) = status_json(&lab, &config);
    let hpc = &json["clusters"][0];
    let job = hpc["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["id"] == fails.as_str()))
        .unwrap_or_else(|| panic!("job {fails} missing: {hpc}"));
    assert_eq!(job["state"], "FAILED", "{hpc}");
    assert_eq!(job["exit"]["code"], 3, "{hpc}");
    assert_eq!(job["name"], "train-gone", "{hpc}");
    assert_eq!(
        hpc["ended_state_unknown"],
        serde_json::json!(["999999"]),
        "only the job accounting does not know stays unknown: {hpc}"
    );
}
