//! One runtime under every front end, over real sshd boxes: a dashboard (in a real terminal)
//! and a `watch` on one fleet deliver each alert once, not twice, and the one that does not
//! send says who does; when the sender quits, the other takes over. `status --json` and
//! `watch --metrics` judge the same box alike. Every wait is bounded; every watch runs with
//! `--for`.

mod support;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::Value;
use support::tmux::Tmux;
use support::{GpuShim, Lab, poll_until, recorder};

fn start_watch(lab: &Lab, config: &Path, extra: &[&str]) -> Child {
    lab.watch(config, 120, extra)
}

/// Ends the watch (SIGTERM): its stdout and stderr.
fn finish(child: Child) -> (String, String) {
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let out = child.wait_with_output().expect("watch output");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn calls(path: &Path, kind: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .matches(&format!(" {kind}"))
        .count()
}

#[test]
fn a_dashboard_and_a_watch_on_one_fleet_send_each_alert_once() {
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    gpu.sh(&lab, "tmux new -d -s train 'sleep 600'");
    let (script, sent) = recorder(&lab, "pager");
    let extra = format!(
        "[alerts]\ngroup_wait_secs = 2\n[[alert]]\nsink = \"command\"\nkinds = [\"run_dead\"]\ncommand = [\"{}\"]\n",
        script.display()
    );
    let config = lab.fleet(
        "fleet.toml",
        &extra,
        &[(
            "gpu-1",
            format!("{}\nrun = \"train\"", lab.host_entry(&gpu)),
        )],
    );
    let dashboard = Tmux::start(
        "one-sender",
        &format!(
            "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; echo RIGWATCH-EXITED-$?; sleep 60",
            lab.path("state").display(),
            env!("CARGO_BIN_EXE_rigwatch"),
            config.display()
        ),
    );
    dashboard.wait_for("the run alive", Duration::from_secs(30), |s| {
        s.contains("▶ alive")
    });
    // The dashboard took the lock at its first tick; the watch starts second.
    let watch = start_watch(&lab, &config, &[]);
    std::thread::sleep(Duration::from_secs(4));
    gpu.sh(&lab, "tmux kill-session -t train");
    assert!(
        poll_until(Duration::from_secs(25), || calls(&sent, "run_dead") >= 1),
        "the run's death was sent"
    );
    // Long enough for the second process to send it too, if it were going to.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        calls(&sent, "run_dead"),
        1,
        "one delivery for two front ends: {}",
        std::fs::read_to_string(&sent).unwrap_or_default()
    );

    // The dashboard quits: the watch takes over, and the next death is sent by it, once.
    dashboard.keys(&["q"]);
    dashboard.wait_for("dashboard exit", Duration::from_secs(10), |s| {
        s.contains("RIGWATCH-EXITED-0")
    });
    gpu.sh(&lab, "tmux new -d -s train 'sleep 600'");
    std::thread::sleep(Duration::from_secs(6));
    gpu.sh(&lab, "tmux kill-session -t train");
    assert!(
        poll_until(Duration::from_secs(25), || calls(&sent, "run_dead") >= 2),
        "the watch sends once the dashboard is gone: {}",
        std::fs::read_to_string(&sent).unwrap_or_default()
    );
    std::thread::sleep(Duration::from_secs(3));
    let (stdout, stderr) = finish(watch);
    assert_eq!(calls(&sent, "run_dead"), 2, "{stderr}");
    assert!(
        stderr.contains("alerts are sent by rigwatch dashboard, pid"),
        "the watch said who sends: {stderr}"
    );
    // The watch printed the first death although it did not send it.
    assert!(
        stdout.matches("\"run_dead\"").count() >= 2,
        "{stdout}\n{stderr}"
    );
}

/// `status --json` and a running `watch`'s figures judge one box alike: run state, signals at
/// each severity, and the same danger clocks (the balance runway is the fleet's in both, never
/// a host's).
#[test]
fn status_and_watch_judge_one_box_alike() {
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    gpu.shim_nvidia_smi(&GpuShim::LOAD);
    gpu.sh(&lab, "tmux new -d -s train 'sleep 600'");
    let body = format!(
        "{}\nrun = \"train\"\nprofile = \"autodl\"\nprice_per_hour = 1.8\nstopped_price_per_hour = 0.05",
        lab.host_entry(&gpu)
    );
    let config = lab.fleet("fleet.toml", "balance = 90.0", &[("gpu-1", body)]);
    let out = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["status", "--json", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("status");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let h = &json["hosts"][0];
    let mut status_clocks: Vec<String> = h["clocks"]
        .as_array()
        .expect("clocks")
        .iter()
        .map(|c| c["kind"].as_str().unwrap_or("").to_string())
        .collect();
    status_clocks.sort();

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let watch = start_watch(&lab, &config, &["--metrics", &format!("127.0.0.1:{port}")]);
    let mut text = String::new();
    poll_until(Duration::from_secs(30), || {
        text = support::scrape(port);
        text.contains("rigwatch_run_state{host=\"gpu-1\",state=\"alive\"} 1")
    });
    let _ = finish(watch);
    assert_eq!(h["run"]["state"], "alive", "{h}");
    assert!(
        text.contains("rigwatch_run_state{host=\"gpu-1\",state=\"alive\"} 1"),
        "{text}"
    );
    let mut watch_clocks: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("rigwatch_clock_remaining_seconds{"))
        .filter_map(|l| l.split("kind=\"").nth(1)?.split('"').next())
        .map(String::from)
        .collect();
    watch_clocks.sort();
    assert_eq!(status_clocks, watch_clocks, "{h}\n{text}");
    assert!(
        !status_clocks.iter().any(|k| k == "balance_runway"),
        "the runway is the fleet's: {status_clocks:?}"
    );
    assert_eq!(json["runway"]["remaining_secs"].as_i64(), Some(50 * 3600));
    for severity in ["warn", "crit"] {
        let in_status = h["signals"]
            .as_array()
            .expect("signals")
            .iter()
            .filter(|s| s["severity"] == severity)
            .count();
        let line = format!("rigwatch_host_signals{{host=\"gpu-1\",severity=\"{severity}\"}} ");
        let in_watch = text
            .lines()
            .find_map(|l| l.strip_prefix(&line))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        assert_eq!(in_status as f64, in_watch, "{severity}: {h}\n{text}");
    }
}
