//! `rigwatch status --json` end to end: real sshd hosts whose PATH holds shim tools replaying the
//! real H100 captures, through the same probe script, parsers and signals as a live fleet.

mod support;

use serde_json::Value;
use support::{GpuShim, Lab, json_host as host, rigwatch, rigwatch_json};

fn status_json(config: &std::path::Path, state: &std::path::Path) -> (Option<i32>, Value) {
    rigwatch_json(&["status", "--json"], config, state)
}

fn signal<'a>(h: &'a Value, kind: &str) -> Option<&'a Value> {
    h["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .find(|s| s["kind"] == kind)
}

fn kinds(h: &Value) -> Vec<String> {
    h["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .map(|s| s["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A run's files on the lab machine: a log last written two hours ago holding `log_text`, and a
/// checkpoint folder whose newest file is step_1000.pt (4 KiB, written now).
fn run_files(lab: &Lab, log_text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let log = lab.path("train.log");
    std::fs::write(&log, log_text).expect("log");
    let touched = std::process::Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(&log)
        .status()
        .expect("touch");
    assert!(touched.success());
    let ckpt_dir = lab.path("ckpts");
    std::fs::create_dir_all(&ckpt_dir).expect("ckpts");
    std::fs::write(ckpt_dir.join("step_1000.pt"), vec![0u8; 4096]).expect("ckpt");
    (log, ckpt_dir)
}

#[test]
fn every_box_shape_end_to_end_through_status_json() {
    let mut lab = Lab::new();
    let idle = lab.start_host("idle");
    idle.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/q_idle_csv.txt",
        apps: "h100/apps_idle.txt",
        legacy_driver: false,
    });
    let loaded = lab.start_host("loaded");
    loaded.shim_nvidia_smi(&GpuShim::LOAD);
    loaded.shim_tmux(true);
    let zombie = lab.start_host("zombie");
    zombie.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/zombie_q.txt",
        apps: "h100/zombie_apps.txt",
        legacy_driver: false,
    });
    let inodes = lab.start_host("inodes");
    inodes.shim_df_inodes("handwritten/df_Pi_inodes_full_handwritten.txt");
    inodes.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/q_idle_csv_nn.txt",
        apps: "h100/apps_idle.txt",
        legacy_driver: true,
    });
    let cpu = lab.start_host("cpu");
    let dead = lab.start_host("dead");
    dead.shim_tmux(false);
    dead.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/q_idle_csv.txt",
        apps: "h100/apps_idle.txt",
        legacy_driver: false,
    });
    let multi = lab.start_host("multi");
    multi.shim_nvidia_smi(&GpuShim {
        query_gpu: "handwritten/q_multi_gpu_handwritten.txt",
        apps: "h100/apps_load.txt",
        legacy_driver: false,
    });
    let rebooted = lab.start_host("rebooted");
    rebooted.shim_boot_id("0f5e8a52-3c1d-4b7e-9a6f-1d2c3b4a5e60");

    let (log, ckpt_dir) = run_files(&lab, "epoch 3/50\n\x1b[31mloss 0.42\x1b[0m\n");

    let entry = |s: &support::Sshd, extra: &str| format!("{}\n{extra}", lab.host_entry(s));
    let hosts = [
        ("idle", entry(&idle, "")),
        (
            "loaded",
            entry(
                &loaded,
                &format!(
                    "run = \"train\"\nlog = \"{}\"\nckpt_dir = \"{}\"",
                    log.display(),
                    ckpt_dir.display()
                ),
            ),
        ),
        ("zombie", entry(&zombie, "")),
        ("inodes", entry(&inodes, "mounts = [\"/\"]")),
        ("cpu", entry(&cpu, "")),
        // Every lab host shares this machine's process table, so the dead run's pattern must
        // not match the other hosts' probes (the loaded host's log is train.log).
        ("dead", entry(&dead, "run = \"sweep-ghost\"")),
        ("multi", entry(&multi, "")),
        ("rebooted", entry(&rebooted, "")),
    ];
    let config = lab.fleet("fleet.toml", "", &hosts);
    let state = lab.path("state");

    let (code, json) = status_json(&config, &state);
    assert_eq!(
        code,
        Some(2),
        "critical signals: status exits 2, needs action now"
    );
    assert!(json["taken_at"].as_str().is_some_and(|t| t.contains('T')));
    for h in json["hosts"].as_array().expect("hosts") {
        assert_eq!(h["link"]["state"], "up", "{}", h["name"]);
        assert!(
            h["uptime_secs"].as_f64().is_some_and(|u| u > 0.0),
            "{}",
            h["name"]
        );
        // The box's load and RAM, as its /proc says (the lab boxes share this machine's).
        assert!(h["load"]["one"].as_f64().is_some_and(|l| l >= 0.0), "{h}");
        assert!(
            h["load"]["total_tasks"].as_u64().is_some_and(|n| n > 0),
            "{h}"
        );
        let total = h["memory"]["total_bytes"].as_u64().unwrap_or(0);
        let free = h["memory"]["available_bytes"].as_u64().unwrap_or(u64::MAX);
        assert!(total > 0 && free <= total, "{h}");
        // The load's scale: this machine's CPUs online, as sysfs lists them.
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("sysfs");
        let cpus = rigwatch::probe::parse_cpus_online(&online).expect("a CPU list");
        assert_eq!(h["cpus"].as_u64(), Some(u64::from(cpus)), "{h}");
        assert!(
            !h["mounts"].as_array().expect("mounts").is_empty(),
            "{}",
            h["name"]
        );
        assert_eq!(
            h["errors"].as_array().map(Vec::len),
            Some(0),
            "{}: {}",
            h["name"],
            h["errors"]
        );
    }

    let h = host(&json, "idle");
    let gpu = &h["gpus"][0];
    assert_eq!(
        (
            gpu["util_pct"].as_u64(),
            gpu["sm_clock_mhz"].as_u64(),
            gpu["sm_clock_max_mhz"].as_u64()
        ),
        (Some(0), Some(1980), Some(1980))
    );
    assert_eq!(
        (gpu["mem_used_mib"].as_u64(), gpu["mem_total_mib"].as_u64()),
        (Some(0), Some(81559))
    );
    assert_eq!(gpu["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(gpu["throttle"], serde_json::json!(["GPU idle"]));
    assert!(
        signal(h, "zombie_vram").is_none() && signal(h, "power_capped").is_none(),
        "{:?}",
        kinds(h)
    );
    assert_eq!(h["run"]["state"], "not-configured");

    let h = host(&json, "loaded");
    let gpu = &h["gpus"][0];
    assert_eq!(
        (gpu["util_pct"].as_u64(), gpu["sm_clock_mhz"].as_u64()),
        (Some(100), Some(1365))
    );
    assert_eq!(gpu["power_limit_w"].as_f64(), Some(700.0));
    assert!(gpu["power_w"].as_f64().is_some_and(|p| p > 700.0));
    assert_eq!(gpu["throttle"], serde_json::json!(["SW power cap"]));
    assert_eq!(
        gpu["processes"],
        serde_json::json!([{"pid": 467, "name": "python3", "used_mib": 20204}])
    );
    let capped = signal(h, "power_capped").expect("power_capped");
    assert!(
        capped["message"]
            .as_str()
            .is_some_and(|m| m.contains("SW power cap") && m.contains("1365/1980"))
    );
    assert_eq!(h["run"]["state"], "alive");
    assert!(
        h["run"]["how"]
            .as_str()
            .is_some_and(|m| m.contains("tmux session train"))
    );
    assert!(
        signal(h, "hung_run").is_some(),
        "log last written 2 h ago: {:?}",
        kinds(h)
    );

    let h = host(&json, "zombie");
    let z = signal(h, "zombie_vram").expect("zombie signal");
    assert!(
        z["message"]
            .as_str()
            .is_some_and(|m| m.contains("pid 585 python3") && m.contains("28.5 GiB")),
        "{z}"
    );
    assert_eq!(
        h["gpus"][0]["uuid"],
        Value::Null,
        "the zombie capture did not ask for a uuid: null, not made up"
    );
    assert_eq!(h["gpus"][0]["power_limit_w"], Value::Null);

    let h = host(&json, "inodes");
    let i = signal(h, "disk_inodes").expect("inode signal");
    assert_eq!(i["severity"], "crit");
    assert!(
        signal(h, "disk_bytes").is_none(),
        "bytes are not nearly full: {:?}",
        kinds(h)
    );
    let root = h["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["path"] == "/")
        .expect("/");
    assert_eq!(
        (root["inodes_used"].as_u64(), root["inodes_total"].as_u64()),
        (Some(16609442), Some(16777216))
    );
    assert_eq!(
        root["bytes_total"].as_u64(),
        Some(270553174016),
        "bytes come from df -PB1"
    );
    assert_eq!(
        h["gpus"][0]["sm_clock_max_mhz"].as_u64(),
        Some(1980),
        "fell back to the legacy field list"
    );

    let h = host(&json, "cpu");
    assert_eq!(h["gpu_state"]["state"], "no-nvidia-smi");
    assert_eq!(h["gpus"], serde_json::json!([]));
    assert!(signal(h, "no_gpu").is_some());

    let h = host(&json, "dead");
    assert_eq!(h["run"]["state"], "dead");
    assert_eq!(
        signal(h, "run_dead").map(|s| s["severity"].clone()),
        Some(Value::from("crit"))
    );

    let h = host(&json, "multi");
    let gpus = h["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 2);
    assert_eq!(
        (gpus[0]["index"].as_u64(), gpus[1]["index"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        gpus[0]["processes"][0]["pid"], 467,
        "placed on its GPU by uuid"
    );
    assert_eq!(gpus[1]["processes"], serde_json::json!([]));

    let h = host(&json, "rebooted");
    assert_eq!(h["boot_id"], "0f5e8a52-3c1d-4b7e-9a6f-1d2c3b4a5e60");
    assert!(
        signal(h, "rebooted").is_none(),
        "first sighting is not a reboot"
    );
    rebooted.shim_boot_id("7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d");
    let (_, json) = status_json(&config, &state);
    let h = host(&json, "rebooted");
    let r = signal(h, "rebooted").expect("reboot noticed across status runs");
    assert!(
        r["message"]
            .as_str()
            .is_some_and(|m| m.contains("orphaned"))
    );
    assert!(signal(host(&json, "idle"), "rebooted").is_none());
}

#[test]
fn table_output_names_states_and_signals_and_down_hosts_are_not_dead_runs() {
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    gpu.shim_nvidia_smi(&GpuShim::LOAD);
    let mut gone = lab.start_host("gone");
    gone.kill();
    let hosts = [
        ("gpu", lab.host_entry(&gpu)),
        (
            "gone",
            format!("{}\nrun = \"train\"", lab.host_entry(&gone)),
        ),
    ];
    let config = lab.fleet("fleet.toml", "", &hosts);
    let out = rigwatch()
        .args(["status", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "a host down needs action now");
    let gpu_line = stdout
        .lines()
        .find(|l| l.starts_with("gpu "))
        .expect("gpu line");
    assert!(
        gpu_line.contains("0: 100% 1365/1980MHz 719/700W 20/80GiB"),
        "{gpu_line}"
    );
    assert!(
        stdout.contains("info GPU0: SM clock 1365/1980 MHz"),
        "{stdout}"
    );
    // One reading is too little to tell when a disk fills: said in the dashboard's words.
    assert!(
        stdout.contains("disk /: growth not known yet (0s of data, 1 readings; needs 10m and 5)"),
        "{stdout}"
    );
    let gone_line = stdout
        .lines()
        .find(|l| l.starts_with("gone "))
        .expect("gone line");
    assert!(
        gone_line.contains("down") && gone_line.contains("unknown"),
        "{gone_line}"
    );
    assert!(stdout.contains("not a dead run"), "{stdout}");
    assert!(!stdout.contains("DEAD"), "{stdout}");
}

#[test]
fn a_box_that_goes_down_counts_as_stopped_since_last_seen_and_its_release_clock_runs() {
    let mut lab = Lab::new();
    let mut rented = lab.start_host("rented");
    rented.shim_nvidia_smi(&GpuShim::LOAD);
    let body = format!(
        "{}\nprofile = \"autodl\"\nprice_per_hour = 1.8\nstopped_price_per_hour = 0.05\ncurrency = \"CNY\"",
        lab.host_entry(&rented)
    );
    let config = lab.fleet("fleet.toml", "balance = 90.0", &[("rented", body)]);
    let state = lab.path("state");

    let (_, json) = status_json(&config, &state);
    let h = host(&json, "rented");
    assert_eq!(h["link"]["state"], "up", "{}", h["link"]);
    assert_eq!(h["cost"]["per_hour"].as_f64(), Some(1.8));
    assert_eq!(h["cost"]["currency"], "CNY");
    // The balance is the account's: said once for the fleet, as the dashboard's header says it,
    // never as a clock on every host.
    assert_eq!(
        json["runway"]["remaining_secs"].as_i64(),
        Some(50 * 3600),
        "90 / 1.8 per hour: {}",
        json["runway"]
    );
    assert!(
        h["clocks"]
            .as_array()
            .expect("clocks")
            .iter()
            .all(|c| c["kind"] != "balance_runway"),
        "{}",
        h["clocks"]
    );
    assert!(
        h["clocks"]
            .as_array()
            .expect("clocks")
            .iter()
            .all(|c| c["kind"] != "auto_release"),
        "up: no release clock"
    );

    rented.kill();
    let (_, json) = status_json(&config, &state);
    let h = host(&json, "rented");
    assert_eq!(h["link"]["state"], "down");
    assert_eq!(h["run"]["state"], "not-configured");
    let clocks = h["clocks"].as_array().expect("clocks");
    let release = clocks
        .iter()
        .find(|c| c["kind"] == "auto_release")
        .expect("release clock");
    let left = release["remaining_secs"].as_i64().expect("remaining");
    assert!(
        (15 * 86400 - 120..=15 * 86400).contains(&left),
        "15 days from last seen: {left}"
    );
    assert_eq!(release["confidence"], "conservative");
    assert!(
        release["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped since last seen"))
    );
    let accrual = clocks
        .iter()
        .find(|c| c["kind"] == "stopped_billing")
        .expect("accrual");
    assert!(accrual["accrued"].as_f64().is_some_and(|a| a >= 0.0));
    assert_eq!(
        h["cost"]["per_hour"].as_f64(),
        Some(0.05),
        "out of sight: the stopped rate"
    );
    assert!(h["cost"]["so_far"].as_f64().is_some_and(|c| c >= 0.0));
}

/// Everything the detail shows is in `status --json`: the log (size, age, last lines), the
/// newest checkpoint, and each disk's fill outlook. A box's text arrives whole but escaped:
/// no ESC, C1 control or bidi override reaches stdout raw.
#[test]
fn status_json_carries_the_log_the_checkpoint_and_the_disk_outlook() {
    let mut lab = Lab::new();
    let b = lab.start_host("b");
    let (log, ckpt_dir) = run_files(
        &lab,
        "epoch 3/50\n\x1b[31mloss 0.42\x1b[0m \u{9b}2J gpj.\u{202e}exe\n",
    );
    let entry = format!(
        "{}\nlog = \"{}\"\nckpt_dir = \"{}\"",
        lab.host_entry(&b),
        log.display(),
        ckpt_dir.display()
    );
    let config = lab.fleet("fleet.toml", "", &[("b", entry)]);
    let out = rigwatch()
        .args(["status", "--json", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .output()
        .expect("run");
    for raw in [&b"\x1b"[..], "\u{9b}".as_bytes(), "\u{202e}".as_bytes()] {
        assert!(
            !out.stdout.windows(raw.len()).any(|w| w == raw),
            "{raw:?} reached stdout raw"
        );
    }
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let h = host(&json, "b");
    assert_eq!(h["log"]["path"], log.display().to_string());
    assert!(
        h["log"]["size_bytes"].as_u64().is_some_and(|s| s > 20),
        "{}",
        h["log"]
    );
    assert!(
        h["log"]["age_secs"]
            .as_i64()
            .is_some_and(|a| (7000..7400).contains(&a)),
        "{}",
        h["log"]
    );
    let tail: Vec<&str> = h["log_tail"]
        .as_array()
        .expect("log_tail")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(tail[0], "epoch 3/50");
    assert_eq!(
        tail[1], "\x1b[31mloss 0.42\x1b[0m \u{9b}2J gpj.\u{202e}exe",
        "the line whole, for scripts"
    );
    assert!(
        h["checkpoint"]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("step_1000.pt")),
        "{}",
        h["checkpoint"]
    );
    assert_eq!(h["checkpoint"]["size_bytes"], 4096);
    assert!(
        h["checkpoint"]["age_secs"]
            .as_i64()
            .is_some_and(|a| a < 600)
    );
    let root = h["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["path"] == "/")
        .expect("/");
    assert_eq!(root["fill"]["state"], "too-little-history", "{root}");
}

/// `--timeout T` is the whole wait. A far box (the delay proxy: a slow handshake that uses most
/// of T) whose `nvidia-smi` hangs used to take T to connect and T more for the probe; now the
/// command ends by T (plus the goodbye to the box), and the box is not reported healthy.
#[test]
fn a_timeout_is_the_whole_wait_not_one_per_step() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("far");
    sshd.shim_script("nvidia-smi", "#!/bin/sh\nexec sleep 600\n");
    let proxy = support::delay::DelayProxy::start(sshd.port, std::time::Duration::from_millis(250));
    let fleet = lab.fleet(
        "fleet.toml",
        "",
        &[("far", lab.host_entry_via(&sshd, proxy.port))],
    );
    let started = std::time::Instant::now();
    let out = lab
        .rigwatch_on(&fleet)
        .args(["status", "--timeout", "5"])
        .output()
        .expect("status");
    let took = started.elapsed().as_secs_f64();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(took < 7.5, "took {took:.1}s for --timeout 5:\n{said}");
}
