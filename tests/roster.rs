//! Queues and the roster end to end: two lab boxes, each a directory on this machine holding a
//! queue file, durable final copies and cell logs, read over real sshd by the probe script.
//! Box A's queue runs (a real `bash run_queue.sh <queue> 3` process); box B's was killed midway.

mod support;

use std::path::Path;
use std::process::{Child, Command};

use serde_json::Value;
use support::{Lab, rigwatch, rigwatch_json};

/// A queue process that looks like `run_queue.sh` to pgrep; killed on drop. Its loop is
/// bounded (60 s), so a crashed test leaves nothing running for long.
struct QueueProcess(Child);

impl QueueProcess {
    fn start(dir: &Path, queue: &Path, start_index: usize) -> QueueProcess {
        let script = dir.join("run_queue.sh");
        std::fs::write(
            &script,
            "i=0\nwhile [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n",
        )
        .expect("script");
        let child = Command::new("bash")
            .arg(&script)
            .arg(queue)
            .arg(start_index.to_string())
            .spawn()
            .expect("start run_queue.sh");
        QueueProcess(child)
    }
}

impl Drop for QueueProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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
    let _running = QueueProcess::start(&dir_a, Path::new(&queue_a), 3);
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
