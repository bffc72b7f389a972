//! A fault under the dashboard itself: the real binary in tmux with three loopback boxes, one of
//! which stops answering (frozen by SIGSTOP, or partitioned by iptables DROP in a network
//! namespace the test makes). Its row goes down within the keepalive window, while the other
//! rows' figures keep changing as their boxes change them and keys answer at once; healed, it
//! comes back by itself. Bounded: every wait has a limit.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::netns::Netns;
use support::tmux::Tmux;
use support::{GpuShim, Lab, Sshd};

/// The host's row in the fleet table (not its lines in the events pane).
fn row<'a>(screen: &'a str, host: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(host) && [" ✓ ", " ✗ ", " … ", " ~ "].iter().any(|g| l.contains(g)))
        .unwrap_or("")
}

/// The box's GPU now reports another SM clock: its row shows it at the next poll.
fn set_sm_clock(sshd: &Sshd, from: &str, to: &str) {
    let data = sshd.dir.join("shimdata/query_gpu.txt");
    let text = std::fs::read_to_string(&data).expect("gpu data");
    assert!(text.contains(from), "{text}");
    std::fs::write(&data, text.replace(from, to)).expect("gpu data");
}

enum Fault {
    Freeze,
    Partition(Netns),
}

impl Fault {
    fn start(&self, sshd: &Sshd) {
        match self {
            Fault::Freeze => sshd.freeze(),
            Fault::Partition(ns) => ns.partition(sshd.port),
        }
    }

    fn heal(&self, sshd: &Sshd) {
        match self {
            Fault::Freeze => sshd.thaw(),
            Fault::Partition(ns) => ns.heal(sshd.port),
        }
    }
}

#[test]
fn a_frozen_box_goes_down_under_the_dashboard_while_the_others_update_and_keys_answer() {
    fault_under_the_dashboard("frozen", Fault::Freeze);
}

#[test]
fn a_partitioned_box_goes_down_under_the_dashboard_while_the_others_update_and_keys_answer() {
    let Some(ns) = Netns::or_skip("a partition under the dashboard") else {
        return;
    };
    fault_under_the_dashboard("walled", Fault::Partition(ns));
}

fn fault_under_the_dashboard(tag: &str, fault: Fault) {
    let mut lab = Lab::new();
    let stuck = match &fault {
        Fault::Freeze => lab.start_host("stuck"),
        Fault::Partition(ns) => lab.start_host_in("stuck", ns),
    };
    let one = lab.start_host("one");
    let two = lab.start_host("two");
    for sshd in [&stuck, &one, &two] {
        sshd.shim_nvidia_smi(&GpuShim::LOAD);
    }
    let hosts = [
        ("gpu-stuck", lab.host_entry(&stuck)),
        ("gpu-one", lab.host_entry(&one)),
        ("gpu-two", lab.host_entry(&two)),
    ];
    // The lab's keepalive (1 s × 2) and poll (1 s): down by 1 s × (2 + 1) + a poll.
    let config = lab.fleet("fleet.toml", "", &hosts);
    let tmux = start(&lab, tag, &config);
    tmux.wait_for("three boxes up", Duration::from_secs(30), |s| {
        ["gpu-stuck", "gpu-one", "gpu-two"]
            .iter()
            .all(|h| row(s, h).contains("✓ up") && row(s, h).contains("1365"))
    });

    fault.start(&stuck);
    let fault_at = Instant::now();
    // Keys answer while the stuck box's probe hangs: a filter, then its clearing.
    tmux.keys(&["/", "gpu-one", "Enter"]);
    tmux.wait_for("the filter, at once", Duration::from_secs(2), |s| {
        s.contains("1 of 3 match") && row(s, "gpu-two").is_empty()
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("the filter cleared, at once", Duration::from_secs(2), |s| {
        s.contains("3 boxes")
    });
    let screen = tmux.wait_for("the stuck box down", Duration::from_secs(10), |s| {
        row(s, "gpu-stuck").contains("✗ down")
    });
    let down_after = fault_at.elapsed();
    assert!(
        down_after < Duration::from_secs(8),
        "down after {down_after:?}, past the keepalive window:\n{screen}"
    );
    for host in ["gpu-one", "gpu-two"] {
        assert!(row(&screen, host).contains("✓ up"), "{host}:\n{screen}");
    }

    // The others are still read every poll: a change on their boxes shows within two polls.
    set_sm_clock(&one, "1365 MHz", "1410 MHz");
    set_sm_clock(&two, "1365 MHz", "1455 MHz");
    let changed_at = Instant::now();
    let screen = tmux.wait_for("the others' new clocks", Duration::from_secs(5), |s| {
        row(s, "gpu-one").contains("1410") && row(s, "gpu-two").contains("1455")
    });
    eprintln!(
        "{tag}: down {down_after:?} after the fault; the others' change shown in {:?}",
        changed_at.elapsed()
    );
    assert!(row(&screen, "gpu-stuck").contains("✗ down"), "{screen}");
    // Moving the selection answers too, with a box still down.
    let selected = |s: &str| s.lines().find(|l| l.contains('›')).map(str::to_string);
    let before = selected(&screen);
    tmux.keys(&["j"]);
    tmux.wait_for(
        "the selection moved, at once",
        Duration::from_secs(2),
        |s| selected(s) != before,
    );

    fault.heal(&stuck);
    tmux.wait_for("the stuck box back", Duration::from_secs(20), |s| {
        row(s, "gpu-stuck").contains("✓ up")
    });
    tmux.keys(&["q"]);
}

fn start(lab: &Lab, tag: &str, config: &Path) -> Tmux {
    let command = format!(
        "env -u SSH_AUTH_SOCK XDG_STATE_HOME={} {} --config {}; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        config.display()
    );
    Tmux::start(&format!("fault-{tag}"), &command)
}
