//! Acting where the problem is, in a real terminal: `s` hands the terminal to the person's own
//! `ssh` to the box and the dashboard comes back when it exits; `l` opens the run's log in
//! `less`, following; `L` attaches to the run's tmux session read-only. The box is a real sshd
//! in its own process namespace with its own tmux server.

mod support;

use std::time::Duration;

use support::tmux::Tmux;
use support::{GpuShim, Lab};

fn back(s: &str) -> bool {
    s.contains("back from ssh gpu-box") && s.contains("HOST")
}

#[test]
fn s_l_and_capital_l_hand_the_terminal_to_ssh_and_take_it_back() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    sshd.shim_nvidia_smi(&GpuShim::LOAD);
    let log = lab.path("train.log");
    let lines: String = (1..=40)
        .map(|i| format!("epoch {i} loss 0.{i:02}\n"))
        .collect();
    std::fs::write(&log, lines).expect("log");
    // The run's tmux session, on the box's own tmux server.
    sshd.sh(
        &lab,
        "tmux new-session -d -s train 'echo PANE-MARK-$((6*7)); sleep 600'",
    );
    let entry = format!(
        "{}\nlog = \"{}\"\nrun = \"train\"",
        lab.host_entry(&sshd),
        log.display()
    );
    let config = lab.fleet("fleet.toml", "", &[("gpu-box", entry)]);
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; echo RIGWATCH-EXITED-$?; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("handover", &command);
    tmux.wait_for("the box up", Duration::from_secs(30), |s| {
        s.contains("gpu-box") && s.contains("✓ up")
    });

    // s: a shell on the box, through the fleet's own ssh options.
    tmux.keys(&["s"]);
    let screen = tmux.wait_for("the ssh command line", Duration::from_secs(15), |s| {
        s.contains("rigwatch: ssh -F")
    });
    assert!(
        screen.contains(&format!("-p {}", sshd.port)) && screen.contains("-- 127.0.0.1"),
        "{screen}"
    );
    assert!(!tmux.alternate_screen_on(), "the shell has the main screen");
    tmux.keys(&["echo SHELL-$((6*7))-$(cat /proc/1/comm)", "Enter"]);
    // Inside the box's namespace the first process is its sshd, not this machine's init.
    tmux.wait_for("the command ran on the box", Duration::from_secs(15), |s| {
        s.contains("SHELL-42-sshd")
    });
    tmux.keys(&["exit", "Enter"]);
    tmux.wait_for("the dashboard back", Duration::from_secs(15), back);
    assert!(
        tmux.alternate_screen_on(),
        "the dashboard has the screen again"
    );

    // l: the log in less, following; Ctrl-C stops following, q leaves.
    tmux.keys(&["l"]);
    tmux.wait_for("the log's end in less", Duration::from_secs(15), |s| {
        s.contains("epoch 40 loss 0.40") && s.contains("Waiting for data")
    });
    std::fs::write(
        &log,
        format!(
            "{}epoch 41 loss 0.41\n",
            std::fs::read_to_string(&log).expect("log")
        ),
    )
    .expect("append");
    tmux.wait_for("less follows the log", Duration::from_secs(15), |s| {
        s.contains("epoch 41 loss 0.41")
    });
    tmux.keys(&["C-c"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["q"]);
    tmux.wait_for(
        "the dashboard back after less",
        Duration::from_secs(15),
        back,
    );

    // L: the run's pane, read-only; typed keys do not reach it; the prefix and d detach.
    tmux.keys(&["L"]);
    tmux.wait_for("the run's pane", Duration::from_secs(15), |s| {
        s.contains("PANE-MARK-42")
    });
    tmux.keys(&["x", "y", "z"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["C-b", "d"]);
    let screen = tmux.wait_for(
        "the dashboard back after the pane",
        Duration::from_secs(15),
        back,
    );
    assert!(!screen.contains("PANE-MARK"), "{screen}");
    let pane = sshd.sh(&lab, "tmux capture-pane -p -t train");
    assert!(
        pane.contains("PANE-MARK-42") && !pane.contains("xyz"),
        "read-only: nothing typed reached the run's pane:\n{pane}"
    );

    tmux.keys(&["q"]);
    let screen = tmux.wait_for("exit", Duration::from_secs(15), |s| {
        s.contains("RIGWATCH-EXITED-")
    });
    assert!(screen.contains("RIGWATCH-EXITED-0"), "{screen}");
}

/// The demo has no box behind it: `s` says so and keeps the dashboard.
#[test]
fn the_demo_says_there_is_no_box_to_open() {
    let tmux = Tmux::start(
        "handover-demo",
        &format!(
            "{} demo; echo RIGWATCH-EXITED-$?; sleep 60",
            env!("CARGO_BIN_EXE_rigwatch")
        ),
    );
    tmux.wait_for("demo fleet", Duration::from_secs(20), |s| {
        s.contains("sorted worst first")
    });
    tmux.keys(&["s"]);
    let screen = tmux.wait_for("the notice", Duration::from_secs(10), |s| {
        s.contains("there is no shell to open")
    });
    assert!(tmux.alternate_screen_on(), "{screen}");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("exit", Duration::from_secs(10), |s| {
        s.contains("RIGWATCH-EXITED-")
    });
    assert!(screen.contains("RIGWATCH-EXITED-0"), "{screen}");
}
