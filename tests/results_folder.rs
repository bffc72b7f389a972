//! A realistic results folder, made by the field's own writers (tests/fixtures/results), pulled
//! over a real sshd with no verify command: every file is proven by its built-in check. The same
//! folder with damaged copies names each damaged file FAILED, and the teardown guard refuses.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use support::Lab;

fn fixtures(which: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/results")
        .join(which)
}

fn names(which: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(fixtures(which))
        .expect("fixtures")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != "DAMAGE.txt")
        .collect();
    out.sort();
    out
}

struct Box {
    lab: Lab,
    fleet: PathBuf,
    run: PathBuf,
    _sshd: support::Sshd,
}

/// A box whose run folder holds every good fixture, and a fleet that pulls it with no verify
/// command and tears it down with a program that must never run.
fn a_box() -> Box {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run/results");
    std::fs::create_dir_all(&run).expect("dirs");
    for name in names("good") {
        std::fs::copy(fixtures("good").join(&name), run.join(&name)).expect("copy fixture");
    }
    let destroyed = lab.path("destroyed");
    let teardown = lab.path("destroy.sh");
    std::fs::write(
        &teardown,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", destroyed.display()),
    )
    .expect("teardown script");
    std::fs::set_permissions(&teardown, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let body = format!(
        "{}\nteardown = \"{}\"\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"",
        lab.host_entry(&sshd),
        teardown.display(),
        run.display(),
        lab.path("pulled").display()
    );
    let fleet = lab.fleet("fleet.toml", "", &[("box", body)]);
    Box {
        lab,
        fleet,
        run,
        _sshd: sshd,
    }
}

impl Box {
    fn rigwatch(&self, args: &[&str]) -> Output {
        self.lab
            .rigwatch_on(&self.fleet)
            .args(args)
            .output()
            .expect("run rigwatch")
    }

    fn outcomes(&self) -> Vec<(String, String)> {
        let out = self.rigwatch(&["ledger", "box", "--json"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
        let pulls = doc["pulls"].as_array().expect("pulls");
        let last = pulls.last().expect("a pull");
        let mut files: Vec<(String, String)> = last["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| {
                let path = f["remote_path"].as_str().unwrap_or_default();
                let name = path.rsplit('/').next().unwrap_or_default().to_string();
                (name, f["outcome"].as_str().unwrap_or_default().to_string())
            })
            .collect();
        files.sort();
        files
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_real_results_folder_is_proven_without_any_verify_command() {
    let b = a_box();
    let out = b.rigwatch(&["pull", "box"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let all = names("good");
    assert!(
        said.contains(&format!("{} proven, 0 unproven, 0 failed", all.len())),
        "{said}"
    );
    let outcomes = b.outcomes();
    assert_eq!(outcomes.len(), all.len(), "{outcomes:?}");
    assert!(outcomes.iter().all(|(_, o)| o == "proven"), "{outcomes:?}");
    // The guard accepts the pull: what is left is only that no person is at a terminal.
    let out = b.rigwatch(&["teardown", "box"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("needs a person at a terminal"), "{said}");
    assert!(!said.contains("not verified"), "{said}");
    assert!(
        !b.lab.path("destroyed").exists(),
        "nothing may be destroyed"
    );
}

#[test]
fn a_damaged_results_folder_names_each_damaged_file_and_the_guard_refuses() {
    let b = a_box();
    let damaged = names("damaged");
    for name in &damaged {
        std::fs::copy(fixtures("damaged").join(name), b.run.join(name)).expect("damage");
    }
    let out = b.rigwatch(&["pull", "box"]);
    let said = text(&out);
    let good = names("good").len();
    assert!(
        said.contains(&format!(
            "{} proven, 0 unproven, {} failed",
            good - damaged.len(),
            damaged.len()
        )),
        "{said}"
    );
    for name in &damaged {
        let line = said
            .lines()
            .find(|l| l.contains(&format!("/{name} ")))
            .unwrap_or_else(|| panic!("no line for {name} in:\n{said}"));
        assert!(line.trim_start().starts_with("FAILED"), "{line}");
        // Checked where its `.part` waited, it is still named by its own name.
        assert!(
            !line.contains(".part") && !line.contains("staging"),
            "{line}"
        );
    }
    let failed: Vec<String> = b
        .outcomes()
        .into_iter()
        .filter(|(_, o)| o == "failed")
        .map(|(n, _)| n)
        .collect();
    assert_eq!(failed, damaged);
    let out = b.rigwatch(&["teardown", "box"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("REFUSED"), "{said}");
    // A damaged copy never took its name: the guard says where it waits instead.
    assert!(
        said.contains("not under its name, until a copy that loads is pulled"),
        "{said}"
    );
    for name in &damaged {
        let home = b.lab.path("pulled/results").join(name);
        assert!(
            !home.exists(),
            "{home:?} looks like a result in a file browser"
        );
    }
    assert!(
        !b.lab.path("destroyed").exists(),
        "nothing may be destroyed"
    );
}
