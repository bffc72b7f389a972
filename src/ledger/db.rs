//! SQLite storage for the ledger. One file, WAL mode so the dashboard and a CLI pull can both
//! write; the schema is versioned with `user_version`.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("ledger {}: cannot create its folder: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("ledger {}: written by a newer rigwatch (schema {found}, this one knows {SCHEMA})", path.display())]
    TooNew { path: PathBuf, found: i64 },
}

const SCHEMA: i64 = 9;

pub struct Ledger {
    pub(super) conn: Connection,
    path: PathBuf,
}

/// `$XDG_STATE_HOME/rigwatch/ledger.sqlite`, beside the hosts memory.
pub fn default_path() -> Option<PathBuf> {
    crate::config::paths::state_dir().map(|d| d.join("ledger.sqlite"))
}

impl Ledger {
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        // Private before SQLite opens it: its -wal and -shm files take the database's mode.
        crate::config::paths::private_file(path).map_err(|source| LedgerError::Folder {
            path: path.to_path_buf(),
            source,
        })?;
        let sql = |source| LedgerError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sql)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        if version > SCHEMA {
            return Err(LedgerError::TooNew {
                path: path.to_path_buf(),
                found: version,
            });
        }
        if version < SCHEMA {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS pulls (
                    id INTEGER PRIMARY KEY, host TEXT NOT NULL, started TEXT NOT NULL,
                    finished TEXT NOT NULL, paths TEXT NOT NULL, unmatched TEXT NOT NULL);
                 CREATE TABLE IF NOT EXISTS files (
                    pull_id INTEGER NOT NULL REFERENCES pulls(id), remote_path TEXT NOT NULL,
                    size INTEGER NOT NULL, mtime INTEGER NOT NULL, remote_sha256 TEXT,
                    local_path TEXT NOT NULL, local_sha256 TEXT, sent INTEGER NOT NULL, verified INTEGER NOT NULL,
                    verification TEXT NOT NULL, error TEXT, at TEXT NOT NULL);
                 CREATE INDEX IF NOT EXISTS files_by_pull ON files(pull_id);
                 CREATE TABLE IF NOT EXISTS teardowns (
                    id INTEGER PRIMARY KEY, at TEXT NOT NULL, host TEXT NOT NULL,
                    instance_id TEXT, command TEXT, exit_status INTEGER, output TEXT NOT NULL,
                    pull_id INTEGER NOT NULL REFERENCES pulls(id));
                 PRAGMA user_version = 1;",
            )
            .map_err(sql)?;
        }
        if version < 2 {
            // Schema 2: each file's change stamp (mtime and ctime to the nanosecond, inode), and
            // the instance id each pull was taken for.
            conn.execute_batch(
                "ALTER TABLE files ADD COLUMN stamp TEXT;
                 ALTER TABLE pulls ADD COLUMN instance_id TEXT;
                 CREATE INDEX IF NOT EXISTS files_by_local ON files(local_path);
                 PRAGMA user_version = 2;",
            )
            .map_err(sql)?;
        }
        if version < 3 {
            // Schema 3: a teardown's intent is written before it runs, its outcome after.
            conn.execute_batch(super::teardowns::SCHEMA_3)
                .map_err(sql)?;
        }
        if version < 4 {
            // Schema 4: processes ended from the dashboard.
            conn.execute_batch(super::kills::SCHEMA_4).map_err(sql)?;
        }
        if version < 5 {
            conn.execute_batch(super::pulls::SCHEMA_5).map_err(sql)?;
        }
        if version < 6 {
            conn.execute_batch(super::pulls::SCHEMA_6).map_err(sql)?;
        }
        if version < 7 {
            // Schema 7: later looks at destroys whose outcome was left open.
            conn.execute_batch(super::teardowns::SCHEMA_7)
                .map_err(sql)?;
        }
        if version < 8 {
            conn.execute_batch(super::pulls::SCHEMA_8).map_err(sql)?;
        }
        if version < 9 {
            conn.execute_batch(super::pulls::SCHEMA_9).map_err(sql)?;
        }
        Ok(Ledger {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn err(&self, source: rusqlite::Error) -> LedgerError {
        LedgerError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Local files (escaped, as the ledger keeps paths) that a pull of `host` must never
    /// overwrite, each with why: every file another host's pull recorded (another box's copy,
    /// wherever its dest is: folders are compared by what they are, not how they are spelled,
    /// in `pull::protect`), and every file of a pull that a teardown relied on, this host's
    /// included (a box re-rented under the same name must not replace the destroyed one's copy).
    pub fn protected_files(&self, host: &str) -> Result<Vec<(String, String)>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT f.local_path, p.host, NULL, NULL FROM files f
                   JOIN pulls p ON p.id = f.pull_id
                   WHERE p.host != ?1 AND f.local_sha256 IS NOT NULL
                 UNION ALL
                 SELECT DISTINCT f.local_path, t.host, t.instance_id, t.at FROM files f
                   JOIN teardowns t ON t.pull_id = f.pull_id
                   WHERE f.local_sha256 IS NOT NULL",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![host], |r| {
            let path: String = r.get(0)?;
            let owner: String = r.get(1)?;
            let instance: Option<String> = r.get(2)?;
            let torn_down: Option<String> = r.get(3)?;
            let owner = crate::sanitize::line(&owner, 80);
            let why = match torn_down {
                None => format!(
                    "holds {owner}'s pulled copy: refusing to overwrite another box's results; \
                     give each host its own dest"
                ),
                Some(at) => format!(
                    "holds the copy of {owner}{} that the teardown of {} relied on: refusing to \
                     overwrite it; move it elsewhere to keep it, or give this box another dest",
                    instance.map_or(String::new(), |i| format!(
                        " (instance {})",
                        crate::sanitize::line(&i, 40)
                    )),
                    crate::sanitize::line(&at, 40)
                ),
            };
            Ok((path, why))
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.err(e))
    }
}

/// Times are written by this module as RFC 3339; anything else reads as the epoch, visibly old.
pub(super) fn time(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

pub(super) fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
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
}
