//! Is the run alive, told truly on real boxes: each lab box in its own process namespace, a
//! real tmux server on it, real editors' and pagers' command lines holding the run's name.

mod support;

use serde_json::Value;
use support::{Lab, Sshd, json_host, rigwatch_json};

fn run_of(lab: &Lab, config: &std::path::Path, host: &str) -> Value {
    let (_, json) = rigwatch_json(&["status", "--json"], config, &lab.path("state"));
    json_host(&json, host)["run"].clone()
}

fn fleet(lab: &Lab, sshd: &Sshd, run: &str) -> std::path::PathBuf {
    lab.fleet(
        &format!("fleet-{}.toml", sshd.port),
        "",
        &[(
            sshd.name.as_str(),
            format!("{}\n{run}", lab.host_entry(sshd)),
        )],
    )
}

/// A test of the lab itself: a process started on one box is in that box's process table and
/// not in the other's, and each box's sshd is its own PID 1.
#[test]
fn each_lab_box_sees_only_its_own_processes() {
    let mut lab = Lab::new();
    let a = lab.start_host("a");
    let b = lab.start_host("b");
    a.sh(&lab, "nohup sleep 4711 </dev/null >/dev/null 2>&1 &");
    let seen_on = |h: &Sshd| h.sh(&lab, "pgrep -af '[s]leep 4711' || true");
    assert!(seen_on(&a).contains("sleep 4711"), "{}", seen_on(&a));
    assert_eq!(seen_on(&b), "", "box b must not see box a's process");
    assert!(b.sh(&lab, "cat /proc/1/cmdline").contains("sshd"));
}

/// Two sessions on a real tmux server; the run's session is killed while the other lives on.
/// The server's own argv still says `new -s train`, which is what `pgrep -f train` used to
/// find: the run is dead, and says why.
#[test]
fn a_tmux_server_outliving_the_runs_session_is_not_the_run() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let config = fleet(&lab, &sshd, "run = \"train\"");
    sshd.sh(
        &lab,
        "tmux new -d -s train 'sleep 600' && tmux new -d -s notes 'sleep 600'",
    );
    let run = run_of(&lab, &config, "box");
    assert_eq!(run["state"], "alive", "{run}");
    assert!(
        run["how"]
            .as_str()
            .unwrap_or_default()
            .contains("runs sleep"),
        "{run}"
    );

    sshd.sh(&lab, "tmux kill-session -t train");
    assert!(
        sshd.sh(&lab, "pgrep -af tmux").contains("train"),
        "the server keeps its argv"
    );
    let run = run_of(&lab, &config, "box");
    assert_eq!(run["state"], "dead", "{run}");
    assert!(
        run["why"]
            .as_str()
            .unwrap_or_default()
            .contains("no tmux session named exactly"),
        "{run}"
    );
    // `train2` is not `train`: tmux's own prefix matching must not find it.
    sshd.sh(&lab, "tmux new -d -s train2 'sleep 600'");
    assert_eq!(run_of(&lab, &config, "box")["state"], "dead");
}

/// The run was typed at the session's shell and has ended: the session lives, at a prompt.
#[test]
fn a_session_back_at_its_shell_prompt_is_a_dead_run() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let config = fleet(&lab, &sshd, "run = \"train\"");
    sshd.sh(&lab, "tmux new -d -s train -x 80 -y 24 sh");
    sshd.sh(
        &lab,
        "tmux send-keys -t =train: 'sleep 600' Enter; sleep 0.5",
    );
    let run = run_of(&lab, &config, "box");
    assert_eq!(run["state"], "alive", "{run}");
    sshd.sh(&lab, "tmux send-keys -t =train: C-c; sleep 0.5");
    let run = run_of(&lab, &config, "box");
    assert_eq!(run["state"], "dead", "{run}");
    assert!(
        run["why"]
            .as_str()
            .unwrap_or_default()
            .contains("at a sh prompt"),
        "{run}"
    );
}

/// `run_process = "train.py"` with an editor and a pager open on files of that name, and the
/// tmux server's argv naming it: dead until the real process starts, then alive with its pid.
#[test]
fn an_editor_or_pager_holding_the_runs_name_is_not_the_run() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    sshd.alias("vim", "/usr/bin/tail");
    sshd.alias("less", "/usr/bin/tail");
    let work = sshd.dir.join("work");
    std::fs::create_dir_all(&work).expect("work");
    std::fs::write(work.join("train.py"), "sleep 600\n").expect("train.py");
    let config = fleet(&lab, &sshd, "run_process = \"train.py\"");
    let w = work.display();
    sshd.sh(
        &lab,
        &format!(
            "tmux new -d -s edit 'vim -f {w}/train.py'; \
             nohup less -f {w}/train.py </dev/null >/dev/null 2>&1 &"
        ),
    );
    let procs = sshd.sh(&lab, "pgrep -af train.py");
    assert!(
        procs.contains("vim -f") && procs.contains("less -f"),
        "{procs}"
    );
    let run = run_of(&lab, &config, "box");
    assert_eq!(run["state"], "dead", "{run}");

    sshd.sh(
        &lab,
        &format!("nohup sh {w}/train.py </dev/null >/dev/null 2>&1 &"),
    );
    let run = run_of(&lab, &config, "box");
    assert_eq!(run["state"], "alive", "{run}");
    let how = run["how"].as_str().unwrap_or_default();
    assert!(
        how.starts_with("process ") && how.contains(&format!("sh {w}/train.py")),
        "{run}"
    );
}
