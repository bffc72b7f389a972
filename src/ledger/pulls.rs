//! Pulls in the ledger. A pull's files are written as it goes, a chunk at a time, under a pull
//! row that counts only once the pull has ended (`complete`): a 100 000-file pull no longer
//! holds every record until one transaction at its end, and a pull cut short by a crash is
//! never anyone's last pull. Its files still say which local copies exist, so they are still
//! protected from another host's pull.

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::db::{lines, time};
use super::{Ledger, LedgerError, PullRecord, PulledFile};

/// Schema 5: pulls written as they go, and the last pull's file looked up by its path.
pub(super) const SCHEMA_5: &str =
    "ALTER TABLE pulls ADD COLUMN complete INTEGER NOT NULL DEFAULT 1;
     CREATE INDEX IF NOT EXISTS files_by_pull_path ON files(pull_id, remote_path);
     PRAGMA user_version = 5;";

/// Schema 6: the files' indexes by pull alone and by local path dropped. Every recorded file
/// wrote all three; `files_by_pull_path` serves each query by pull (its prefix), and nothing
/// looks a file up by its local path (`protected_files` reads them all). Dropping the two took
/// a quarter off each file's insert (100 000 rows: 0.66 s against 0.50 s here).
pub(super) const SCHEMA_6: &str = "DROP INDEX IF EXISTS files_by_pull;
     DROP INDEX IF EXISTS files_by_local;
     PRAGMA user_version = 6;";

/// Schema 8: whether a file is unproven is a column of its own. Rows written before it said
/// so only in their words, which are read this once, here.
pub(super) const SCHEMA_8: &str =
    "ALTER TABLE files ADD COLUMN unproven INTEGER NOT NULL DEFAULT 0;
     UPDATE files SET unproven = 1 WHERE verified = 0 AND verification LIKE 'unproven%';
     PRAGMA user_version = 8;";

/// Schema 9: each local copy's identity once in place, and the pull a record was carried over
/// from by stat (`PulledFile::settled_since`).
pub(super) const SCHEMA_9: &str = "ALTER TABLE files ADD COLUMN local_stat TEXT;
     ALTER TABLE files ADD COLUMN settled_since INTEGER;
     PRAGMA user_version = 9;";

macro_rules! file_columns {
    () => {
        "remote_path, size, mtime, remote_sha256, local_path, local_sha256, sent, verified, \
         verification, error, at, stamp, unproven, local_stat, settled_since"
    };
}
const FILE_COLUMNS: &str = file_columns!();

/// The largest file of pull ?1.
pub(super) const LARGEST_FILE: &str = "SELECT MAX(size) FROM files WHERE pull_id = ?1";
/// Pull ?1's records of path ?2.
pub(super) const PULLED_FILE: &str = concat!(
    "SELECT ",
    file_columns!(),
    " FROM files WHERE pull_id = ?1 AND remote_path = ?2 ORDER BY rowid"
);
/// Every file of pull ?1 in the order it was written. A pull's rows were written together, so
/// they lie in one stretch of rowids (with the rows of any other host's pull that ran beside
/// it): read by rowid, that stretch comes in order, unsorted. By the (pull, path) index each
/// row was a seek and the whole then sorted: 100 000 rows took 0.50 s against 0.26 s.
pub(super) const EACH_FILE: &str = concat!(
    "SELECT ",
    file_columns!(),
    " FROM files NOT INDEXED
     WHERE rowid BETWEEN (SELECT MIN(rowid) FROM files WHERE pull_id = ?1)
     AND (SELECT MAX(rowid) FROM files WHERE pull_id = ?1) AND pull_id = ?1
     ORDER BY rowid"
);

impl Ledger {
    /// Stores a finished pull and its files in one transaction; returns the pull's id.
    pub fn record_pull(&mut self, pull: &PullRecord) -> Result<i64, LedgerError> {
        let sql = self.sql();
        let tx = self.conn.transaction().map_err(&sql)?;
        let id = insert_head(&tx, pull, true).map_err(&sql)?;
        insert_files(&tx, id, &pull.files).map_err(&sql)?;
        tx.commit().map_err(&sql)?;
        Ok(id)
    }

    /// A pull that is starting (`head`'s files are not written): its id, for `add_files` and
    /// `end_pull`. Until it ends it is nobody's last pull.
    pub fn begin_pull(&mut self, head: &PullRecord) -> Result<i64, LedgerError> {
        let sql = self.sql();
        let tx = self.conn.transaction().map_err(&sql)?;
        let id = insert_head(&tx, head, false).map_err(&sql)?;
        tx.commit().map_err(&sql)?;
        Ok(id)
    }

    /// More files of pull `id`, in one transaction.
    pub fn add_files(&mut self, id: i64, files: &[PulledFile]) -> Result<(), LedgerError> {
        let sql = self.sql();
        let tx = self.conn.transaction().map_err(&sql)?;
        insert_files(&tx, id, files).map_err(&sql)?;
        tx.commit().map_err(&sql)
    }

    /// Pull `id` has ended: from now on it is its host's last pull.
    pub fn end_pull(
        &mut self,
        id: i64,
        finished: chrono::DateTime<chrono::Utc>,
        unmatched: &[String],
    ) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "UPDATE pulls SET finished = ?2, unmatched = ?3, complete = 1 WHERE id = ?1",
                params![id, finished.to_rfc3339(), unmatched.join("\n")],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The newest pull of a host that ended, with its files.
    pub fn latest_pull(&self, host: &str) -> Result<Option<PullRecord>, LedgerError> {
        self.latest_pull_id(host)?
            .map(|(id, _)| self.pull(id))
            .transpose()
    }

    /// The id of the newest pull of a host that ended, and the instance it was taken for.
    pub fn latest_pull_id(&self, host: &str) -> Result<Option<(i64, Option<String>)>, LedgerError> {
        self.conn
            .query_row(
                "SELECT id, instance_id FROM pulls WHERE host = ?1 AND complete = 1
                 ORDER BY id DESC LIMIT 1",
                params![host],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The newest pull of `host` taken for `instance` that ended, with its files: a cluster's
    /// Jobs each have their own (a pull of Job B is not Job A's evidence).
    pub fn latest_pull_of(
        &self,
        host: &str,
        instance: &str,
    ) -> Result<Option<PullRecord>, LedgerError> {
        self.conn
            .query_row(
                "SELECT id FROM pulls WHERE host = ?1 AND instance_id = ?2 AND complete = 1
                 ORDER BY id DESC LIMIT 1",
                params![host, instance],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?
            .map(|id| self.pull(id))
            .transpose()
    }

    /// The size of the largest file pull `id` recorded (None: it recorded none).
    pub fn largest_file(&self, id: i64) -> Result<Option<u64>, LedgerError> {
        self.conn
            .query_row(LARGEST_FILE, params![id], |r| r.get::<_, Option<i64>>(0))
            .map(|size| size.map(|s| u64::try_from(s).unwrap_or(0)))
            .map_err(|e| self.err(e))
    }

    /// Every pull that ended, newest first, optionally of one host.
    pub fn pulls(&self, host: Option<&str>) -> Result<Vec<PullRecord>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id FROM pulls WHERE (?1 IS NULL OR host = ?1) AND complete = 1
                 ORDER BY id DESC",
            )
            .map_err(|e| self.err(e))?;
        let ids: Vec<i64> = stmt
            .query_map(params![host], |r| r.get(0))
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))?;
        ids.into_iter().map(|id| self.pull(id)).collect()
    }

    /// Pull `id`'s record of each of `paths` it has, looked up one by one (a re-pull asks for a
    /// chunk's files at a time, never the whole last pull).
    pub fn pulled_files(&self, id: i64, paths: &[&str]) -> Result<Vec<PulledFile>, LedgerError> {
        // One read transaction for the chunk: each statement outside one began and ended its
        // own, taking and dropping the file's locks (fcntl) and checking the WAL each time.
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let mut stmt = tx.prepare_cached(PULLED_FILE).map_err(|e| self.err(e))?;
        let mut found = Vec::new();
        for path in paths {
            let rows = stmt
                .query_map(params![id, path], file)
                .map_err(|e| self.err(e))?;
            for row in rows {
                found.push(row.map_err(|e| self.err(e))?);
            }
        }
        drop(stmt);
        tx.commit().map_err(|e| self.err(e))?;
        Ok(found)
    }

    /// Each file of pull `id`, in the order it was written, handed to `each` one at a time.
    pub fn each_file(&self, id: i64, mut each: impl FnMut(PulledFile)) -> Result<(), LedgerError> {
        let mut stmt = self.conn.prepare(EACH_FILE).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params![id], file).map_err(|e| self.err(e))?;
        for row in rows {
            each(row.map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    /// Errors named with this ledger's path, for while its connection is borrowed.
    fn sql(&self) -> impl Fn(rusqlite::Error) -> LedgerError + use<> {
        let path = self.path().to_path_buf();
        move |source| LedgerError::Sqlite {
            path: path.clone(),
            source,
        }
    }

    /// Pull `id` with its files.
    pub fn pull(&self, id: i64) -> Result<PullRecord, LedgerError> {
        type Head = (String, String, String, String, String, Option<String>);
        let (host, started, finished, paths, unmatched, instance_id): Head = self
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
        let mut files = Vec::new();
        self.each_file(id, |f| files.push(f))?;
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
}

fn insert_head(tx: &Transaction<'_>, pull: &PullRecord, complete: bool) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO pulls (host, started, finished, paths, unmatched, instance_id, complete)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            pull.host,
            pull.started.to_rfc3339(),
            pull.finished.to_rfc3339(),
            pull.paths.join("\n"),
            pull.unmatched.join("\n"),
            pull.instance_id,
            complete
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

fn insert_files(tx: &Transaction<'_>, id: i64, files: &[PulledFile]) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(&format!(
        "INSERT INTO files (pull_id, {FILE_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
    ))?;
    for f in files {
        stmt.execute(params![
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
            f.stamp,
            f.unproven,
            f.local_stat,
            f.settled_since
        ])?;
    }
    Ok(())
}

fn file(r: &Row<'_>) -> rusqlite::Result<PulledFile> {
    Ok(PulledFile {
        remote_path: r.get(0)?,
        size: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
        mtime: r.get(2)?,
        remote_sha256: r.get(3)?,
        local_path: r.get(4)?,
        local_sha256: r.get(5)?,
        sent: u64::try_from(r.get::<_, i64>(6)?).unwrap_or(0),
        verified: r.get(7)?,
        unproven: r.get(12)?,
        verification: r.get(8)?,
        error: r.get(9)?,
        at: time(&r.get::<_, String>(10)?),
        stamp: r.get(11)?,
        local_stat: r.get(13)?,
        settled_since: r.get(14)?,
    })
}
