//! The Alertmanager sink against a real `prometheus-alertmanager` on loopback, started here:
//! an alert fires with its labels, two hosts of one kind are one group, a resolve ends it, a
//! refusal is an error with Alertmanager's status; and `rigwatch watch` reaches it through the
//! same dispatch as every sink. Every wait is bounded; a missing or failing Alertmanager fails.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use rigwatch::alerts::{AlertData, AlertEvent, AlertState, SCHEMA_VERSION, sinks};
use rigwatch::config::alerts::{AlertRule, Level, Sink};
use rigwatch::signals::Severity;
use serde_json::Value;

const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

/// A running Alertmanager with its own config and storage; ended when dropped.
struct Alertmanager {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Alertmanager {
    /// Grouped by `kind` and flushed within a second, to a receiver that sends nothing.
    fn start() -> Alertmanager {
        assert!(
            Path::new(ALERTMANAGER).exists(),
            "{ALERTMANAGER} is missing: apt-get install prometheus-alertmanager"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: nowhere\n  group_by: ['kind']\n  group_wait: 1s\n  \
             group_interval: 1s\nreceivers:\n  - name: nowhere\n",
        )
        .expect("alertmanager.yml");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let log = std::fs::File::create(dir.path().join("stderr")).expect("log");
        let child = Command::new(ALERTMANAGER)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            // No gossip with peers: an empty address turns clustering off.
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {ALERTMANAGER}: {e}"));
        let mut am = Alertmanager {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir,
        };
        let start = Instant::now();
        while get(&format!("{}/-/ready", am.url)).is_none() {
            let exited = am.child.try_wait().ok().flatten();
            if exited.is_some() || start.elapsed() > Duration::from_secs(15) {
                panic!(
                    "alertmanager not ready ({exited:?}): {}",
                    std::fs::read_to_string(am.dir.path().join("stderr")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        am
    }

    /// The answer to `GET path` as JSON, polled until `done` holds or 10 s pass.
    fn poll(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let answer = get(&format!("{}{path}", self.url))
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null);
            if done(&answer) || start.elapsed() > Duration::from_secs(10) {
                return answer;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a 2xx answer.
fn get(url: &str) -> Option<String> {
    let out = Command::new("curl")
        .args(["-sSf", "--max-time", "5", url])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn rule(url: &str) -> AlertRule {
    AlertRule {
        sink: Sink::Alertmanager {
            url: url.into(),
            labels: BTreeMap::from([("team".into(), "ml".into())]),
            hold: Duration::from_secs(8 * 3600),
        },
        kinds: vec![],
        hosts: vec![],
        min_severity: Level::Warn,
        timeout: Duration::from_secs(10),
        quiet: None,
    }
}

fn event(host: &str, state: AlertState) -> AlertEvent {
    AlertEvent {
        v: SCHEMA_VERSION,
        at: Utc::now(),
        host: host.into(),
        kind: rigwatch::alerts::AlertKind::Signal(rigwatch::signals::SignalKind::RunDead),
        severity: if state == AlertState::Resolved {
            Severity::Info
        } else {
            Severity::Crit
        },
        state,
        message: format!("{host}: run is not running"),
        platform: Some("runpod".into()),
        data: AlertData {
            count: 1,
            repeat: false,
            stage: None,
            subject: None,
            silenced: false,
            id: String::new(),
        },
    }
}

fn deliver(rule: &AlertRule, event: &AlertEvent) -> Result<(), String> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(sinks::deliver(rule, event))
}

/// The active `rigwatch_run_dead` alerts, by host.
fn active_by_host(alerts: &Value) -> BTreeMap<String, Value> {
    alerts
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["labels"]["alertname"] == "rigwatch_run_dead")
        .map(|a| {
            (
                a["labels"]["host"].as_str().unwrap_or("").to_string(),
                a.clone(),
            )
        })
        .collect()
}

#[test]
fn an_alert_fires_with_its_labels_groups_by_kind_and_its_resolve_ends_it() {
    let am = Alertmanager::start();
    let to_am = rule(&format!("{}/", am.url));
    for host in ["gpu-1", "gpu-2"] {
        deliver(&to_am, &event(host, AlertState::Firing)).expect("firing delivered");
    }
    let alerts = am.poll("/api/v2/alerts", |a| active_by_host(a).len() == 2);
    let by_host = active_by_host(&alerts);
    assert_eq!(by_host.len(), 2, "{alerts}");
    let one = &by_host["gpu-1"];
    assert_eq!(one["status"]["state"], "active", "{one}");
    for (label, value) in [
        ("host", "gpu-1"),
        ("kind", "run_dead"),
        ("severity", "critical"),
        ("platform", "runpod"),
        ("team", "ml"),
    ] {
        assert_eq!(one["labels"][label], value, "{one}");
    }
    assert_eq!(one["annotations"]["summary"], "gpu-1: run is not running");
    // Only the critical alerts are active: the other severities were ended as they arrived.
    let all = alerts.as_array().map(Vec::len);
    assert_eq!(all, Some(2), "{alerts}");

    let run_dead_group = |groups: &Value| {
        groups
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["labels"] == serde_json::json!({"kind": "run_dead"}))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let groups = am.poll("/api/v2/alerts/groups", |g| {
        run_dead_group(g)["alerts"].as_array().map(Vec::len) == Some(2)
    });
    let group = run_dead_group(&groups);
    let mut hosts: Vec<&str> = group["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["labels"]["host"].as_str())
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["gpu-1", "gpu-2"], "{groups}");

    // The resolve has severity info, the firing critical: the same alert still ends.
    deliver(&to_am, &event("gpu-1", AlertState::Resolved)).expect("resolve delivered");
    let alerts = am.poll("/api/v2/alerts?active=true", |a| {
        !active_by_host(a).contains_key("gpu-1")
    });
    let by_host = active_by_host(&alerts);
    assert!(!by_host.contains_key("gpu-1"), "{alerts}");
    assert!(by_host.contains_key("gpu-2"), "{alerts}");

    // A path that is not Alertmanager's API: its 404 is the delivery's error.
    let wrong = deliver(
        &rule(&format!("{}/nope", am.url)),
        &event("gpu-3", AlertState::Firing),
    )
    .expect_err("a 404 is an error");
    assert!(wrong.contains("HTTP 404"), "{wrong}");
}

/// `rigwatch watch` sends its alerts to Alertmanager as to any sink: a box down all along
/// fires `link_down`, labelled with the box's platform from fleet.toml.
#[test]
fn rigwatch_watch_sends_a_link_down_to_alertmanager() {
    let am = Alertmanager::start();
    let mut lab = support::Lab::new();
    let mut gone = lab.start_host("gone");
    gone.kill();
    let extra = format!(
        "[alerts]\ngroup_wait_secs = 2\n[[alert]]\nsink = \"alertmanager\"\nurl = \"{}\"\n\
         labels = {{ team = \"ml\" }}\n",
        am.url
    );
    let config = lab.fleet("fleet.toml", &extra, &[("box-a", lab.host_entry(&gone))]);
    let mut watch = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["watch", "--for", "30", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", lab.path("state"))
        .env_remove("SSH_AUTH_SOCK")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch");
    let link_down = |alerts: &Value| {
        alerts
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["labels"]["alertname"] == "rigwatch_link_down")
            .cloned()
    };
    let start = Instant::now();
    let mut alerts = Value::Null;
    while start.elapsed() < Duration::from_secs(20) && link_down(&alerts).is_none() {
        alerts = am.poll("/api/v2/alerts", |a| link_down(a).is_some());
    }
    let _ = Command::new("kill").arg(watch.id().to_string()).status();
    let _ = watch.wait();
    let mut stderr = String::new();
    if let Some(mut e) = watch.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let alert = link_down(&alerts).unwrap_or_else(|| panic!("no link_down: {alerts}\n{stderr}"));
    assert_eq!(alert["labels"]["host"], "box-a", "{alert}");
    assert_eq!(alert["labels"]["platform"], "generic-ssh", "{alert}");
    assert_eq!(alert["labels"]["team"], "ml", "{alert}");
    assert_eq!(alert["status"]["state"], "active", "{alert}");
}
