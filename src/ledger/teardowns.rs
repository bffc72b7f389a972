//! Teardowns in the ledger: the intent, written before the destroy runs, and its outcome, added
//! to the same row once known. A row whose outcome is still empty is a destroy rigwatch was
//! stopped in the middle of (or one running now, in the process `pid`).

use std::fmt;

use chrono::{DateTime, Utc};
use rusqlite::params;
use serde::Serialize;

use super::{Ledger, LedgerError};

/// What a destroy is known to have done, in the words every view uses (the ledger, the
/// dashboard, the CLI's last line, `ledger --json`, the `teardown_done` notice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DestroyOutcome {
    /// The provider no longer lists the instance, or lists it destroyed.
    Confirmed,
    /// The command succeeded (or the person said they did it by hand), but the provider was not
    /// asked, could not be, or still lists it: exit 0 proves nothing.
    Unconfirmed,
    /// The command exited non-zero, could not start, or was ended at its timeout.
    Failed,
}

impl DestroyOutcome {
    /// The word stored, and the one JSON carries.
    pub fn key(self) -> &'static str {
        match self {
            DestroyOutcome::Confirmed => "confirmed",
            DestroyOutcome::Unconfirmed => "unconfirmed",
            DestroyOutcome::Failed => "failed",
        }
    }

    fn from_key(key: &str) -> Option<DestroyOutcome> {
        [
            DestroyOutcome::Confirmed,
            DestroyOutcome::Unconfirmed,
            DestroyOutcome::Failed,
        ]
        .into_iter()
        .find(|o| o.key() == key)
    }
}

impl fmt::Display for DestroyOutcome {
    /// Loud where the box may still exist and bill.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DestroyOutcome::Confirmed => "confirmed",
            DestroyOutcome::Unconfirmed => "UNCONFIRMED",
            DestroyOutcome::Failed => "FAILED",
        })
    }
}

/// What is recorded before a destroy runs; nothing runs unless it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct TeardownIntent {
    pub at: DateTime<Utc>,
    pub host: String,
    pub instance_id: Option<String>,
    /// The command, secrets masked; None when the person destroys it by hand.
    pub command: Option<String>,
    pub pull_id: i64,
    /// The rigwatch process that runs it.
    pub pid: u32,
}

/// What is added to the intent's row once the destroy has ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TeardownFinish {
    pub finished: DateTime<Utc>,
    pub exit_status: Option<i32>,
    /// What the command printed (secrets masked), or what the person confirmed.
    pub output: String,
    pub outcome: DestroyOutcome,
    /// Why that outcome: what the provider said, or how the command failed.
    pub why: String,
}

/// A later look at a destroy whose outcome was not `confirmed`: what the provider said then.
/// Added as a row of its own, never an edit of the outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaterLook {
    pub at: DateTime<Utc>,
    pub outcome: DestroyOutcome,
    pub why: String,
}

/// One teardown, kept forever: its intent, and its outcome once known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeardownRecord {
    pub id: i64,
    /// When the intent was recorded, just before the command started.
    pub at: DateTime<Utc>,
    pub host: String,
    pub instance_id: Option<String>,
    /// The command run; None when the platform has no API and the user destroyed it by hand.
    pub command: Option<String>,
    pub pull_id: i64,
    pub pid: Option<u32>,
    pub exit_status: Option<i32>,
    pub output: String,
    /// None while only the intent is recorded.
    pub outcome: Option<DestroyOutcome>,
    pub why: Option<String>,
    pub finished: Option<DateTime<Utc>>,
    /// What later looks found, oldest first (`later_looks`).
    pub later: Vec<LaterLook>,
}

impl TeardownRecord {
    /// What is known now: the last later look's outcome, else the outcome recorded at the time.
    pub fn known(&self) -> Option<DestroyOutcome> {
        self.later.last().map(|l| l.outcome).or(self.outcome)
    }

    /// Whether a later look should ask the provider again: the outcome left it open (not
    /// confirmed), and no later look has answered yet (one answer settles it: the instance is
    /// gone, or the provider still lists it after the destroy has ended).
    pub fn open(&self) -> bool {
        matches!(
            self.outcome,
            Some(DestroyOutcome::Unconfirmed | DestroyOutcome::Failed)
        ) && self.later.is_empty()
    }
}

/// Schema 7: later looks at destroys left open, a row each.
pub(super) const SCHEMA_7: &str = "CREATE TABLE IF NOT EXISTS later_looks (
        teardown_id INTEGER NOT NULL REFERENCES teardowns(id), at TEXT NOT NULL,
        outcome TEXT NOT NULL, why TEXT NOT NULL);
     PRAGMA user_version = 7;";

/// Rows recorded before schema 3 had no provider check: exit 0 there is "unconfirmed".
pub(super) const SCHEMA_3: &str = "ALTER TABLE teardowns ADD COLUMN outcome TEXT;
     ALTER TABLE teardowns ADD COLUMN why TEXT;
     ALTER TABLE teardowns ADD COLUMN finished TEXT;
     ALTER TABLE teardowns ADD COLUMN pid INTEGER;
     UPDATE teardowns SET finished = at,
        outcome = CASE WHEN command IS NOT NULL AND (exit_status IS NULL OR exit_status != 0)
            THEN 'failed' ELSE 'unconfirmed' END,
        why = 'recorded before rigwatch asked the provider after a destroy';
     PRAGMA user_version = 3;";

impl Ledger {
    /// Records a destroy about to run; returns its row's id.
    pub fn record_intent(&self, t: &TeardownIntent) -> Result<i64, LedgerError> {
        self.conn
            .execute(
                "INSERT INTO teardowns (at, host, instance_id, command, output, pull_id, pid)
                 VALUES (?1, ?2, ?3, ?4, '', ?5, ?6)",
                params![
                    t.at.to_rfc3339(),
                    t.host,
                    t.instance_id,
                    t.command,
                    t.pull_id,
                    t.pid
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Adds the outcome to intent `id`. An outcome is written once: false when the row already
    /// had one (or there is no such intent).
    pub fn record_outcome(&self, id: i64, f: &TeardownFinish) -> Result<bool, LedgerError> {
        let changed = self
            .conn
            .execute(
                "UPDATE teardowns SET finished = ?2, exit_status = ?3, output = ?4, outcome = ?5,
                    why = ?6 WHERE id = ?1 AND outcome IS NULL",
                params![
                    id,
                    f.finished.to_rfc3339(),
                    f.exit_status,
                    f.output,
                    f.outcome.key(),
                    f.why
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(changed == 1)
    }

    /// Adds what a later look at destroy `id` found.
    pub fn record_later_look(&self, id: i64, look: &LaterLook) -> Result<(), LedgerError> {
        self.conn
            .execute(
                "INSERT INTO later_looks (teardown_id, at, outcome, why) VALUES (?1, ?2, ?3, ?4)",
                params![id, look.at.to_rfc3339(), look.outcome.key(), look.why],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn later_looks(&self, id: i64) -> Result<Vec<LaterLook>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT at, outcome, why FROM later_looks WHERE teardown_id = ?1 ORDER BY rowid",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![id], |r| {
            Ok(LaterLook {
                at: super::db::time(&r.get::<_, String>(0)?),
                outcome: DestroyOutcome::from_key(&r.get::<_, String>(1)?)
                    .unwrap_or(DestroyOutcome::Unconfirmed),
                why: r.get(2)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(|e| self.err(e))
    }

    /// Every teardown, newest first, optionally of one host.
    pub fn teardowns(&self, host: Option<&str>) -> Result<Vec<TeardownRecord>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, at, host, instance_id, command, pull_id, pid, exit_status, output,
                    outcome, why, finished FROM teardowns
                 WHERE ?1 IS NULL OR host = ?1 ORDER BY id DESC",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![host], |r| {
            Ok(TeardownRecord {
                id: r.get(0)?,
                at: super::db::time(&r.get::<_, String>(1)?),
                host: r.get(2)?,
                instance_id: r.get(3)?,
                command: r.get(4)?,
                pull_id: r.get(5)?,
                pid: r.get(6)?,
                exit_status: r.get(7)?,
                output: r.get(8)?,
                outcome: r
                    .get::<_, Option<String>>(9)?
                    .map(|k| DestroyOutcome::from_key(&k).unwrap_or(DestroyOutcome::Unconfirmed)),
                why: r.get(10)?,
                finished: r.get::<_, Option<String>>(11)?.map(|t| super::db::time(&t)),
                later: Vec::new(),
            })
        })
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| self.err(e))?
        .into_iter()
        .map(|mut t| {
            t.later = self.later_looks(t.id)?;
            Ok(t)
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_words() {
        let words: Vec<(String, &str)> = [
            DestroyOutcome::Confirmed,
            DestroyOutcome::Unconfirmed,
            DestroyOutcome::Failed,
        ]
        .into_iter()
        .map(|o| (o.to_string(), o.key()))
        .collect();
        assert_eq!(
            words,
            [
                ("confirmed".to_string(), "confirmed"),
                ("UNCONFIRMED".into(), "unconfirmed"),
                ("FAILED".into(), "failed")
            ]
        );
        for (_, key) in &words {
            assert_eq!(
                serde_json::to_value(DestroyOutcome::from_key(key)).expect("json"),
                serde_json::Value::String((*key).into())
            );
        }
    }

    #[test]
    fn the_intent_is_a_row_and_its_outcome_is_added_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ledger = Ledger::open(&dir.path().join("l.sqlite")).expect("open");
        let at = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_000);
        let pull_id = ledger
            .record_pull(&super::super::PullRecord {
                id: 0,
                host: "a".into(),
                started: at,
                finished: at,
                paths: vec![],
                unmatched: vec![],
                instance_id: Some("7".into()),
                files: vec![],
                local_disk_full: false,
            })
            .expect("pull");
        let id = ledger
            .record_intent(&TeardownIntent {
                at,
                host: "a".into(),
                instance_id: Some("7".into()),
                command: Some("vastai destroy instance '7' -y".into()),
                pull_id,
                pid: 99,
            })
            .expect("intent");
        let open = ledger.teardowns(Some("a")).expect("read");
        assert_eq!(
            (open.len(), open[0].outcome, open[0].pid),
            (1, None, Some(99))
        );
        let finish = TeardownFinish {
            finished: at,
            exit_status: Some(0),
            output: "destroying instance 7.".into(),
            outcome: DestroyOutcome::Confirmed,
            why: "vastai no longer lists instance 7".into(),
        };
        assert!(ledger.record_outcome(id, &finish).expect("outcome"));
        let failed = TeardownFinish {
            outcome: DestroyOutcome::Failed,
            ..finish
        };
        assert!(!ledger.record_outcome(id, &failed).expect("second"));
        let done = ledger.teardowns(None).expect("read");
        assert_eq!(done[0].outcome, Some(DestroyOutcome::Confirmed));
        assert_eq!(done[0].output, "destroying instance 7.");
        assert!(ledger.teardowns(Some("b")).expect("b").is_empty());
    }

    /// A ledger from before schema 3: its teardowns get an outcome from what they recorded
    /// (exit 0 was never confirmed), so none reads as interrupted.
    #[test]
    fn old_rows_become_unconfirmed_or_failed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("l.sqlite");
        let old = rusqlite::Connection::open(&path).expect("sqlite");
        old.execute_batch(
            "CREATE TABLE pulls (id INTEGER PRIMARY KEY, host TEXT NOT NULL, started TEXT NOT NULL,
                finished TEXT NOT NULL, paths TEXT NOT NULL, unmatched TEXT NOT NULL,
                instance_id TEXT);
             CREATE TABLE files (pull_id INTEGER NOT NULL, remote_path TEXT NOT NULL,
                size INTEGER NOT NULL, mtime INTEGER NOT NULL, remote_sha256 TEXT,
                local_path TEXT NOT NULL, local_sha256 TEXT, sent INTEGER NOT NULL,
                verified INTEGER NOT NULL, verification TEXT NOT NULL, error TEXT,
                at TEXT NOT NULL, stamp TEXT);
             CREATE TABLE teardowns (id INTEGER PRIMARY KEY, at TEXT NOT NULL, host TEXT NOT NULL,
                instance_id TEXT, command TEXT, exit_status INTEGER, output TEXT NOT NULL,
                pull_id INTEGER NOT NULL);
             INSERT INTO teardowns (at, host, command, exit_status, output, pull_id) VALUES
                ('2026-01-01T00:00:00+00:00', 'a', 'vastai destroy instance 1 -y', 0, '', 1),
                ('2026-01-02T00:00:00+00:00', 'a', 'vastai destroy instance 2 -y', 1, '', 1),
                ('2026-01-03T00:00:00+00:00', 'a', NULL, NULL, 'by hand', 1);
             PRAGMA user_version = 2;",
        )
        .expect("schema 2");
        drop(old);
        let ledger = Ledger::open(&path).expect("migrates");
        let outcomes: Vec<Option<DestroyOutcome>> = ledger
            .teardowns(None)
            .expect("read")
            .iter()
            .map(|t| t.outcome)
            .collect();
        assert_eq!(
            outcomes,
            [
                Some(DestroyOutcome::Unconfirmed),
                Some(DestroyOutcome::Failed),
                Some(DestroyOutcome::Unconfirmed)
            ]
        );
    }
}
