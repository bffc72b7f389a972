//! SQLite storage for the ledger. One file, WAL mode so the dashboard and a CLI pull can both
//! write; the schema is versioned with `user_version`.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::{PullRecord, PulledFile};

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

const SCHEMA: i64 = 4;

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

    /// Stores a finished pull and its files in one transaction; returns the pull's id.
    pub fn record_pull(&mut self, pull: &PullRecord) -> Result<i64, LedgerError> {
        let path = self.path.clone();
        let sql = |source| LedgerError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute(
            "INSERT INTO pulls (host, started, finished, paths, unmatched, instance_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                pull.host,
                pull.started.to_rfc3339(),
                pull.finished.to_rfc3339(),
                pull.paths.join("\n"),
                pull.unmatched.join("\n"),
                pull.instance_id
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        for f in &pull.files {
            tx.execute(
                "INSERT INTO files (pull_id, remote_path, size, mtime, remote_sha256, local_path,
                    local_sha256, sent, verified, verification, error, at, stamp)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    id,
                    f.remote_path,
                    i64::try_from(f.size).unwrap_or(i64::MAX),
                    f.mtime,
                    f.remote_sha256,
                    f.local_path,
                    f.local_sha256,
                    i64::try_from(f.sent).unwrap_or(i64::MAX),
                    f.verified,
                    f.verification,
                    f.error,
                    f.at.to_rfc3339(),
                    f.stamp
                ],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    /// The newest pull of a host, with its files.
    pub fn latest_pull(&self, host: &str) -> Result<Option<PullRecord>, LedgerError> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM pulls WHERE host = ?1 ORDER BY id DESC LIMIT 1",
                params![host],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        id.map(|id| self.pull(id)).transpose()
    }

    /// Every pull, newest first, optionally of one host.
    pub fn pulls(&self, host: Option<&str>) -> Result<Vec<PullRecord>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM pulls WHERE ?1 IS NULL OR host = ?1 ORDER BY id DESC")
            .map_err(|e| self.err(e))?;
        let ids: Vec<i64> = stmt
            .query_map(params![host], |r| r.get(0))
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        ids.into_iter().map(|id| self.pull(id)).collect()
    }

    fn pull(&self, id: i64) -> Result<PullRecord, LedgerError> {
        type Row = (String, String, String, String, String, Option<String>);
        let (host, started, finished, paths, unmatched, instance_id): Row = self
            .conn
            .query_row(
                "SELECT host, started, finished, paths, unmatched, instance_id FROM pulls
                 WHERE id = ?1",
                params![id],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .map_err(|e| self.err(e))?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT remote_path, size, mtime, remote_sha256, local_path, local_sha256,
                    sent, verified, verification, error, at, stamp FROM files WHERE pull_id = ?1
                    ORDER BY rowid",
            )
            .map_err(|e| self.err(e))?;
        let files = stmt
            .query_map(params![id], |r| {
                Ok(PulledFile {
                    remote_path: r.get(0)?,
                    size: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    mtime: r.get(2)?,
                    remote_sha256: r.get(3)?,
                    local_path: r.get(4)?,
                    local_sha256: r.get(5)?,
                    sent: u64::try_from(r.get::<_, i64>(6)?).unwrap_or(0),
                    verified: r.get(7)?,
                    verification: r.get(8)?,
                    error: r.get(9)?,
                    at: time(&r.get::<_, String>(10)?),
                    stamp: r.get(11)?,
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        Ok(PullRecord {
            id,
            host,
            started: time(&started),
            finished: time(&finished),
            paths: lines(&paths),
            unmatched: lines(&unmatched),
            instance_id,
            files,
            local_disk_full: false,
        })
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

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            verification: "json".into(),
            error: None,
            at: DateTime::<Utc>::UNIX_EPOCH,
        }
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
}
