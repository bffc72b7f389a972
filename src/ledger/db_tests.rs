//! Tests of `db`, beside it so the module reads in one sitting.

use super::*;
use crate::ledger::{PullRecord, PulledFile};

fn file(path: &str, verified: bool) -> PulledFile {
    PulledFile {
        stamp: Some("5.0 5.0 1".into()),
        remote_path: path.into(),
        size: 3,
        mtime: 1_700_000_000,
        remote_sha256: Some("ab".into()),
        local_path: format!("/local{path}"),
        local_sha256: Some("ab".into()),
        sent: 3,
        verified,
        unproven: false,
        local_stat: None,
        settled_since: None,
        verification: "json".into(),
        error: None,
        at: DateTime::<Utc>::UNIX_EPOCH,
    }
}

/// An unproven file round-trips as a value; a ledger written before schema 8 (which said
/// so only in its words) is read once at the upgrade and keeps its UNPROVEN files.
#[test]
fn unproven_is_a_column_and_an_older_ledger_keeps_its_unproven_files() {
    use crate::ledger::Outcome;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).expect("open");
    let mut unproven = file("/w/model.bin", false);
    unproven.unproven = true;
    unproven.verification = "unproven: no built-in check for \"bin\" files".into();
    let t = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_000);
    let pull = PullRecord {
        instance_id: None,
        id: 0,
        host: "a".into(),
        started: t,
        finished: t,
        paths: vec!["/w".into()],
        unmatched: vec![],
        files: vec![unproven, file("/w/m.json", false)],
        local_disk_full: false,
    };
    ledger.record_pull(&pull).expect("record");
    let outcomes = |l: &Ledger| -> Vec<Outcome> {
        let last = l.latest_pull("a").expect("read").expect("a pull");
        last.files.iter().map(PulledFile::outcome).collect()
    };
    assert_eq!(outcomes(&ledger), [Outcome::Unproven, Outcome::Failed]);
    drop(ledger);
    // The same rows as schema 7 held them: no column, the words only (and none of 9's).
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.execute_batch(
        "ALTER TABLE files DROP COLUMN unproven; ALTER TABLE files DROP COLUMN local_stat;
         ALTER TABLE files DROP COLUMN settled_since; PRAGMA user_version = 7;",
    )
    .expect("back to schema 7");
    drop(conn);
    let ledger = Ledger::open(&path).expect("upgrade");
    assert_eq!(outcomes(&ledger), [Outcome::Unproven, Outcome::Failed]);
}

#[test]
fn pulls_round_trip_newest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state/ledger.sqlite");
    let mut ledger = Ledger::open(&path).expect("open");
    let t = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_000);
    let mut pull = PullRecord {
        instance_id: None,
        id: 0,
        host: "a".into(),
        started: t,
        finished: t,
        paths: vec!["/w/ckpt".into(), "/w/m.json".into()],
        unmatched: vec![],
        files: vec![file("/w/ckpt/x.pt", true), file("/w/m.json", false)],
        local_disk_full: false,
    };
    let first = ledger.record_pull(&pull).expect("record");
    pull.host = "b".into();
    ledger.record_pull(&pull).expect("record b");
    pull.host = "a".into();
    pull.files.truncate(1);
    let second = ledger.record_pull(&pull).expect("record again");
    assert!(second > first);
    drop(ledger);
    let ledger = Ledger::open(&path).expect("reopen");
    let latest = ledger.latest_pull("a").expect("query").expect("one");
    assert_eq!(latest.id, second);
    assert_eq!(latest.files.len(), 1);
    assert_eq!(latest.started, t);
    assert_eq!(
        latest.paths,
        vec!["/w/ckpt".to_string(), "/w/m.json".into()]
    );
    assert_eq!(ledger.pulls(Some("a")).expect("a").len(), 2);
    assert_eq!(ledger.pulls(None).expect("all").len(), 3);
    assert!(ledger.latest_pull("nobody").expect("query").is_none());
}

#[test]
fn a_good_file_needs_equal_hashes_and_a_pass() {
    assert!(file("/x", true).is_good());
    assert!(!file("/x", false).is_good());
    let mut f = file("/x", true);
    f.local_sha256 = Some("cd".into());
    assert!(!f.is_good());
    f.local_sha256 = None;
    f.remote_sha256 = None;
    assert!(!f.is_good());
}

fn head(host: &str) -> PullRecord {
    PullRecord {
        id: 0,
        host: host.into(),
        started: DateTime::<Utc>::UNIX_EPOCH,
        finished: DateTime::<Utc>::UNIX_EPOCH,
        paths: vec!["/w".into()],
        unmatched: vec![],
        instance_id: None,
        files: vec![],
        local_disk_full: false,
    }
}

/// A pull written as it goes is nobody's last pull until it ends (a crash mid-pull leaves
/// the one before as the last), yet the copies it already landed are protected from
/// another host's pull; a re-pull finds each file's record by its path.
#[test]
fn a_pull_counts_once_it_ends_and_its_files_are_found_by_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ledger = Ledger::open(&dir.path().join("ledger.sqlite")).expect("open");
    let mut whole = head("a");
    whole.files = vec![file("/w/old", true)];
    let done = ledger.record_pull(&whole).expect("record");

    let cut = ledger.begin_pull(&head("a")).expect("begin");
    ledger
        .add_files(cut, &[file("/w/x", true), file("/w/y", true)])
        .expect("add");
    assert_eq!(
        ledger.latest_pull_id("a").expect("read"),
        Some((done, None))
    );
    assert_eq!(ledger.pulls(Some("a")).expect("read").len(), 1);
    let claims = ledger.protected_files("b").expect("claims");
    assert!(claims.iter().any(|(p, _)| p == "/local/w/x"), "{claims:?}");

    let found = ledger
        .pulled_files(cut, &["/w/y", "/w/none"])
        .expect("find");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].remote_path, "/w/y");

    let unmatched = vec!["/w/gone".to_string()];
    ledger
        .end_pull(cut, DateTime::<Utc>::UNIX_EPOCH, &unmatched)
        .expect("end");
    let last = ledger.latest_pull("a").expect("read").expect("one");
    assert_eq!((last.id, last.files.len()), (cut, 2));
    assert_eq!(last.unmatched, unmatched);
}

#[test]
fn a_pull_s_largest_file_is_known_and_none_without_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ledger = Ledger::open(&dir.path().join("ledger.sqlite")).expect("open");
    let mut pull = head("a");
    let big = PulledFile {
        size: 5 << 30,
        ..file("/w/ckpt.pt", true)
    };
    pull.files = vec![file("/w/a.json", true), big];
    let id = ledger.record_pull(&pull).expect("record");
    assert_eq!(ledger.largest_file(id).expect("read"), Some(5 << 30));
    let empty = ledger.record_pull(&head("a")).expect("record");
    assert_eq!(ledger.largest_file(empty).expect("read"), None);
}

/// Every index is written for every file a pull records: a 100 000-file pull paid for
/// three, while the ledger's queries of files use one (by pull and path; a pull's files
/// alone are its prefix). Each files query is served by it, none scans the table.
#[test]
fn files_carry_only_the_index_their_queries_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(&dir.path().join("ledger.sqlite")).expect("open");
    let mut stmt = ledger
        .conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'files'")
        .expect("prepare");
    let indexes: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(Iterator::collect)
        .expect("indexes");
    assert_eq!(indexes, vec!["files_by_pull_path".to_string()]);
    use super::super::pulls::{EACH_FILE, LARGEST_FILE, PULLED_FILE};
    for query in [LARGEST_FILE, PULLED_FILE, EACH_FILE] {
        let mut explain = ledger
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
            .expect("prepare");
        let args = vec![1; explain.parameter_count()];
        let plan: Vec<String> = explain
            .query_map(rusqlite::params_from_iter(args), |r| r.get(3))
            .and_then(Iterator::collect)
            .expect("plan");
        assert!(
            plan.iter().any(|p| p.contains("INDEX files_by_pull_path")),
            "{query}: {plan:?}"
        );
        // No query reads every pull's files, or sorts its rows.
        assert!(
            !plan
                .iter()
                .any(|p| p.starts_with("SCAN") || p.contains("TEMP B-TREE")),
            "{query}: {plan:?}"
        );
    }
}
