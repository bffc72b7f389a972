//! `rigwatch pull` in a real terminal, against a box 100 ms away (the repository's delay proxy
//! in front of a real sshd): the bar says bytes, rate, ETA and how many files are left while it
//! runs, then gives way to the summary.

mod support;

use std::time::Duration;

use support::Lab;
use support::delay::DelayProxy;
use support::tmux::Tmux;

#[test]
fn a_pull_shows_rate_eta_and_files_left_while_it_runs() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("run");
    std::fs::create_dir_all(run.join("evals")).expect("dirs");
    support::write_random(&run.join("ckpt.bin"), 160 << 20, 3);
    for i in 0..40 {
        std::fs::write(
            run.join(format!("evals/e{i}.json")),
            format!("{{\"i\": {i}}}\n"),
        )
        .expect("eval");
    }
    // 100 ms, as the doc says: the copy then lasts seconds, not one poll of the screen.
    let proxy = DelayProxy::start(sshd.port, Duration::from_millis(100));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n[host.pull.verify]\n\"*.bin\" = \"test -s {{file}}\"",
        lab.host_entry_via(&sshd, proxy.port),
        run.display(),
        lab.path("pulled").display()
    );
    let fleet = lab.fleet("fleet.toml", "", &[("box", body)]);
    let command = format!(
        "XDG_STATE_HOME='{}' {} --config '{}' pull box; echo EXIT=$?; sleep 60",
        lab.path("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        fleet.display()
    );
    let tmux = Tmux::start("pullbar", &command);
    let bar = tmux.wait_for("the progress bar", Duration::from_secs(60), |s| {
        s.contains("copying") && s.contains("ETA") && s.contains("files left")
    });
    assert!(bar.contains("/s"), "a rate: {bar}");
    let end = tmux.wait_for("the summary", Duration::from_secs(120), |s| {
        s.contains("EXIT=")
    });
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(end.contains("41 proven, 0 unproven, 0 failed"), "{end}");
    assert!(!end.contains("files left"), "the bar is cleared: {end}");
}
