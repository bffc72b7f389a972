//! Two actions on one box at once, as an operator's second terminal or a cron `rigwatch pull`
//! makes them: the real binary, a real sshd box, the ledger and the locks on disk.
//! - a pull stalled mid-copy (SIGSTOP: a slow link, a suspended laptop) while the box's file is
//!   replaced: a second pull waits for it (or with `--no-wait` exits 75 at once), a teardown
//!   meanwhile is refused and names the pull's process, and once both pulls have ended every
//!   proven record's hash is that of the bytes at home.
//!
//! (A destroy that outlives a killed rigwatch holds its box too: tests/destroy_outcome.rs.)

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use sha2::Digest;
use support::vast_box::{Setup, setup};
use support::{poll_until, signal};

/// `rigwatch pull box …` started in the background, its output to files in the lab.
fn pull_in_background(s: &Setup, tag: &str, args: &[&str]) -> (Child, PathBuf) {
    let err = s.lab.path(&format!("{tag}.err"));
    let mut cmd = support::rigwatch();
    cmd.arg("--config")
        .arg(&s.fleet)
        .args(["pull", "box"])
        .args(args);
    for (k, v) in s.env() {
        cmd.env(k, v);
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(s.lab.path(&format!("{tag}.out"))).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"))
        .spawn()
        .expect("rigwatch pull");
    (child, err)
}

fn parts_of(dest: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(dest.file_name().unwrap_or_default());
    name.push(".rigwatch-parts");
    dest.with_file_name(name)
}

/// Bytes of one version of the big checkpoint: every byte says which version it is.
fn version(v: u8, len: usize) -> Vec<u8> {
    let mut bytes = vec![v; len];
    for (i, b) in bytes.iter_mut().enumerate().step_by(4096) {
        *b = (i / 4096) as u8 ^ v;
    }
    bytes
}

fn sha256_hex(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("local copy");
    data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(&bytes))
}

fn ledger(s: &Setup) -> serde_json::Value {
    let out = s.rigwatch(&["ledger", "box", "--json"]);
    serde_json::from_slice(&out.stdout).expect("ledger json")
}

#[test]
fn a_stalled_pull_holds_its_box_and_no_proven_record_covers_mixed_bytes() {
    let s = setup();
    let big = s.run.join("final_ckpts/big.bin");
    let len = 96 << 20;
    std::fs::write(&big, version(1, len)).expect("big v1");
    let parts = parts_of(&s.dest);

    // Pull A, stopped once its part of the big file has bytes in it.
    let (mut a, _) = pull_in_background(&s, "a", &[]);
    let started = poll_until(Duration::from_secs(60), || {
        std::fs::read_dir(&parts).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.metadata().is_ok_and(|m| m.len() > 1 << 20))
        })
    });
    assert!(started, "pull A never started copying");
    signal(a.id(), "STOP");
    // The box's file is replaced by a new version while A is stalled.
    std::fs::write(&big, version(2, len)).expect("big v2");

    // Pull B with --no-wait: at once, exit 75, and who holds the box.
    let out = s.rigwatch(&["pull", "box", "--no-wait"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{said}");
    assert!(
        said.contains(&format!("a pull of box box is running in pid {}", a.id())),
        "{said}"
    );
    // Pull B without: it waits, and says so once.
    let (mut b, b_err) = pull_in_background(&s, "b", &[]);
    assert!(
        poll_until(Duration::from_secs(20), || std::fs::read_to_string(&b_err)
            .is_ok_and(|t| t.contains("waiting (Ctrl-C to stop)"))),
        "pull B says it waits"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        b.try_wait().expect("b").is_none(),
        "B waits while A holds the box"
    );

    // A teardown meanwhile: refused, naming the pull, nothing run or recorded.
    s.refused(&format!("a pull of box box is running in pid {}", a.id()));

    signal(a.id(), "CONT");
    a.wait().expect("a");
    let b_status = b.wait().expect("b");
    let b_said = std::fs::read_to_string(&b_err).unwrap_or_default();
    assert!(b_status.success(), "B pulls once A is done: {b_said}");

    // Every proven record's hash is that of the bytes now at home.
    let doc = ledger(&s);
    let pulls = doc["pulls"].as_array().expect("pulls");
    assert_eq!(pulls.len(), 2, "{doc}");
    let mut checked = 0;
    let files = pulls
        .iter()
        .rev()
        .flat_map(|p| p["files"].as_array().cloned().unwrap_or_default());
    let mut last_of = std::collections::BTreeMap::new();
    for f in files {
        // Oldest first: the newer pull's record of a file is the one that speaks for it.
        last_of.insert(f["local_path"].as_str().unwrap_or_default().to_string(), f);
    }
    for f in last_of.values() {
        if f["outcome"] == "proven" {
            let local = Path::new(f["local_path"].as_str().expect("path"));
            assert_eq!(
                f["local_sha256"].as_str(),
                Some(sha256_hex(local).as_str()),
                "{local:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 3, "{doc}");
    assert_eq!(
        std::fs::read(s.dest.join("final_ckpts/big.bin")).expect("home"),
        version(2, len),
        "the copy at home is the new version, whole"
    );
}
