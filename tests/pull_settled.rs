//! The settled-file rule, through `rigwatch pull` and its ledger: a file unchanged since its
//! verified pull on the box (size and stamp: mtime and ctime to the nanosecond, inode) and here
//! (the local copy's device, inode, size, mtime and ctime) is neither hashed again on either end
//! nor sent, and its record carries over, saying so; any change of stat on either end and it
//! is hashed again as before.

mod support;

use std::path::{Path, PathBuf};

use rigwatch::ledger::{Ledger, PullRecord};
use support::Lab;
use support::results::hash_logging_box;

/// `rigwatch pull box` on `fleet`; the pull it recorded.
fn pull(lab: &Lab, fleet: &Path) -> PullRecord {
    let out = lab
        .rigwatch_on(fleet)
        .args(["pull", "box"])
        .output()
        .expect("rigwatch pull");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ledger = Ledger::open(&lab.path("state/rigwatch/ledger.sqlite")).expect("ledger");
    ledger.latest_pull("box").expect("read").expect("a pull")
}

/// The files the box hashed since the last call, and the log emptied.
fn hashed(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let _ = std::fs::remove_file(log);
    text.lines().map(str::to_string).collect()
}

fn local(record: &PullRecord, name: &str) -> PathBuf {
    let f = record
        .files
        .iter()
        .find(|f| f.remote_path.ends_with(name))
        .unwrap_or_else(|| panic!("no {name} in {record:?}"));
    rigwatch::pull::names::to_path(&f.local_path)
}

fn settled_since(record: &PullRecord, name: &str) -> Option<i64> {
    let f = record.files.iter().find(|f| f.remote_path.ends_with(name));
    f.and_then(|f| f.settled_since)
}

#[test]
fn an_unchanged_file_is_carried_by_stat_and_any_change_of_stat_hashes_it_again() {
    let mut lab = Lab::new();
    let (_sshd, log, run, fleet) = hash_logging_box(&mut lab, 40);

    let first = pull(&lab, &fleet);
    assert_eq!(first.files.len(), 41);
    assert!(first.files.iter().all(|f| f.is_good()), "{first:?}");
    assert!(first.files.iter().all(|f| f.local_stat.is_some()));
    // Every file came in a tar stream: hashed here, over the bytes received, not on the box.
    assert_eq!(
        hashed(&log),
        Vec::<String>::new(),
        "the box hashed a tar-carried file"
    );

    // Nothing changed: nothing hashed on the box, nothing sent, every record carried.
    let second = pull(&lab, &fleet);
    assert!(second.files.iter().all(|f| f.is_good()), "{second:?}");
    let note = format!("(unchanged since pull #{}, by stat)", first.id);
    for f in &second.files {
        assert_eq!(f.settled_since, Some(first.id), "{f:?}");
        assert!(f.verification.ends_with(&note), "{}", f.verification);
        assert_eq!(f.sent, 0);
    }
    assert_eq!(hashed(&log), Vec::<String>::new(), "the box hashed nothing");
    assert_eq!(
        second
            .files
            .iter()
            .map(|f| &f.remote_sha256)
            .collect::<Vec<_>>(),
        first
            .files
            .iter()
            .map(|f| &f.remote_sha256)
            .collect::<Vec<_>>(),
        "the hashes carried are the first pull's"
    );

    // One local copy's stat changes (the same bytes, a new mtime), one box file's too: each is
    // hashed again, on both ends, and its record says so; the rest still carry pull #1's.
    let here = local(&second, "cell003/metrics.json");
    let bytes = std::fs::read(&here).expect("local copy");
    std::fs::write(&here, &bytes).expect("rewrite the same bytes");
    let there = run.join("final_ckpts/cell007/metrics.json");
    let bytes = std::fs::read(&there).expect("box file");
    std::fs::write(&there, &bytes).expect("rewrite on the box");
    let third = pull(&lab, &fleet);
    assert!(third.files.iter().all(|f| f.is_good()), "{third:?}");
    for name in ["cell003/metrics.json", "cell007/metrics.json"] {
        assert_eq!(settled_since(&third, name), None, "{name} hashed again");
        let f = third.files.iter().find(|f| f.remote_path.ends_with(name));
        assert!(
            f.is_some_and(|f| !f.verification.contains("by stat")),
            "{f:?}"
        );
    }
    let again = hashed(&log);
    // The local copy whose stat changed is hashed on the box as unchanged there; the box file
    // whose stat changed is sent again in a tar stream, hashed here.
    assert_eq!(
        again.len(),
        1,
        "only the copy whose stat changed here: {again:?}"
    );
    assert!(again[0].ends_with("cell003/metrics.json"), "{again:?}");
    assert_eq!(
        settled_since(&third, "cell011/metrics.json"),
        Some(first.id)
    );
    assert!(
        third
            .files
            .iter()
            .filter(|f| f.settled_since.is_some())
            .all(|f| f.verification.ends_with(&note)),
        "the note is said once, naming the pull that hashed it"
    );
}
