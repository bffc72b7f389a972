//! End to end in a real terminal: the real binary inside tmux against loopback sshd hosts with
//! shim tools. Starts the dashboard, sees real values, opens a detail, filters, kills one sshd
//! and sees only that host go down, quits, and checks the terminal was given back.

mod support;

use std::process::Stdio;
use std::time::Duration;

use support::tmux::Tmux;
use support::{GpuShim, Lab};

/// The host's row in the fleet table (not its lines in the events pane).
fn row<'a>(screen: &'a str, host: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(host) && [" ✓ ", " ✗ ", " … ", " ~ "].iter().any(|g| l.contains(g)))
        .unwrap_or("")
}

#[test]
fn dashboard_in_a_real_terminal_against_real_sshd() {
    let mut lab = Lab::new();
    let loaded = lab.start_host("loaded");
    loaded.shim_nvidia_smi(&GpuShim::LOAD);
    let zombie = lab.start_host("zombie");
    zombie.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/zombie_q.txt",
        apps: "h100/zombie_apps.txt",
        legacy_driver: false,
    });
    let mut doomed = lab.start_host("doomed");
    doomed.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/q_idle_csv.txt",
        apps: "h100/apps_idle.txt",
        legacy_driver: false,
    });
    let hosts = [
        ("gpu-loaded", lab.host_entry(&loaded)),
        ("gpu-zombie", lab.host_entry(&zombie)),
        ("gpu-doomed", lab.host_entry(&doomed)),
    ];
    let config = lab.fleet("fleet.toml", "", &hosts);
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; echo RIGWATCH-EXITED-$?; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("live", &command);

    let screen = tmux.wait_for(
        "three hosts up with real values",
        Duration::from_secs(30),
        |s| {
            ["gpu-loaded", "gpu-zombie", "gpu-doomed"]
                .iter()
                .all(|h| row(s, h).contains("✓ up"))
                && row(s, "gpu-loaded").contains("1365")
        },
    );
    assert!(
        tmux.alternate_screen_on(),
        "the dashboard runs on the alternate screen"
    );
    assert!(row(&screen, "gpu-loaded").contains("719W"), "{screen}");
    assert!(
        !screen.contains("DEMO"),
        "a live fleet is not labelled demo"
    );

    // Detail of the selected host (worst first: the zombie's VRAM signal puts it on top).
    let screen = tmux.wait_for("zombie signal", Duration::from_secs(20), |s| {
        s.contains("computes nothing")
    });
    assert!(
        screen
            .lines()
            .find(|l| l.contains('›'))
            .is_some_and(|l| l.contains("gpu-zombie")),
        "{screen}"
    );
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("detail", Duration::from_secs(10), |s| {
        s.contains("── GPUs") && s.contains("SM clock")
    });
    assert!(
        screen.contains("holds VRAM: pid 585 python3 29130 MiB"),
        "{screen}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("fleet again", Duration::from_secs(10), |s| {
        s.contains("HOST") && s.contains("LINK")
    });

    // Filter to one host, then clear.
    tmux.keys(&["/", "l", "o", "a", "d", "Enter"]);
    let screen = tmux.wait_for("filtered", Duration::from_secs(10), |s| {
        s.contains("1 of 3 match")
    });
    assert!(
        row(&screen, "gpu-zombie").is_empty() && !row(&screen, "gpu-loaded").is_empty(),
        "{screen}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("unfiltered", Duration::from_secs(10), |s| {
        s.contains("3 boxes")
    });

    // One box's sshd dies: that host goes down, the others stay up.
    doomed.kill();
    let screen = tmux.wait_for("doomed down", Duration::from_secs(20), |s| {
        row(s, "gpu-doomed").contains("✗ down")
    });
    assert!(
        row(&screen, "gpu-loaded").contains("✓ up") && row(&screen, "gpu-zombie").contains("✓ up"),
        "{screen}"
    );
    assert!(
        screen.contains("link up → down"),
        "the events pane says what changed:\n{screen}"
    );

    tmux.keys(&["q"]);
    let screen = tmux.wait_for("exit", Duration::from_secs(15), |s| {
        s.contains("RIGWATCH-EXITED-")
    });
    assert!(screen.contains("RIGWATCH-EXITED-0"), "{screen}");
    assert!(
        !tmux.alternate_screen_on(),
        "terminal restored: alternate screen left"
    );
    assert!(
        !screen.contains("HOST") || !screen.contains("LINK"),
        "the dashboard is gone from the screen:\n{screen}"
    );
}

#[test]
fn the_dashboard_refuses_a_non_terminal_with_a_hint() {
    let out = support::rigwatch()
        .arg("demo")
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs a terminal") && stderr.contains("rigwatch status"),
        "{stderr}"
    );
}

#[test]
fn demo_runs_in_a_terminal_labelled_and_quits_clean() {
    let tmux = Tmux::start(
        "demo",
        &format!(
            "{} demo; echo RIGWATCH-EXITED-$?; sleep 60",
            env!("CARGO_BIN_EXE_rigwatch")
        ),
    );
    let screen = tmux.wait_for("demo fleet", Duration::from_secs(20), |s| {
        s.contains("DEMO") && s.contains("h100-zombie")
    });
    assert!(screen.contains("8 boxes"), "{screen}");
    tmux.keys(&["?"]);
    tmux.wait_for("help", Duration::from_secs(10), |s| s.contains(" Keys "));
    // Not Escape then q: a terminal sends those two bytes as Alt-q.
    tmux.keys(&["?"]);
    tmux.wait_for("help closed", Duration::from_secs(10), |s| {
        !s.contains(" Keys ")
    });
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("exit", Duration::from_secs(10), |s| {
        s.contains("RIGWATCH-EXITED-")
    });
    assert!(screen.contains("RIGWATCH-EXITED-0"), "{screen}");
    assert!(!tmux.alternate_screen_on());
}

/// The data age the header shows, in seconds (`data 7s`).
fn header_age(screen: &str) -> Option<u64> {
    let first = screen.lines().next()?;
    let (_, rest) = first.split_once(" data ")?;
    rest.split_once('s')?.0.trim().parse().ok()
}

/// A box whose sshd is frozen (SIGSTOP) keeps its TCP connection and answers nothing; the link
/// has not been declared down yet (30 s keepalives). Within three periods the run leaves "alive" for
/// "unknown", and the header's data age is that box's, growing, not the fresh one's.
#[test]
fn a_frozen_box_stops_looking_alive_and_ages_the_header() {
    let mut lab = Lab::new();
    let frozen = lab.start_host("frozen");
    let fresh = lab.start_host("fresh");
    frozen.sh(&lab, "tmux new -d -s train 'sleep 600'");
    let hosts = [
        (
            "gpu-frozen",
            format!("{}\nrun = \"train\"", lab.host_entry(&frozen)),
        ),
        ("gpu-fresh", lab.host_entry(&fresh)),
    ];
    let config = lab.fleet("fleet.toml", "", &hosts);
    let text = std::fs::read_to_string(&config).expect("fleet");
    std::fs::write(
        &config,
        text.replace("keepalive_secs = 1\n", "keepalive_secs = 30\n"),
    )
    .expect("slow keepalives");
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("frozen", &command);
    tmux.wait_for("the run alive", Duration::from_secs(30), |s| {
        row(s, "gpu-frozen").contains("▶ alive") && row(s, "gpu-fresh").contains("✓ up")
    });
    frozen.freeze();
    let frozen_at = std::time::Instant::now();
    let screen = tmux.wait_for("the run unknown", Duration::from_secs(15), |s| {
        row(s, "gpu-frozen").contains("? unknown")
    });
    // Three 1 s periods, plus the second-granular clock and a redraw.
    assert!(
        frozen_at.elapsed() < Duration::from_secs(6),
        "took {:?}:\n{screen}",
        frozen_at.elapsed()
    );
    // Pings go unanswered, so the link may read slow, but it has not been declared down.
    assert!(
        !row(&screen, "gpu-frozen").contains("✗"),
        "the link has not timed out yet:\n{screen}"
    );
    let first = header_age(&screen).expect("header age");
    std::thread::sleep(Duration::from_secs(2));
    let later = header_age(&tmux.screen()).expect("header age");
    assert!(
        first >= 3 && later > first,
        "data age {first}s then {later}s"
    );
    frozen.thaw();
    tmux.keys(&["q"]);
}

/// A box rigwatch cannot log into, one whose host key changed and one never reached each need
/// the user: counted in the header, a "!" in NEEDS YOU with what to do, and found by `/down`.
#[test]
fn boxes_that_cannot_be_reached_or_logged_into_need_you_and_filter_as_down() {
    let mut lab = Lab::new();
    let good = lab.start_host("good");
    let locked = lab.start_host("locked");
    let mut rebuilt = lab.start_host("rebuilt");
    let mut gone = lab.start_host("gone");
    rebuilt.replace_host_key();
    gone.kill();
    let stranger = lab.path("stranger_ed25519");
    support::keygen(&stranger, "");
    let hosts = [
        ("box-good", lab.host_entry(&good)),
        (
            "box-locked",
            format!(
                "ssh = \"{}\"\nidentity = \"{}\"",
                locked.spec(&lab.user),
                stranger.display()
            ),
        ),
        ("box-rebuilt", lab.host_entry(&rebuilt)),
        ("box-gone", lab.host_entry(&gone)),
    ];
    let config = lab.fleet("fleet.toml", "", &hosts);
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("refused", &command);
    let screen = tmux.wait_for("every link settled", Duration::from_secs(30), |s| {
        row(s, "box-good").contains("✓ up")
            && row(s, "box-locked").contains("✗ auth")
            && row(s, "box-rebuilt").contains("✗ hostkey")
            && row(s, "box-gone").contains("✗ down")
    });
    let header = screen.lines().next().unwrap_or("");
    assert!(header.contains("3 need you"), "{header}");
    for (host, says) in [
        ("box-locked", "cannot log in"),
        ("box-rebuilt", "will not connect"),
        ("box-gone", "unreachable"),
    ] {
        let line = row(&screen, host);
        assert!(
            (line.contains('!') || line.contains('‼')) && line.contains(says),
            "{host}: {line}\n{screen}"
        );
    }
    assert!(!row(&screen, "box-good").contains('!'), "{screen}");

    tmux.keys(&["/", "d", "o", "w", "n", "Enter"]);
    let screen = tmux.wait_for("the /down filter", Duration::from_secs(5), |s| {
        row(s, "box-good").is_empty()
    });
    for host in ["box-locked", "box-rebuilt", "box-gone"] {
        assert!(
            !row(&screen, host).is_empty(),
            "{host} filtered out:\n{screen}"
        );
    }
    tmux.keys(&["q"]);
}

/// The demo shows the guard working: a box with no pull on record is refused; the zombie box,
/// whose results are home, accepts its typed name; and nothing is destroyed or recorded.
#[test]
fn the_demo_walks_the_teardown_guard_and_destroys_nothing() {
    let state = tempfile::tempdir().expect("state");
    let command = format!(
        "env XDG_STATE_HOME={} {} demo; sleep 60",
        state.path().display(),
        env!("CARGO_BIN_EXE_rigwatch"),
    );
    let tmux = Tmux::start("demo-guard", &command);
    tmux.wait_for("the demo", Duration::from_secs(20), |s| {
        s.contains("h100-train")
    });

    tmux.keys(&[
        "/", "h", "1", "0", "0", "-", "t", "r", "a", "i", "n", "Enter", "T",
    ]);
    let screen = tmux.wait_for("the refusal", Duration::from_secs(10), |s| {
        s.contains("REFUSED — not until") && s.contains("never pulled")
    });
    assert!(
        !screen.contains("Type the box's name to destroy it"),
        "{screen}"
    );
    // One key at a time: two ESC bytes in a row read as one Alt-Escape.
    tmux.keys(&["Escape"]);
    tmux.wait_for("the modal closed", Duration::from_secs(5), |s| {
        !s.contains("REFUSED — not until")
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("the filter cleared", Duration::from_secs(5), |s| {
        s.contains("Fleet · 8 boxes")
    });

    tmux.keys(&["/", "z", "o", "m", "b", "i", "e", "Enter", "T"]);
    let screen = tmux.wait_for("the name prompt", Duration::from_secs(10), |s| {
        s.contains("Type the box's name to destroy it")
    });
    assert!(screen.contains("verified-current"), "{screen}");
    assert!(
        screen.contains("vastai destroy instance '21437001' -y"),
        "{screen}"
    );
    let name: Vec<String> = "h100-zombie".chars().map(String::from).collect();
    let mut keys: Vec<&str> = name.iter().map(String::as_str).collect();
    keys.push("Enter");
    tmux.keys(&keys);
    let screen = tmux.wait_for("the rehearsal's end", Duration::from_secs(10), |s| {
        s.contains("nothing was destroyed or recorded")
    });
    assert!(!screen.contains("exited 0"), "{screen}");
    assert_eq!(
        screen.matches("nothing was destroyed").count()
            + screen.matches("nothing is destroyed").count(),
        1,
        "said once: {screen}"
    );
    assert_eq!(screen.matches("any key closes").count(), 1, "{screen}");
    tmux.keys(&["Escape"]);
    tmux.keys(&["q"]);
    assert!(
        !state.path().join("rigwatch/ledger.sqlite").exists(),
        "the demo wrote a ledger"
    );
}

/// `S` silences the selected host for `rigwatch watch` (the same file `rigwatch silence`
/// writes), the row says so, and `S` again lifts it.
#[test]
fn s_silences_the_selected_host_and_the_row_says_so() {
    let mut lab = Lab::new();
    let a = lab.start_host("a");
    let config = lab.fleet("fleet.toml", "", &[("box-a", lab.host_entry(&a))]);
    let state = lab.path("state");
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; sleep 60",
        state.display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("silence", &command);
    tmux.wait_for("the box up", Duration::from_secs(20), |s| {
        row(s, "box-a").contains("✓ up")
    });
    tmux.keys(&["S"]);
    let screen = tmux.wait_for("the silence", Duration::from_secs(5), |s| {
        s.contains("box-a: alerts silenced until") && row(s, "box-a").contains('⊘')
    });
    let listed = support::rigwatch()
        .args(["silence", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("silence list");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("box-a  silenced until"),
        "{listed}\n{screen}"
    );
    tmux.keys(&["S"]);
    tmux.wait_for("the silence lifted", Duration::from_secs(5), |s| {
        s.contains("box-a: silence lifted") && !row(s, "box-a").contains('⊘')
    });
    tmux.keys(&["q"]);
}

/// The live dashboard sends alerts as `rigwatch watch` does: a run that dies reaches the
/// `[[alert]]` sink once, with no watch running.
#[test]
fn the_dashboard_sends_a_dead_run_to_the_sink_once() {
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    gpu.sh(&lab, "tmux new -d -s train 'sleep 600'");
    let (script, calls) = support::recorder(&lab, "pager");
    let extra = format!(
        "[alerts]\ngroup_wait_secs = 2\n[[alert]]\nsink = \"command\"\nkinds = [\"run_*\"]\n\
         command = [\"{}\"]\n",
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
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    let tmux = Tmux::start("alerting", &command);
    tmux.wait_for("the run alive", Duration::from_secs(20), |s| {
        row(s, "gpu-1").contains("▶ alive")
    });
    gpu.sh(&lab, "tmux kill-session -t train");
    tmux.wait_for("the run dead", Duration::from_secs(20), |s| {
        row(s, "gpu-1").contains("DEAD")
    });
    let start = std::time::Instant::now();
    let mut text = String::new();
    while start.elapsed() < Duration::from_secs(15) && !text.contains("run_dead") {
        std::thread::sleep(Duration::from_millis(200));
        text = std::fs::read_to_string(&calls).unwrap_or_default();
    }
    std::thread::sleep(Duration::from_secs(4));
    let text = std::fs::read_to_string(&calls).unwrap_or(text);
    assert_eq!(
        text.matches(" run_dead").count(),
        1,
        "one sink call: {text}"
    );
    tmux.keys(&["q"]);
}

/// The mouse in a real terminal: an SGR click (as xterm-compatible terminals send it) on a
/// host's row selects that host, and the wheel over the events pane moves its cursor there.
#[test]
fn a_click_selects_a_row_and_the_wheel_scrolls_the_pane_under_it() {
    let tmux = Tmux::start(
        "mouse",
        &format!(
            "{} demo; echo RIGWATCH-EXITED-$?; sleep 60",
            env!("CARGO_BIN_EXE_rigwatch")
        ),
    );
    let screen = tmux.wait_for("demo fleet", Duration::from_secs(20), |s| {
        s.contains("DEMO") && s.contains("h100-idle")
    });
    let selected = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("│›"))
            .map(|l| l.to_string())
            .unwrap_or_default()
    };
    assert!(!selected(&screen).contains("h100-idle"), "{screen}");
    // The host's row on screen (0-based), clicked at column 5 (SGR is 1-based).
    let y = screen
        .lines()
        .position(|l| l.starts_with("│ h100-idle"))
        .expect("h100-idle's row");
    let click = |x: usize, y: usize| {
        tmux.keys(&["-l", &format!("\x1b[<0;{x};{y}M")]);
        tmux.keys(&["-l", &format!("\x1b[<0;{x};{y}m")]);
    };
    click(5, y + 1);
    let screen = tmux.wait_for("the click", Duration::from_secs(10), |s| {
        selected(s).contains("h100-idle")
    });
    // The wheel over the events pane focuses it and moves its cursor down one event.
    let events = screen
        .lines()
        .position(|l| l.starts_with("┌ Events"))
        .expect("the events pane");
    tmux.keys(&["-l", &format!("\x1b[<65;5;{}M", events + 3)]);
    tmux.wait_for("the wheel", Duration::from_secs(10), |s| {
        s.lines()
            .nth(events + 2)
            .is_some_and(|l| l.starts_with("│›"))
    });
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("exit", Duration::from_secs(10), |s| {
        s.contains("RIGWATCH-EXITED-")
    });
    assert!(screen.contains("RIGWATCH-EXITED-0"), "{screen}");
}

/// `:` in a real terminal: the line shows as it is typed, Tab completes, Enter runs it.
#[test]
fn a_colon_command_sorts_the_fleet_in_a_real_terminal() {
    let tmux = Tmux::start(
        "colon",
        &format!(
            "{} demo; echo RIGWATCH-EXITED-$?; sleep 60",
            env!("CARGO_BIN_EXE_rigwatch")
        ),
    );
    tmux.wait_for("demo fleet", Duration::from_secs(20), |s| {
        s.contains("sorted worst first")
    });
    tmux.keys(&[":", "s", "o", "r", "t", " ", "n", "Tab"]);
    tmux.wait_for("the completed line", Duration::from_secs(10), |s| {
        s.contains(" :sort name▏")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the fleet sorted by name", Duration::from_secs(10), |s| {
        s.contains("sorted by name")
    });
    tmux.keys(&[":", "q", "Enter"]);
    let screen = tmux.wait_for("exit", Duration::from_secs(10), |s| {
        s.contains("RIGWATCH-EXITED-")
    });
    assert!(screen.contains("RIGWATCH-EXITED-0"), "{screen}");
}
