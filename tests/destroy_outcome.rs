//! What a destroy really did, end to end: the real binary in a real terminal, a real sshd box,
//! the ledger on disk, and the `vastai` stand-in whose listing a destroy empties (or not). Exit 0
//! is not proof; a signal in the middle neither loses the record nor orphans the command; a
//! timed-out destroy leaves no child behind; a key in the command is never shown or kept.

mod support;

use std::path::Path;
use std::time::Duration;

use support::vast_box::{Setup, setup_in, setup_with};
use support::{Lab, poll_until, signal};

const ID: &str = "instance_id = \"4242\"\n";

/// Asks the provider quickly, so a destroy that is never confirmed ends in seconds.
const FAST: &str = "[teardown]\nconfirm_within_secs = 2\nconfirm_every_secs = 0.2\n";

fn teardowns(s: &Setup) -> Vec<serde_json::Value> {
    let out = s.rigwatch(&["ledger", "box", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
    doc["teardowns"].as_array().cloned().unwrap_or_default()
}

/// The screen with its wrapped rows joined, so a long line reads whole.
fn joined(screen: &str) -> String {
    screen.replace('\n', "")
}

/// Gone, or a zombie nobody reaps (a container's init may not).
fn gone(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

#[test]
fn exit_zero_is_not_proof_the_provider_decides() {
    let mut s = setup_with(ID, FAST);
    s.extra_env
        .push(("RIGWATCH_VASTAI_KEEP".into(), "1".into()));
    s.pull();
    let screen = joined(&s.in_terminal("box", "kept"));
    assert!(
        screen.contains(
            "UNCONFIRMED: the destroy command exited 0, but vastai still lists instance 4242 as \
             running 2s after it: check the provider; recorded in"
        ),
        "{screen}"
    );
    assert!(screen.contains("EXIT=4"), "{screen}");
    let t = &teardowns(&s)[0];
    assert_eq!(
        (&t["outcome"], &t["exit_status"]),
        (&"unconfirmed".into(), &0.into())
    );
    // vast.ai drops the instance later: the next start that can ask looks once more and adds
    // what it sees as a row of its own; the outcome recorded at the time stays as it was.
    std::fs::write(&s.listing, "[]").expect("gone now");
    let out = s.rigwatch(&["teardown", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("looked at again, vastai no longer lists instance 4242: now confirmed"),
        "{text}"
    );
    let t = &teardowns(&s)[0];
    assert_eq!(t["outcome"], "unconfirmed", "never an edit: {t}");
    assert_eq!(t["later"][0]["outcome"], "confirmed", "{t}");
    let out = s.rigwatch(&["teardown", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("looked at again"),
        "one later look settles it: {text}"
    );
    assert_eq!(teardowns(&s)[0]["later"].as_array().map(Vec::len), Some(1));
    let out = s.rigwatch(&["ledger", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(": confirmed: looked again after the destroy had ended"),
        "{text}"
    );

    let s = setup_with(ID, FAST);
    s.pull();
    let screen = joined(&s.in_terminal("box", "dropped"));
    assert!(
        screen.contains("confirmed: vastai no longer lists instance 4242; recorded in"),
        "{screen}"
    );
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert_eq!(teardowns(&s)[0]["outcome"], "confirmed");

    // Exit 1 proves nothing either: a destroy that failed after it destroyed is recorded as
    // destroyed, with its exit code, once the provider no longer lists the instance.
    let failing =
        format!("{ID}teardown = \"vastai destroy instance {{instance_id}} -y; exit 1\"\n");
    let s = setup_with(&failing, FAST);
    s.pull();
    let screen = joined(&s.in_terminal("box", "failed-gone"));
    assert!(
        screen.contains(
            "confirmed: the destroy command exited 1, but vastai no longer lists instance 4242: \
             destroyed"
        ),
        "{screen}"
    );
    assert!(screen.contains("EXIT=0"), "{screen}");
    let t = &teardowns(&s)[0];
    assert_eq!(
        (&t["outcome"], &t["exit_status"]),
        (&"confirmed".into(), &1.into())
    );

    // One that failed and left the instance listed is FAILED, and says what the provider saw.
    let mut s = setup_with(&failing, FAST);
    s.extra_env
        .push(("RIGWATCH_VASTAI_KEEP".into(), "1".into()));
    s.pull();
    let screen = joined(&s.in_terminal("box", "failed"));
    assert!(
        screen.contains(
            "FAILED: the destroy command exited 1; vastai still lists instance 4242 as running: \
             it may still bill"
        ),
        "{screen}"
    );
    assert!(screen.contains("EXIT=1"), "{screen}");
    let t = &teardowns(&s)[0];
    assert_eq!(
        (&t["outcome"], &t["exit_status"]),
        (&"failed".into(), &1.into())
    );
}

/// A destroy that takes 3 s before it calls the provider's CLI.
fn slow() -> String {
    format!("{ID}teardown = \"sleep 3; vastai destroy instance {{instance_id}} -y\"\n")
}

#[test]
fn sigterm_during_a_destroy_waits_and_records_the_intent_then_the_outcome() {
    let s = setup_with(&slow(), FAST);
    s.pull();
    let (tmux, pid) = s.teardown_typed("box", "sigterm");
    tmux.wait_for("the destroy", Duration::from_secs(30), |sc| {
        sc.contains("running: sleep 3;")
    });
    assert!(
        poll_until(Duration::from_secs(2), || teardowns(&s).len() == 1),
        "the intent is recorded before the command runs"
    );
    assert_eq!(teardowns(&s)[0]["outcome"], serde_json::Value::Null);
    signal(pid, "TERM");
    let screen = joined(&tmux.wait_for("the end", Duration::from_secs(60), |sc| {
        sc.contains("EXIT=")
    }));
    assert!(screen.contains("SIGTERM: a destroy is running"), "{screen}");
    assert!(
        screen.contains("confirmed: vastai no longer lists instance 4242"),
        "{screen}"
    );
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert_eq!(s.changes(), vec!["vastai destroy instance 4242 -y"]);
    let all = teardowns(&s);
    assert_eq!((all.len(), &all[0]["outcome"]), (1, &"confirmed".into()));
}

#[test]
fn sigterm_to_the_dashboard_during_a_destroy_waits_for_its_outcome() {
    let s = setup_with(&slow(), FAST);
    s.pull();
    let (tmux, pid) = s.dashboard_and_pid("dash-term");
    tmux.keys(&["T"]);
    tmux.wait_for("a verified-current pull", Duration::from_secs(20), |sc| {
        sc.contains("The last pull is verified-current")
    });
    tmux.keys(&["b", "o", "x", "Enter"]);
    assert!(
        poll_until(Duration::from_secs(20), || teardowns(&s).len() == 1),
        "the intent is recorded"
    );
    signal(pid, "TERM");
    tmux.wait_for("the notice", Duration::from_secs(5), |sc| {
        sc.contains("a destroy is running: rigwatch exits once")
    });
    assert!(!gone(pid), "rigwatch waits for the destroy");
    assert!(
        poll_until(Duration::from_secs(30), || gone(pid)),
        "and exits once it has ended"
    );
    let all = teardowns(&s);
    assert_eq!((all.len(), &all[0]["outcome"]), (1, &"confirmed".into()));
}

#[test]
fn a_rigwatch_killed_mid_destroy_leaves_a_destroy_that_holds_its_box_until_it_ends() {
    let s = setup_with(&slow(), FAST);
    s.pull();
    let (tmux, pid) = s.teardown_typed("box", "sigkill");
    tmux.wait_for("the destroy", Duration::from_secs(30), |sc| {
        sc.contains("running: sleep 3;")
    });
    assert!(poll_until(Duration::from_secs(2), || teardowns(&s).len() == 1));
    signal(pid, "KILL");
    tmux.wait_for("the end", Duration::from_secs(10), |sc| {
        sc.contains("EXIT=137")
    });
    // The destroy runs on in its own process group, holding the box (its stdin is the box's
    // lock): a look now says it is still running, and asks no provider yet; a pull is refused.
    let out = s.rigwatch(&["ledger", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "a destroy of box (instance 4242) started by pid {pid} at"
        )) && text.contains("is still running"),
        "{text}"
    );
    assert!(text.contains("NO RECORDED OUTCOME"), "{text}");
    let out = s.rigwatch(&["pull", "box", "--no-wait"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{said}");
    assert!(said.contains("a teardown of box box is running"), "{said}");
    // It went on, and vast.ai forgot the instance.
    assert!(
        poll_until(Duration::from_secs(10), || !s.changes().is_empty()),
        "the destroy went on after rigwatch died"
    );
    assert!(
        poll_until(Duration::from_secs(10), || {
            let out = s.rigwatch(&["ledger", "box"]);
            String::from_utf8_lossy(&out.stdout).contains(
                "has no recorded outcome: rigwatch was stopped while it ran; check the provider",
            )
        }),
        "once it has ended, the look says so"
    );
    // A start that knows the fleet asks the provider and records what it sees.
    let out = s.rigwatch(&["teardown", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("vastai no longer lists instance 4242: recorded as confirmed"),
        "{text}"
    );
    assert_eq!(teardowns(&s)[0]["outcome"], "confirmed");
}

#[test]
fn a_timed_out_destroy_ends_its_whole_process_group() {
    let lab = Lab::new();
    let pidfile = lab.path("child.pid");
    let forking = format!(
        "{ID}teardown = \"sh -c 'sleep 30 & echo $! > {}; sleep 30'\"\n",
        pidfile.display()
    );
    let tuning = "[teardown]\ndestroy_timeout_secs = 2\nconfirm_within_secs = 1\n";
    let s = setup_in(lab, &forking, tuning);
    s.pull();
    let screen = joined(&s.in_terminal("box", "forks"));
    assert!(
        screen.contains(
            "FAILED: timed out after 2s; its process group was ended; it may or may not have \
             taken effect: check the provider"
        ),
        "{screen}"
    );
    assert!(screen.contains("EXIT=1"), "{screen}");
    let child: i32 = std::fs::read_to_string(&pidfile)
        .expect("the destroy's child wrote its pid")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        poll_until(Duration::from_secs(3), || gone(child)),
        "the destroy's backgrounded child {child} outlived its timeout"
    );
    let t = &teardowns(&s)[0];
    assert_eq!(t["outcome"], "failed");
    assert!(
        t["why"]
            .as_str()
            .is_some_and(|w| w.contains("its process group was ended")),
        "{t}"
    );
}

/// Every file under `dir` (the ledger, its WAL, the log, the hosts memory).
fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn a_key_in_the_destroy_command_is_never_shown_logged_or_recorded() {
    let key = "sk-abcdef0123456789";
    let keyed =
        format!("{ID}teardown = \"vastai destroy instance {{instance_id}} -y --api-key {key}\"\n");
    let mut s = setup_with(&keyed, FAST);
    s.extra_env.push(("RIGWATCH_LOG".into(), "debug".into()));
    s.pull();

    let tmux = s.dashboard("keyed");
    tmux.keys(&["T"]);
    let screen = tmux.wait_for("the modal", Duration::from_secs(20), |sc| {
        sc.contains("The last pull is verified-current")
    });
    assert!(screen.contains("--api-key ****"), "{screen}");
    assert!(!screen.contains(key), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.keys(&["q"]);

    let screen = s.in_terminal("box", "keyed-cli");
    assert!(screen.contains("--api-key ****"), "{screen}");
    assert!(!screen.contains(key), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        s.changes()[0].ends_with(key),
        "the command itself got the key"
    );

    let out = s.rigwatch(&["ledger", "box", "--json"]);
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(
        json.contains("--api-key ****") && !json.contains(key),
        "{json}"
    );
    let mut files = Vec::new();
    files_under(&s.lab.path("state"), &mut files);
    let log = files.iter().find(|f| f.ends_with("rigwatch.log"));
    let log = std::fs::read_to_string(log.expect("the log")).expect("log");
    assert!(
        log.contains("teardown runs: ") && log.contains("--api-key ****"),
        "{log}"
    );
    for file in &files {
        let bytes = std::fs::read(file).expect("read");
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "{} keeps the key",
            file.display()
        );
    }
}
