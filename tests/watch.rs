//! `rigwatch watch` over real sshd boxes: one event and one sink call for a run that dies, a
//! flapping link told once with its count, a box down all along that neither resolves nor
//! fires anything else, quiet hours, a hanging sink killed at its timeout, and silences.
//! Every wait is bounded; every watch runs with `--for`.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Lab, recorder};

fn start_watch(lab: &Lab, config: &Path, secs: u32) -> Child {
    lab.watch(config, secs, &[])
}

/// Ends the watch (SIGTERM), returning its events and stderr.
fn finish(child: Child) -> (Vec<Value>, String) {
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let out = child.wait_with_output().expect("watch output");
    assert_eq!(out.status.code(), Some(0), "SIGTERM ends watch cleanly");
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (events, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn of<'a>(events: &'a [Value], host: &str, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["host"] == host && e["kind"] == kind)
        .collect()
}

fn wait_for_file(path: &Path, needle: &str, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) || start.elapsed() > limit {
            return text;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

const FAST: &str = "[alerts]\ngroup_wait_secs = 2\n";

/// A fleet of one box, `box-g`, whose sshd was killed before the watch starts.
fn fleet_with_a_down_box(lab: &mut Lab) -> PathBuf {
    let mut gone = lab.start_host("gone");
    gone.kill();
    lab.fleet("fleet.toml", FAST, &[("box-g", lab.host_entry(&gone))])
}

#[test]
fn a_run_that_dies_raises_one_event_and_one_sink_call() {
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    gpu.sh(&lab, "tmux new -d -s train 'sleep 600'");
    let (script, calls) = recorder(&lab, "pager");
    let extra = format!(
        "{FAST}[[alert]]\nsink = \"command\"\nkinds = [\"run_*\"]\ncommand = [\"{}\"]\n",
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
    let watch = start_watch(&lab, &config, 60);
    std::thread::sleep(Duration::from_secs(5));
    gpu.sh(&lab, "tmux kill-session -t train");
    let text = wait_for_file(&calls, "run_dead", Duration::from_secs(20));
    // Long enough for a repeat or a second sink call, if there were going to be one.
    std::thread::sleep(Duration::from_secs(4));
    let (events, stderr) = finish(watch);
    assert!(
        !stderr.contains("no [[alert]] destination"),
        "a sink is configured: {stderr}"
    );
    let dead = of(&events, "gpu-1", "run_dead");
    assert_eq!(dead.len(), 1, "exactly one event: {events:?}\n{stderr}");
    assert_eq!(dead[0]["state"], "firing");
    assert_eq!(dead[0]["v"], 1);
    assert!(
        dead[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("train"))
    );
    let text = std::fs::read_to_string(&calls).unwrap_or(text);
    assert_eq!(
        text.matches(" run_dead").count(),
        1,
        "one sink call: {text}"
    );
    let sent: Value = serde_json::from_str(
        text.lines()
            .next()
            .unwrap_or("")
            .trim_end_matches(" run_dead"),
    )
    .unwrap_or(Value::Null);
    assert_eq!(sent["kind"], "run_dead", "the event on stdin: {text}");
    let file =
        std::fs::read_to_string(lab.path("state/rigwatch/events.jsonl")).expect("events file");
    assert_eq!(file.matches("\"run_dead\"").count(), 1, "{file}");
    assert!(
        lab.path("state/rigwatch/hosts.json").exists(),
        "cost and last-seen saved on SIGTERM"
    );
}

#[test]
fn a_box_down_all_along_alerts_once_and_never_resolves_or_fires_anything_else() {
    let mut lab = Lab::new();
    let up = lab.start_host("up");
    let mut gone = lab.start_host("gone");
    gone.kill();
    let config = lab.fleet(
        "fleet.toml",
        FAST,
        &[
            ("box-up", lab.host_entry(&up)),
            (
                "box-gone",
                format!("{}\nrun = \"train\"", lab.host_entry(&gone)),
            ),
        ],
    );
    let watch = start_watch(&lab, &config, 60);
    std::thread::sleep(Duration::from_secs(12));
    let (events, stderr) = finish(watch);
    // No [[alert]] here: said at start, so nobody mistakes stdout for a pager.
    assert!(
        stderr.contains("no [[alert]] destination in ")
            && stderr.contains("events go to stdout and ")
            && stderr.contains("events.jsonl only"),
        "{stderr}"
    );
    let gone_events: Vec<&Value> = events.iter().filter(|e| e["host"] == "box-gone").collect();
    assert_eq!(gone_events.len(), 1, "{gone_events:?}\n{stderr}");
    assert_eq!(gone_events[0]["kind"], "link_down");
    assert_eq!(gone_events[0]["state"], "firing");
    assert!(
        of(&events, "box-up", "link_down").is_empty(),
        "the box that is up says nothing about links: {events:?}"
    );
}

#[test]
fn a_flapping_link_is_one_alert_with_its_count() {
    let mut lab = Lab::new();
    let mut flappy = lab.start_host("flappy");
    let config = lab.fleet("fleet.toml", FAST, &[("box-f", lab.host_entry(&flappy))]);
    let watch = start_watch(&lab, &config, 90);
    std::thread::sleep(Duration::from_secs(3));
    for _ in 0..8 {
        flappy.kill();
        std::thread::sleep(Duration::from_millis(1500));
        let port = flappy.port;
        flappy.restart();
        assert_eq!(flappy.port, port);
        std::thread::sleep(Duration::from_millis(1500));
    }
    // Stable again for longer than a flap's quiet (three waits): the alert resolves, once.
    std::thread::sleep(Duration::from_secs(12));
    let (events, stderr) = finish(watch);
    let link = of(&events, "box-f", "link_down");
    let firing: Vec<_> = link.iter().filter(|e| e["state"] == "firing").collect();
    assert_eq!(
        firing.len(),
        1,
        "one alert for the flapping: {link:?}\n{stderr}"
    );
    let resolved: Vec<_> = link.iter().filter(|e| e["state"] == "resolved").collect();
    assert_eq!(resolved.len(), 1, "{link:?}");
    assert!(
        resolved[0]["data"]["count"]
            .as_u64()
            .is_some_and(|c| c >= 3),
        "the count of flaps: {link:?}"
    );
}

#[test]
fn quiet_hours_a_hanging_sink_and_a_silence_each_hold_their_line() {
    let mut lab = Lab::new();
    let mut a = lab.start_host("a");
    a.kill();
    let mut b = lab.start_host("b");
    b.kill();
    let (loud, loud_calls) = recorder(&lab, "loud");
    let (quiet, quiet_calls) = recorder(&lab, "quiet");
    let now = chrono::Local::now();
    let hours = format!(
        "{}-{}",
        (now - chrono::Duration::hours(1)).format("%H:%M"),
        (now + chrono::Duration::hours(1)).format("%H:%M")
    );
    let extra = format!(
        "{FAST}\
         [[alert]]\nsink = \"command\"\ncommand = [\"{}\"]\n\
         [[alert]]\nsink = \"command\"\ncommand = [\"{}\"]\nquiet = \"{hours}\"\n\
         [[alert]]\nsink = \"command\"\ncommand = [\"sleep\", \"30\"]\ntimeout_secs = 1\n",
        loud.display(),
        quiet.display()
    );
    let config = lab.fleet(
        "fleet.toml",
        &extra,
        &[("box-a", lab.host_entry(&a)), ("box-b", lab.host_entry(&b))],
    );
    let silence = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["silence", "box-b", "1h", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .output()
        .expect("silence");
    assert!(
        silence.status.success(),
        "{}",
        String::from_utf8_lossy(&silence.stderr)
    );
    let watch = start_watch(&lab, &config, 60);
    let calls = wait_for_file(&loud_calls, "link_down", Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(4));
    let (events, stderr) = finish(watch);
    assert_eq!(
        calls.matches(" link_down").count(),
        1,
        "box-a only: {calls}"
    );
    assert!(
        calls.contains("box-a") && !calls.contains("box-b"),
        "{calls}"
    );
    assert!(
        !quiet_calls.exists(),
        "inside quiet hours the sink is not called"
    );
    assert!(
        stderr.contains("sleep: no answer within 1s; its process group was ended"),
        "the hanging sink is killed and said: {stderr}"
    );
    let b_events = of(&events, "box-b", "link_down");
    assert_eq!(
        b_events.len(),
        1,
        "a silenced host's event is still written"
    );
    assert_eq!(b_events[0]["data"]["silenced"], true);
}

/// The webhook sink POSTs the event as JSON (through curl) to a listener on loopback.
#[test]
fn a_webhook_gets_the_event_as_json() {
    use std::io::{Read, Write};
    let mut lab = Lab::new();
    let mut gone = lab.start_host("gone");
    gone.kill();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        listener.set_nonblocking(false).expect("blocking");
        let (mut conn, _) = listener.accept().expect("a POST");
        conn.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request);
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    break;
                }
            }
        }
        let _ =
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        String::from_utf8_lossy(&request).into_owned()
    });
    let extra =
        format!("{FAST}[[alert]]\nsink = \"webhook\"\nurl = \"http://127.0.0.1:{port}/hook\"\n");
    let config = lab.fleet("fleet.toml", &extra, &[("box-w", lab.host_entry(&gone))]);
    let watch = start_watch(&lab, &config, 30);
    let start = Instant::now();
    while !server.is_finished() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, stderr) = finish(watch);
    assert!(server.is_finished(), "no POST arrived: {stderr}");
    let request = server.join().expect("server");
    assert!(request.starts_with("POST /hook "), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{request}"
    );
    let body = request.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let event: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(event["host"], "box-w");
    assert_eq!(event["kind"], "link_down");
}

/// `watch --metrics` serves the fleet's figures, and a real Prometheus server scrapes them: its
/// query API returns the box's SM clock from the H100 capture.
#[test]
fn a_real_prometheus_scrapes_the_fleets_figures() {
    const PROMETHEUS: &str = "/usr/bin/prometheus";
    assert!(
        Path::new(PROMETHEUS).exists(),
        "{PROMETHEUS} is missing: apt-get install prometheus"
    );
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port")
    };
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    gpu.shim_nvidia_smi(&support::GpuShim::LOAD);
    let config = lab.fleet("fleet.toml", FAST, &[("gpu-1", lab.host_entry(&gpu))]);
    let port = free_port();
    let watch = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args([
            "watch",
            "--for",
            "90",
            "--metrics",
            &format!("127.0.0.1:{port}"),
            "--config",
        ])
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .env_remove("SSH_AUTH_SOCK")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch");
    let get = |url: &str| {
        Command::new("curl")
            .args(["-sS", "--max-time", "5", url])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let ours = format!("http://127.0.0.1:{port}/metrics");
    let start = Instant::now();
    let mut text = String::new();
    while start.elapsed() < Duration::from_secs(20) && !text.contains("rigwatch_gpu_sm_clock_mhz") {
        std::thread::sleep(Duration::from_millis(300));
        text = get(&ours);
    }
    assert!(
        text.contains(r#"rigwatch_gpu_sm_clock_mhz{host="gpu-1",gpu="0"} 1365"#),
        "{text}"
    );
    assert!(
        text.contains(r#"rigwatch_host_up{host="gpu-1"} 1"#),
        "{text}"
    );

    let prom_port = free_port();
    let prom_dir = lab.path("prometheus");
    std::fs::create_dir_all(&prom_dir).expect("prometheus dir");
    let prom_config = prom_dir.join("prometheus.yml");
    std::fs::write(
        &prom_config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rigwatch\n    \
             static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ),
    )
    .expect("prometheus.yml");
    let mut prometheus = Command::new(PROMETHEUS)
        .arg(format!("--config.file={}", prom_config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            prom_dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus");
    let query =
        format!("http://127.0.0.1:{prom_port}/api/v1/query?query=rigwatch_gpu_sm_clock_mhz");
    let start = Instant::now();
    let mut answer = Value::Null;
    while start.elapsed() < Duration::from_secs(40) {
        std::thread::sleep(Duration::from_millis(500));
        answer = serde_json::from_str(&get(&query)).unwrap_or(Value::Null);
        if answer["data"]["result"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            break;
        }
    }
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    let _ = finish(watch);
    let result = &answer["data"]["result"][0];
    assert_eq!(result["metric"]["host"], "gpu-1", "{answer}");
    assert_eq!(result["value"][1], "1365", "{answer}");
}

/// `watch --demo` shows a newcomer what the events look like in seconds, and writes nothing.
#[test]
fn the_demo_fleet_can_be_watched_and_nothing_is_written() {
    let state = tempfile::tempdir().expect("state");
    let out = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["watch", "--demo", "--for", "6"])
        .env("XDG_STATE_HOME", state.path())
        .env("XDG_CONFIG_HOME", state.path().join("config"))
        .output()
        .expect("watch --demo");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let dead = of(&events, "h100-zombie", "run_dead");
    assert_eq!(dead.len(), 1, "{events:?}");
    assert_eq!(dead[0]["state"], "firing");
    assert!(
        of(&events, "h100-down", "link_down").len() == 1
            && events
                .iter()
                .all(|e| e["host"] != "h100-down" || e["kind"] == "link_down"),
        "the box that is down says only that: {events:?}"
    );
    assert!(
        std::fs::read_dir(state.path())
            .expect("state")
            .next()
            .is_none(),
        "the demo wrote files"
    );
}

/// SIGHUP reloads fleet.toml; a bad new one is said on stderr and the old one kept, and alert
/// states carry over (the box down all along is not told again after a reload).
#[test]
fn sighup_reloads_and_a_bad_config_keeps_the_old_one() {
    let mut lab = Lab::new();
    let config = fleet_with_a_down_box(&mut lab);
    let good = std::fs::read_to_string(&config).expect("config");
    let watch = start_watch(&lab, &config, 60);
    std::thread::sleep(Duration::from_secs(5));
    std::fs::write(&config, "poll_secs = \"soon\"\n").expect("bad config");
    let hup = || {
        let sent = Command::new("kill")
            .args(["-HUP", &watch.id().to_string()])
            .status();
        assert!(sent.is_ok_and(|s| s.success()));
        std::thread::sleep(Duration::from_secs(3));
    };
    hup();
    std::fs::write(&config, good).expect("good config");
    hup();
    std::thread::sleep(Duration::from_secs(3));
    let (events, stderr) = finish(watch);
    assert!(
        stderr.contains("config not reloaded, the old one stays")
            && stderr.contains("fleet.toml:1:13"),
        "{stderr}"
    );
    assert!(stderr.contains("rigwatch: reloaded"), "{stderr}");
    let link = of(&events, "box-g", "link_down");
    assert_eq!(link.len(), 1, "told once across reloads: {link:?}");
}

/// A danger clock crossing into its last hour is news at once: a Slurm job's walltime, first
/// two hours away (the 24 h band), then 50 minutes (the 1 h band).
#[test]
fn a_clock_crossing_one_hour_raises_its_event() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    let args = login.shim_squeue("4242|RUNNING|1:00:00|3:00:00|2:00:00\n");
    let data = args.parent().expect("box dir").join("shimdata/squeue.txt");
    let body = format!(
        "{}\nprofile = \"slurm\"\ninstance_id = \"4242\"",
        lab.host_entry(&login)
    );
    let config = lab.fleet("fleet.toml", FAST, &[("login", body)]);
    let watch = start_watch(&lab, &config, 60);
    let events_file = lab.path("state/rigwatch/events.jsonl");
    wait_for_file(&events_file, "\"24h\"", Duration::from_secs(20));
    std::fs::write(&data, "4242|RUNNING|2:10:00|3:00:00|0:50:00\n").expect("squeue now");
    wait_for_file(&events_file, "\"1h\"", Duration::from_secs(30));
    let (events, stderr) = finish(watch);
    let clock = of(&events, "login", "clock_walltime");
    let stages: Vec<(&str, &str)> = clock
        .iter()
        .map(|e| {
            (
                e["data"]["stage"].as_str().unwrap_or(""),
                e["severity"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [("24h", "warn"), ("1h", "crit")],
        "{clock:?}\n{stderr}"
    );
}

/// `--digest` adds one event listing everything firing, on its own schedule.
#[test]
fn a_digest_lists_what_is_firing() {
    let out = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["watch", "--demo", "--for", "7", "--digest", "5s"])
        .output()
        .expect("watch --demo --digest");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let digests: Vec<&Value> = events.iter().filter(|e| e["kind"] == "digest").collect();
    assert_eq!(digests.len(), 1, "{events:?}");
    let digest_at = digests[0]["at"].as_str().unwrap_or("");
    let firing = events
        .iter()
        .filter(|e| e["kind"] != "digest" && e["state"] == "firing")
        .filter(|e| e["at"].as_str().is_some_and(|at| at <= digest_at))
        .count();
    assert_eq!(
        digests[0]["data"]["count"].as_u64(),
        Some(firing as u64),
        "{events:?}"
    );
    assert!(
        digests[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("h100-zombie run_dead")),
        "{}",
        digests[0]
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["watch", "--demo", "--digest", "soon"])
        .output()
        .expect("bad digest");
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a bad duration is a usage error"
    );
}

/// A duration whose last character is more than one byte (what panicked before: `split_at`
/// inside it) is a usage error saying what was wanted, in `watch --digest` and in `silence`.
#[test]
fn a_multi_byte_unit_is_a_usage_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("dir");
    let fleet = dir.path().join("fleet.toml");
    std::fs::write(
        &fleet,
        "[[host]]\nname = \"box\"\nssh = \"root@127.0.0.1\"\n",
    )
    .expect("fleet");
    let runs = [
        vec!["watch", "--demo", "--digest", "5é"],
        vec![
            "--config",
            fleet.to_str().expect("utf-8"),
            "silence",
            "box",
            "2µ",
        ],
    ];
    // Seconds as a number go through the same parser: `watch --for 1e30` panicked in
    // Duration::from_secs_f64, and `--timeout nan` was taken as a timeout.
    let config = fleet.to_str().expect("utf-8");
    let seconds = [
        vec!["watch", "--demo", "--for", "1e30"],
        vec!["watch", "--demo", "--for", "nan"],
        vec!["--config", config, "status", "--timeout", "nan"],
        vec!["--config", config, "check", "--timeout", "inf"],
        vec!["--config", config, "pull", "box", "--timeout", "0"],
    ];
    let wanted = |args: &[&str]| match args.contains(&"--digest") || args.contains(&"silence") {
        true => "is not a duration",
        false => "is not a number of seconds",
    };
    for args in runs.into_iter().chain(seconds) {
        let out = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
            .args(&args)
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .output()
            .expect("rigwatch");
        let said = String::from_utf8_lossy(&out.stderr);
        // A usage mistake is 2, and 3 for `status` (whose 2 means "needs action now").
        let usage = if args.contains(&"status") { 3 } else { 2 };
        assert_eq!(out.status.code(), Some(usage), "{args:?}: {said}");
        assert!(said.contains(wanted(&args)), "{args:?}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{args:?}: one line: {said}");
    }
}

/// Things that happen once are notices: a run starting (its dead alert resolving too), and a
/// pull another rigwatch process records in the ledger.
#[test]
fn a_run_starting_and_a_pull_recorded_are_notices() {
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    let results = lab.path("run");
    std::fs::create_dir_all(&results).expect("run dir");
    std::fs::write(results.join("metrics.json"), b"{\"loss\": 0.42}\n").expect("metrics");
    let body = format!(
        "{}\nrun = \"train\"\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"",
        lab.host_entry(&gpu),
        results.display(),
        lab.path("home").display()
    );
    let config = lab.fleet("fleet.toml", FAST, &[("gpu-1", body)]);
    let watch = start_watch(&lab, &config, 60);
    let events_file = lab.path("state/rigwatch/events.jsonl");
    wait_for_file(&events_file, "run_dead", Duration::from_secs(20));
    gpu.sh(&lab, "tmux new -d -s train 'sleep 600'");
    wait_for_file(&events_file, "run_started", Duration::from_secs(20));
    let pulled = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["pull", "gpu-1", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("pull");
    assert!(
        pulled.status.success(),
        "{}",
        String::from_utf8_lossy(&pulled.stderr)
    );
    wait_for_file(&events_file, "pull_done", Duration::from_secs(25));
    let (events, stderr) = finish(watch);
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["host"] == "gpu-1")
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or(""),
                e["state"].as_str().unwrap_or(""),
            )
        })
        .filter(|(k, _)| ["run_dead", "run_started", "pull_done"].contains(k))
        .collect();
    assert_eq!(
        kinds,
        [
            ("run_dead", "firing"),
            ("run_started", "notice"),
            ("run_dead", "resolved"),
            ("pull_done", "notice")
        ],
        "{events:?}\n{stderr}"
    );
    let pull = of(&events, "gpu-1", "pull_done")[0];
    assert_eq!(pull["data"]["subject"], "#1");
    assert!(
        pull["message"]
            .as_str()
            .is_some_and(|m| m.contains("1/1 files")),
        "{pull}"
    );
}

/// A restarted watch (systemd, a reboot of the laptop) does not fire again what it already
/// said: the alert states are saved on exit and taken back at start.
#[test]
fn a_restarted_watch_does_not_repeat_itself() {
    let mut lab = Lab::new();
    let config = fleet_with_a_down_box(&mut lab);
    let first = start_watch(&lab, &config, 60);
    wait_for_file(
        &lab.path("state/rigwatch/events.jsonl"),
        "link_down",
        Duration::from_secs(20),
    );
    let (events, _) = finish(first);
    assert_eq!(of(&events, "box-g", "link_down").len(), 1);
    let second = start_watch(&lab, &config, 60);
    std::thread::sleep(Duration::from_secs(8));
    let (events, stderr) = finish(second);
    assert!(
        of(&events, "box-g", "link_down").is_empty(),
        "told again after a restart: {events:?}\n{stderr}"
    );
}
