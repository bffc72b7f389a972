//! Acting where the problem is, in a real terminal: `s` hands the terminal to the person's own
//! `ssh` to the box and the dashboard comes back when it exits; `l` opens the run's log in
//! `less`, following; `L` attaches to the run's tmux session read-only. The box is a real sshd
//! in its own process namespace with its own tmux server.

mod support;

use std::time::Duration;

use support::tmux::Tmux;
use support::{GpuShim, Lab};

fn back(s: &str) -> bool {
    s.contains("back from ssh (box gpu-box)") && s.contains("HOST")
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

/// `K` on a box whose GPU holds VRAM and computes nothing: the dialog shows the exact commands
/// and the process; a wrong name ends nothing; the host's name typed ends it. The stand-in
/// zombie ignores TERM (as a process stuck in a CUDA call does), so KILL after the grace ends
/// it; the outcome, the VRAM the driver reports afterwards, and the ledger's row agree.
#[test]
fn k_ends_a_zombie_holding_vram_once_the_name_is_typed_and_records_it() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("zombie");
    // The zombie: `python3` (sleep under that name, so /proc/PID/comm says python3) that
    // ignores TERM, started in the box's own process namespace.
    sshd.alias("python3", "/bin/sleep");
    let pidfile = lab.path("zombie.pid");
    sshd.sh(
        &lab,
        &format!(
            "setsid sh -c 'trap \"\" TERM; exec python3 600' </dev/null >/dev/null 2>&1 & echo $! > {}",
            pidfile.display()
        ),
    );
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // nvidia-smi shows the zombie's figures (its pid holding 29130 MiB, the GPU idle) while it
    // lives, and an idle GPU once it is gone, as the driver does.
    let data = |name: &str, capture: &str| {
        let path = lab.path(name);
        std::fs::write(&path, support::capture(capture).with_header()).expect("data");
        path
    };
    let (zq, za) = (
        data("zq.txt", "h100/zombie_q.txt"),
        data("za.txt", "h100/zombie_apps.txt"),
    );
    let (iq, ia) = (
        data("iq.txt", "h100/q_idle_csv.txt"),
        data("ia.txt", "h100/apps_idle.txt"),
    );
    sshd.shim_script(
        "nvidia-smi",
        &format!(
            "#!/bin/sh\nemit() {{ pid=$(cat '{pidfile}'); if kill -0 \"$pid\" 2>/dev/null; then \
             case \"$*\" in *--query-gpu=*) cat '{zq}';; *) sed \"s/^585,/$pid,/\" '{za}';; esac; \
             else case \"$*\" in *--query-gpu=*) cat '{iq}';; *) cat '{ia}';; esac; fi; }}\n\
             case \"$*\" in *-lms*) while :; do emit \"$@\"; sleep 1; done;; *) emit \"$@\";; esac\n",
            pidfile = pidfile.display(),
            zq = zq.display(),
            za = za.display(),
            iq = iq.display(),
            ia = ia.display()
        ),
    );
    let config = lab.fleet("fleet.toml", "", &[("gpu-box", lab.host_entry(&sshd))]);
    let state = lab.path("state");
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; echo RIGWATCH-EXITED-$?; sleep 60",
        state.display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("kill", &command);
    tmux.wait_for("the zombie signal", Duration::from_secs(30), |s| {
        s.contains("computes nothing")
    });
    tmux.keys(&["K"]);
    let screen = tmux.wait_for("the dialog", Duration::from_secs(10), |s| {
        s.contains("End what holds VRAM on gpu-box")
    });
    assert!(
        screen.contains(&format!("{pid} python3 (29130 MiB)"))
            && screen.contains(&format!("kill -TERM {pid}; after 10 s, kill -KILL")),
        "{screen}"
    );
    let alive = || sshd.sh(&lab, &format!("kill -0 {pid} && echo ALIVE || echo GONE"));
    // A wrong name ends nothing.
    tmux.keys(&["g", "p", "u", "Enter"]);
    tmux.wait_for("the wrong name refused", Duration::from_secs(10), |s| {
        s.contains("type gpu-box exactly to confirm")
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        alive().contains("ALIVE"),
        "nothing was sent for a wrong name"
    );
    tmux.keys(&["gpu-box", "Enter"]);
    let screen = tmux.wait_for("the outcome", Duration::from_secs(40), |s| {
        s.contains("recorded in the ledger")
    });
    assert!(
        screen.contains(&format!("pid {pid} ended on KILL")),
        "TERM was ignored, KILL ended it:\n{screen}"
    );
    assert!(alive().contains("GONE"));
    tmux.wait_for(
        "the VRAM freed, as the driver reports it",
        Duration::from_secs(20),
        |s| s.contains("GPU 0: 28.5 GiB held before") && s.contains("GiB freed"),
    );
    tmux.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["q"]);
    tmux.wait_for("exit", Duration::from_secs(15), |s| {
        s.contains("RIGWATCH-EXITED-0")
    });
    let ledger = std::process::Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["ledger", "gpu-box"])
        .arg("--config")
        .arg(&config)
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("ledger");
    let text = String::from_utf8_lossy(&ledger.stdout);
    assert!(
        text.contains(&format!("KILL gpu-box {pid} python3 (29130 MiB)"))
            && text.contains(&format!("pid {pid} ended on KILL")),
        "{text}{}",
        String::from_utf8_lossy(&ledger.stderr)
    );
}
