//! Queues and the roster end to end: two lab boxes, each a directory on this machine holding a
//! queue file, durable final copies and cell logs, read over real sshd by the probe script.
//! Box A's queue runs (a real `bash run_queue.sh <queue> 3` process); box B's was killed midway.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{Lab, rigwatch, rigwatch_json};

/// A queue process that looks like `run_queue.sh` to pgrep; killed on drop. Its loop is
/// bounded (60 s), so a crashed test leaves nothing running for long.
/// Starts the queue runner on `sshd`'s box, in its process namespace; it dies with the box.
fn start_queue(lab: &Lab, sshd: &support::Sshd, dir: &Path, queue: &Path, start_index: usize) {
    let script = dir.join("run_queue.sh");
    std::fs::write(
        &script,
        "i=0\nwhile [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n",
    )
    .expect("script");
    sshd.sh(
        lab,
        &format!(
            "nohup bash '{}' '{}' {start_index} </dev/null >/dev/null 2>&1 &",
            script.display(),
            queue.display()
        ),
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
    std::fs::write(path, text).expect("write");
}

/// A box: `queue.txt`, `final/<done>/{best.pth,metrics.json}`, `logs/<name>.log` for every cell
/// that ran (older ones an hour back), the last with `running_log`. Returns the queue file.
fn make_box(dir: &Path, queue: &str, done: &[&str], ran: &[&str], running_log: &str) -> String {
    let file = dir.join("queue.txt");
    write(&file, queue);
    for name in done {
        write(&dir.join(format!("final/{name}/best.pth")), "weights");
        write(
            &dir.join(format!("final/{name}/metrics.json")),
            "{\"acc\": 0.9}",
        );
    }
    for (i, name) in ran.iter().enumerate() {
        let log = dir.join(format!("logs/{name}.log"));
        if i + 1 == ran.len() {
            write(&log, running_log);
        } else {
            write(&log, "Epoch 3/3\ndone\n");
            let status = Command::new("touch")
                .args(["-d", "1 hour ago"])
                .arg(&log)
                .status()
                .expect("touch");
            assert!(status.success());
        }
    }
    file.display().to_string()
}

fn host_body(lab: &Lab, sshd: &support::Sshd, dir: &Path, queue: &str) -> String {
    format!(
        "{}\nqueue = \"{queue}\"\nfinal_dir = \"{}/final\"\ncell_log = \"{}/logs/{{name}}.log\"",
        lab.host_entry(sshd),
        dir.display(),
        dir.display()
    )
}

fn find<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .expect("array")
        .iter()
        .find(|v| v[key] == value)
        .unwrap_or_else(|| panic!("no {key} = {value} in {list}"))
}

#[test]
fn a_running_queue_and_a_killed_one_reconciled_across_two_boxes() {
    let mut lab = Lab::new();
    let a = lab.start_host("box-a");
    let b = lab.start_host("box-b");
    let (dir_a, dir_b) = (lab.path("box-a-disk"), lab.path("box-b-disk"));
    let queue_a = make_box(
        &dir_a,
        "# sweep A\nconfigs/a1.yaml cls 3\nconfigs/a2.yaml cls 3\nconfigs/a3.yaml cls 50\n\
         configs/a4.yaml cls 3\n",
        &["a1", "a2"],
        &["a1", "a2", "a3"],
        "Epoch 3/50\n 45%|####5     | 450/1000\r 46%|####6     | 460/1000\n",
    );
    let queue_b = make_box(
        &dir_b,
        "configs/b1.yaml cls 2\nconfigs/b2.yaml cls 2\nconfigs/b3.yaml cls 2\nconfigs/b4.yaml cls 2\n",
        &["b1", "b2"],
        &["b1", "b2", "b3"],
        "Epoch 1/2\n 80%|########  | 80/100\n",
    );
    // b3 died while syncing: a checkpoint without metrics is not a durable copy.
    write(&dir_b.join("final/b3/best.pth"), "partial");
    start_queue(&lab, &a, &dir_a, Path::new(&queue_a), 3);
    let hosts = [
        ("box-a", host_body(&lab, &a, &dir_a, &queue_a)),
        ("box-b", host_body(&lab, &b, &dir_b, &queue_b)),
    ];
    let config = lab.fleet("fleet.toml", "", &hosts);
    let state = lab.path("state");

    let (code, roster) = rigwatch_json(&["roster", "--json"], &config, &state);
    assert_eq!(code, Some(1), "box B has a failed cell:\n{roster:#}");
    let ha = find(&roster["hosts"], "host", "box-a");
    assert_eq!(
        (&ha["done"], &ha["running"], &ha["pending"], &ha["failed"]),
        (
            &Value::from(2),
            &Value::from(1),
            &Value::from(1),
            &Value::from(0)
        ),
        "{ha:#}"
    );
    assert_eq!(ha["current"]["name"], "a3");
    assert_eq!(
        ha["current"]["progress"]["epoch"],
        serde_json::json!([3, 50])
    );
    assert!(ha["resume"].is_null(), "a live queue needs no resume");
    let hb = find(&roster["hosts"], "host", "box-b");
    assert_eq!(
        (&hb["done"], &hb["running"], &hb["pending"], &hb["failed"]),
        (
            &Value::from(2),
            &Value::from(0),
            &Value::from(1),
            &Value::from(1)
        ),
        "{hb:#}"
    );
    assert_eq!(hb["resume"]["cell_index"], 2);
    assert_eq!(hb["resume"]["start_index"], 2);
    assert_eq!(
        hb["resume"]["command"],
        format!("bash run_queue.sh {queue_b} 2")
    );
    let first = &roster["cells"][0];
    assert_eq!(
        (&first["name"], &first["state"]),
        (&Value::from("b3"), &Value::from("failed"))
    );
    let a3 = find(&roster["cells"], "name", "a3");
    assert_eq!(a3["state"], "running");
    let a4 = find(&roster["cells"], "name", "a4");
    assert_eq!(
        (&a4["state"], &a4["line"]),
        (&Value::from("pending"), &Value::from(5))
    );

    let (_, status) = rigwatch_json(&["status", "--json"], &config, &state);
    let qa = &find(&status["hosts"], "name", "box-a")["queue"];
    assert_eq!(qa["file"], queue_a.as_str());
    assert_eq!(
        (&qa["total"], &qa["done"]),
        (&Value::from(4), &Value::from(2))
    );
    assert_eq!(qa["current"]["index"], 2);
    assert!(qa["resume_index"].is_null());
    let qb = &find(&status["hosts"], "name", "box-b")["queue"];
    assert_eq!(
        (&qb["failed"], &qb["resume_index"]),
        (&Value::from(1), &Value::from(2))
    );
    assert!(qb["current"].is_null());

    let table = rigwatch()
        .args(["roster", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("roster table");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(&format!(
            "resume box-b at cell 2: bash run_queue.sh {queue_b} 2"
        )),
        "{text}"
    );
    assert!(text.contains("ep 3/50"), "{text}");
}

/// A safetensors file holding one 4-byte tensor: a checkpoint the pull can verify by load.
fn safetensors() -> Vec<u8> {
    let header = br#"{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[1, 2, 3, 4]);
    bytes
}

/// Runs rigwatch without a terminal; returns exit code and stdout.
fn run(config: &Path, state: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = rigwatch()
        .arg("--config")
        .arg(config)
        .args(args)
        .env("XDG_STATE_HOME", state)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run rigwatch");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// One killed queue: c1 and c2 have durable copies, c3 died. Only c1's copy is pulled, so only
/// c1 is verified. The teardown says c3 is not done, in words and with a second confirmation;
/// then the box vanishes, and a later run still shows its cells from memory, c3 missing.
#[test]
fn verified_pulls_the_teardown_queue_line_and_a_box_gone_since_the_last_run() {
    let mut lab = Lab::new();
    let mut c = lab.start_host("box-c");
    let dir = lab.path("box-c-disk");
    let queue = make_box(
        &dir,
        "configs/c1.yaml cls 2\nconfigs/c2.yaml cls 2\nconfigs/c3.yaml cls 2\n",
        &["c2"],
        &["c1", "c2", "c3"],
        "Epoch 1/2\n",
    );
    write(&dir.join("final/c1/metrics.json"), "{\"acc\": 0.8}");
    std::fs::write(dir.join("final/c1/model.safetensors"), safetensors()).expect("model");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}/final/c1\"]\ndest = \"{}\"",
        host_body(&lab, &c, &dir, &queue),
        dir.display(),
        lab.path("results").display()
    );
    let config = lab.fleet("fleet.toml", "", &[("box-c", body)]);
    let state = lab.path("state");
    let line = format!(
        "queue: 1 of 3 cells not done (1 failed); resume with `bash run_queue.sh {queue} 2`"
    );

    let (code, text) = run(&config, &state, &["teardown", "box-c"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains(&format!("WARNING: {line}")), "{text}");
    assert!(text.contains("REFUSED"), "{text}");

    let (code, text) = run(&config, &state, &["pull", "box-c"]);
    assert_eq!(code, Some(0), "{text}");
    let (code, roster) = rigwatch_json(&["roster", "--json"], &config, &state);
    assert_eq!(code, Some(1), "c3 failed:\n{roster:#}");
    let state_of = |name: &str| find(&roster["cells"], "name", name).clone();
    assert_eq!(state_of("c1")["verified"], true, "{roster:#}");
    assert_eq!(
        (&state_of("c2")["state"], &state_of("c2")["verified"]),
        (&Value::from("done"), &Value::from(false))
    );
    assert_eq!(find(&roster["hosts"], "host", "box-c")["verified"], 1);

    let command = format!(
        "env XDG_STATE_HOME='{}' {} --config {} teardown box-c; echo EXIT=$?; sleep 60",
        state.display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = support::tmux::Tmux::start("queue-teardown", &command);
    tmux.wait_for("the name prompt", std::time::Duration::from_secs(30), |s| {
        s.contains("Type the box's name")
    });
    tmux.keys(&["box-c", "Enter"]);
    tmux.wait_for(
        "the second confirmation",
        std::time::Duration::from_secs(30),
        |s| s.contains("Careful: not every queue cell is done"),
    );
    tmux.keys(&["no", "Enter"]);
    let screen = tmux.wait_for("the end", std::time::Duration::from_secs(30), |s| {
        s.contains("EXIT=")
    });
    assert!(
        screen.contains("cancelled") && screen.contains("EXIT=1"),
        "{screen}"
    );

    c.kill();
    let memory_path = state.join("rigwatch/hosts.json");
    let mut memory: Value =
        serde_json::from_slice(&std::fs::read(&memory_path).expect("hosts.json")).expect("json");
    memory["box-c"]["last_seen_up"] = Value::from("2000-01-01T00:00:00Z");
    std::fs::write(&memory_path, memory.to_string()).expect("write hosts.json");
    let (code, roster) = rigwatch_json(&["roster", "--json", "--timeout", "3"], &config, &state);
    assert_eq!(code, Some(1), "{roster:#}");
    let hc = find(&roster["hosts"], "host", "box-c");
    assert_eq!(hc["presence"], "gone", "{hc:#}");
    assert_eq!(
        (&hc["missing"], &hc["done"], &hc["verified"]),
        (&Value::from(1), &Value::from(2), &Value::from(1)),
        "{hc:#}"
    );
    assert_eq!(
        hc["resume"]["command"],
        format!("bash run_queue.sh {queue} 2")
    );
    assert_eq!(find(&roster["cells"], "name", "c3")["state"], "missing");
    assert_eq!(roster["unread"], serde_json::json!(["box-c"]));
}
