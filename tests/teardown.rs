//! The teardown guard end to end: the real binary, a real sshd box, the ledger on disk, and a
//! recording shim standing in for `vastai`. Refused before any pull, after a corrupted local
//! copy, after a new checkpoint appears on the box, without a terminal, and for a mistyped name;
//! then a clean pull and the typed name call the destroy exactly once with the right instance.

mod support;

use std::path::Path;
use std::time::Duration;

use support::Lab;
use support::vast_box::{providers, setup, setup_in, setup_with, vast_listing};

#[test]
fn teardown_is_refused_until_a_verified_current_pull_then_runs_once() {
    let s = setup();
    s.refused("never pulled");

    s.pull();
    let model = s.dest.join("final_ckpts/model.bin");
    let mut bytes = std::fs::read(&model).expect("local model");
    bytes[1234] ^= 0xff;
    std::fs::write(&model, bytes).expect("corrupt");
    s.refused("no longer matches its hash");

    s.pull();
    s.refused("needs a person at a terminal");

    std::fs::write(s.run.join("final_ckpts/ckpt_new.bin"), b"newer").expect("new ckpt");
    s.refused("appeared on the box after the pull");

    s.pull();
    let screen = s.in_terminal("bxo", "typo");
    assert!(screen.contains("type the box's name, box"), "{screen}");
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(s.changes().is_empty(), "a mistyped name must not destroy");

    let out = s.rigwatch(&["teardown", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("will run: vastai destroy instance '4242' -y"),
        "{text}"
    );
    let screen = s.in_terminal("box", "confirm");
    assert!(screen.contains("destroying instance 4242."), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert_eq!(s.changes(), vec!["vastai destroy instance 4242 -y"]);

    let out = s.rigwatch(&["ledger", "box", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
    let teardowns = doc["teardowns"].as_array().expect("teardowns");
    assert_eq!(teardowns.len(), 1);
    assert_eq!(teardowns[0]["instance_id"], "4242");
    assert_eq!(teardowns[0]["exit_status"], 0);
    assert_eq!(teardowns[0]["outcome"], "confirmed");
    assert_eq!(teardowns[0]["pull_id"], doc["pulls"][0]["id"]);
    let outcomes: Vec<&str> = doc["pulls"][0]["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["outcome"].as_str())
        .collect();
    assert!(
        !outcomes.is_empty() && outcomes.iter().all(|o| *o == "proven"),
        "the JSON says each file's outcome: {outcomes:?}"
    );
    // The text form is one history in time order: the pull, then the teardown relying on it.
    let out = s.rigwatch(&["ledger", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let pull_at = text.find("  pull #").expect("pull line");
    let teardown_at = text.find("  TEARDOWN ").expect("teardown line");
    assert!(pull_at < teardown_at, "{text}");
}

/// `%T@` and `%C@` of `path` as the box's find prints them, NUL-separated.
fn find_stamp(path: &Path) -> String {
    let out = std::process::Command::new("find")
        .arg(path)
        .args(["-printf", "%T@\\0%C@"])
        .output()
        .expect("find");
    String::from_utf8(out.stdout).expect("digits")
}

/// A re-pull carries a settled file's record without hashing it (unchanged by stat on both
/// ends); what proves the box still holds those bytes is the teardown's re-hash, not stat. A box
/// whose stat says nothing changed after a write (some network and FUSE filesystems keep the
/// times of a write through a memory map; here its `find` prints the stamp the pull saw) is
/// refused by content.
#[test]
fn a_change_that_keeps_every_stat_is_refused_by_the_re_hash_after_a_settled_re_pull() {
    let s = setup();
    s.pull();
    s.pull();
    let out = s.rigwatch(&["ledger", "box", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
    let files = doc["pulls"][0]["files"].as_array().expect("files");
    assert!(
        !files.is_empty() && files.iter().all(|f| f["settled_since"].is_i64()),
        "the re-pull carried every record by stat: {files:?}"
    );
    let model = s.run.join("final_ckpts/model.bin");
    let pulled = find_stamp(&model);
    let mut bytes = std::fs::read(&model).expect("model");
    bytes[1234] ^= 0xff;
    // In place: the same inode and size, other bytes.
    std::fs::write(&model, bytes).expect("write in place");
    let now = find_stamp(&model);
    assert_ne!(now, pulled);
    s._sshd.shim_script(
        "find",
        &format!(
            "#!/usr/bin/perl\nmy ($now, $pulled) = (\"\\x{{0}}{}\\x{{0}}\", \"\\x{{0}}{}\\x{{0}}\");\n\
             open(my $f, '-|', '/usr/bin/find', @ARGV) or exit 127;\n\
             local $/; my $out = <$f>; close($f); my $s = $? >> 8;\n\
             $out =~ s/\\Q$now\\E/$pulled/g; print $out; exit $s;\n",
            now.replace('\0', "\\x{0}"),
            pulled.replace('\0', "\\x{0}")
        ),
    );
    // The check that allows a destroy runs after the name is typed.
    let screen = s.in_terminal("box", "samestat");
    assert!(
        screen.contains("holds other bytes on the box than were pulled"),
        "{screen}"
    );
    assert!(!screen.contains("EXIT=0"), "{screen}");
    assert!(s.changes().is_empty(), "nothing destroyed on a stat");
}

/// A `rigwatch pull` from another terminal while the dashboard is up runs on the dashboard's
/// connection: its end is the dashboard's own status line, and a teardown dialog open on the
/// box no longer stands on the check it took before the pull began (it looks again).
#[test]
fn a_pull_from_another_terminal_runs_in_the_dashboard_and_the_open_dialog_looks_again() {
    let s = setup();
    let tmux = s.dashboard("served");
    tmux.keys(&["T"]);
    tmux.wait_for("the refusal", Duration::from_secs(20), |sc| {
        sc.contains("REFUSED — not until") && sc.contains("never pulled")
    });
    s.pull();
    let screen = tmux.wait_for("the served pull", Duration::from_secs(30), |sc| {
        sc.contains("pull #1 of box: 2/2 files hashed and verified")
    });
    assert!(
        !screen.contains("never pulled"),
        "the dialog still stands on the check taken before the pull: {screen}"
    );
    assert!(s.changes().is_empty(), "nothing destroyed");
}

#[test]
fn the_dashboard_modal_refuses_then_pulls_then_destroys_once() {
    let s = setup();
    let tmux = s.dashboard("modal");
    tmux.keys(&["T"]);
    let screen = tmux.wait_for("the refusal", Duration::from_secs(20), |sc| {
        sc.contains("REFUSED — not until") && sc.contains("never pulled")
    });
    assert!(screen.contains("Teardown box — guarded"), "{screen}");
    assert!(
        screen.contains("will run: vastai destroy instance '4242' -y"),
        "{screen}"
    );
    tmux.keys(&["b", "o", "x", "Enter"]);
    let screen = tmux.wait_for("the refusal again", Duration::from_secs(10), |sc| {
        sc.contains("never pulled") && sc.contains("Esc close")
    });
    assert!(
        !screen.contains("Type the box's name to destroy it"),
        "no name prompt while refused: {screen}"
    );
    assert!(
        !screen.contains("type the box's name, box") && !screen.contains("Enter confirm"),
        "a refused box never asks for the name, nor offers Enter: {screen}"
    );
    assert!(
        s.changes().is_empty(),
        "refused: the destroy shim must not run"
    );
    tmux.escape_closing("Teardown box — guarded");

    tmux.keys(&["p"]);
    tmux.wait_for("the pull", Duration::from_secs(60), |sc| {
        sc.contains("pull #1 of box: 2/2 files hashed and verified")
    });
    tmux.keys(&["T"]);
    tmux.wait_for("a verified-current pull", Duration::from_secs(20), |sc| {
        sc.contains("The last pull is verified-current")
    });
    tmux.keys(&["b", "o", "x", "Enter"]);
    let screen = tmux.wait_for("the destroy", Duration::from_secs(30), |sc| {
        sc.contains("confirmed: vastai no longer lists instance 4242")
    });
    assert!(screen.contains("destroying instance 4242."), "{screen}");
    assert_eq!(s.changes(), vec!["vastai destroy instance 4242 -y"]);
    tmux.keys(&["Escape"]);
    tmux.keys(&["q"]);
}

/// Opened, checked current, then a checkpoint lands on the box while the user types: the look
/// taken after the last Enter sees it, and nothing runs.
#[test]
fn the_dashboard_refuses_on_a_checkpoint_written_after_the_modal_opened() {
    let s = setup();
    s.pull();
    let tmux = s.dashboard("stale");
    tmux.keys(&["T"]);
    tmux.wait_for("a verified-current pull", Duration::from_secs(20), |sc| {
        sc.contains("The last pull is verified-current")
    });
    std::fs::write(s.run.join("final_ckpts/step_after.bin"), b"late").expect("late ckpt");
    tmux.keys(&["b", "o", "x", "Enter"]);
    let screen = tmux.wait_for("the refusal", Duration::from_secs(20), |sc| {
        sc.contains("changed after you confirmed")
    });
    assert!(screen.contains("step_after.bin"), "{screen}");
    std::thread::sleep(Duration::from_secs(1));
    assert!(s.changes().is_empty(), "nothing may run: {:?}", s.changes());
    tmux.keys(&["Escape"]);
    tmux.keys(&["q"]);
}

#[test]
fn a_vast_box_without_an_instance_id_is_refused_before_any_name_and_never_recorded() {
    let s = setup_with("", "");
    s.pull();
    s.refused("needs the instance id");
}

#[test]
fn an_instance_id_that_is_another_box_is_refused() {
    let s = setup();
    std::fs::write(&s.listing, vast_listing("4242", s.port.wrapping_add(1))).expect("listing");
    s.pull();
    s.refused("belongs to another box");
    std::fs::write(&s.listing, vast_listing("999", s.port)).expect("listing");
    s.refused("lists no instance 4242");
}

/// `[providers] vastai` names a CLI that is not on PATH: the destroy runs that one (with plain
/// `vastai` it would fail with exit 127 after both confirmations), and a missing one is refused
/// before the name.
#[test]
fn the_configured_provider_cli_is_the_one_the_destroy_runs() {
    let setup_at = |program: &Path| {
        setup_with(
            "instance_id = \"4242\"\n",
            &format!("[providers]\nvastai = \"{}\"\n", program.display()),
        )
    };
    let s = setup_at(Path::new("/nonexistent/bin/vastai"));
    s.pull();
    let out = s.rigwatch_without_shims(&["teardown", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("/nonexistent/bin/vastai"), "{text}");
    assert!(text.contains("REFUSED"), "{text}");

    let s = setup_at(&providers().join("vastai"));
    s.pull();
    let out = s.rigwatch_without_shims(&["teardown", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "will run: '{}' destroy instance '4242' -y",
            providers().join("vastai").display()
        )),
        "{text}"
    );
    assert!(text.contains("needs a person at a terminal"), "{text}");
}

/// `run/final_ckpts/ckpt -> elsewhere`: the pull names the link and the guard refuses until its
/// target is a pull path too; a dangling link refuses the same way.
#[test]
fn a_link_out_of_the_results_refuses_until_its_target_is_pulled() {
    let s = setup();
    let data = s.run.join("../data_disk");
    std::fs::create_dir_all(&data).expect("data");
    std::fs::write(data.join("step9.bin"), b"only copy").expect("ckpt");
    std::os::unix::fs::symlink(&data, s.run.join("final_ckpts/ckpt")).expect("link");
    let out = s.rigwatch(&["pull", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("final_ckpts/ckpt"), "{text}");
    assert!(text.contains("outside the pull paths"), "{text}");
    s.refused("outside the pull paths");
}

/// Logged in as a user without root's rights, a folder in the results that user cannot read:
/// `find` can list nothing inside it, and that is never "nothing there". The pull names the
/// folder, the guard refuses by that name, and once it is readable both go on.
#[test]
fn an_unreadable_folder_refuses_by_name_for_a_plain_user() {
    use std::os::unix::fs::PermissionsExt as _;
    let mut lab = Lab::new();
    lab.unprivileged();
    let s = setup_in(lab, "instance_id = \"4242\"\n", "");
    let locked = s.run.join("final_ckpts/locked");
    std::fs::create_dir_all(&locked).expect("locked dir");
    std::fs::write(locked.join("step5.bin"), b"only copy").expect("ckpt");
    let chmod = |mode| {
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(mode)).expect("chmod")
    };
    chmod(0o000);
    let out = s.rigwatch(&["pull", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("final_ckpts/locked"), "{text}");
    assert!(text.contains("cannot read or enter"), "{text}");
    s.refused("final_ckpts/locked");
    chmod(0o755);
    s.pull();
    assert_eq!(
        std::fs::read(s.dest.join("final_ckpts/locked/step5.bin")).expect("pulled"),
        b"only copy"
    );
    s.refused("needs a person at a terminal");
}

/// A file on the box named with a terminal escape (an OSC title set and a clipboard write):
/// neither the CLI's output nor the bytes the dashboard sends the terminal ever carry it.
#[test]
fn an_escape_in_a_remote_file_name_never_reaches_the_terminal() {
    let s = setup();
    let evil = "x\u{1b}]0;PWNED\u{7}\u{1b}]52;c;UFdORUQ=\u{7}.bin";
    std::fs::write(s.run.join("final_ckpts").join(evil), b"data").expect("evil name");
    for args in [
        &["pull", "box"][..],
        &["teardown", "box"],
        &["ledger", "box"],
    ] {
        let out = s.rigwatch(args);
        for stream in [&out.stdout, &out.stderr] {
            assert!(
                !stream.contains(&0x1b) && !stream.contains(&0x07),
                "{args:?} wrote a raw escape: {}",
                String::from_utf8_lossy(stream).escape_debug()
            );
        }
        assert!(
            // A name is shown with its escapes made visible (`\x1b]0;PWNED…`) or, in a line
            // of prose, with each sequence taken out whole.
            ["PWNED", "final_ckpts/x.bin"]
                .iter()
                .any(|w| String::from_utf8_lossy(&out.stdout).contains(w)),
            "{args:?} should still name the file: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    std::fs::write(s.run.join("final_ckpts/late.bin"), b"late").expect("late");
    let tmux = s.dashboard("escape");
    let bytes = s.lab.path("terminal.bytes");
    tmux.pipe_to(&bytes);
    tmux.keys(&["T"]);
    tmux.wait_for("the refusal", Duration::from_secs(20), |sc| {
        sc.contains("REFUSED") && sc.contains("late.bin")
    });
    tmux.keys(&["p"]);
    std::thread::sleep(Duration::from_secs(3));
    let written = std::fs::read(&bytes).expect("terminal bytes");
    for payload in [&b"\x1b]0;PWNED"[..], b"\x1b]52;c;"] {
        assert!(
            !written.windows(payload.len()).any(|w| w == payload),
            "the remote name's escape reached the terminal"
        );
    }
    assert!(
        written.windows(5).any(|w| w == b"PWNED"),
        "the modal should still show the name"
    );
    tmux.keys(&["Escape"]);
    tmux.keys(&["q"]);
}

/// A checkpoint whose name is not UTF-8 (Latin-1 from an old tool): pulled over the real sshd
/// to a local file of the same bytes, shown escaped, and counted current by the guard.
#[test]
fn a_name_that_is_not_utf8_is_pulled_byte_for_byte_and_counts() {
    use std::os::unix::ffi::OsStrExt as _;
    let s = setup();
    let name = std::ffi::OsStr::from_bytes(b"step_\xe9t\xe9.bin");
    std::fs::write(s.run.join("final_ckpts").join(name), vec![3u8; 70_000]).expect("latin-1");
    let out = s.rigwatch(&["pull", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("step_\\xe9t\\xe9.bin"), "{text}");
    assert_eq!(
        std::fs::read(s.dest.join("final_ckpts").join(name)).expect("pulled"),
        vec![3u8; 70_000]
    );
    s.refused("needs a person at a terminal");
}
