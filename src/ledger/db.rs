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
        // A checkpoint every 64 MB of WAL, not SQLite's 4 MB: a re-pull of 100 000 files writes
        // ~50 MB of records, and a checkpoint after nearly every chunk copied the same index
        // pages back again and again (a chunk's write took 13-55 ms; 14 ms with one checkpoint
        // in the pull). The WAL file is reused after each, so it stays about that size.
        conn.pragma_update(None, "wal_autocheckpoint", 16384)
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
#[path = "db_tests.rs"]
mod tests;
