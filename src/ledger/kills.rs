//! Processes ended from the dashboard (`K` on a zombie holding VRAM): the intent, written before
//! any signal is sent, and its outcome once known, as a teardown's are. rigwatch never ends a
//! process by itself: each row is a person's typed confirmation.

use chrono::{DateTime, Utc};
use rusqlite::params;
use serde::Serialize;

use super::{Ledger, LedgerError};

/// Schema 4: the kills table.
pub(super) const SCHEMA_4: &str = "CREATE TABLE IF NOT EXISTS kills (
        id INTEGER PRIMARY KEY, at TEXT NOT NULL, host TEXT NOT NULL, pids TEXT NOT NULL,
        command TEXT NOT NULL, finished TEXT, outcome TEXT, output TEXT);
     PRAGMA user_version = 4;";

/// What is recorded before the signals are sent; nothing is sent unless it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct KillIntent {
    pub at: DateTime<Utc>,
    pub host: String,
    /// `585 python3 (29130 MiB)`, one per process, as the person saw them.
    pub pids: String,
    /// The commands, as shown in the dialog.
    pub command: String,
}

/// One kill, kept forever: its intent and, once known, what came of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KillRecord {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub host: String,
    pub pids: String,
    pub command: String,
    pub finished: Option<DateTime<Utc>>,
    /// The outcome in a line (which process ended on which signal, the VRAM freed); None while
    /// only the intent is recorded.
    pub outcome: Option<String>,
    /// What the box printed.
    pub output: Option<String>,
}

impl Ledger {
    pub fn record_kill_intent(&self, k: &KillIntent) -> Result<i64, LedgerError> {
        self.conn
            .execute(
                "INSERT INTO kills (at, host, pids, command) VALUES (?1, ?2, ?3, ?4)",
                params![k.at.to_rfc3339(), k.host, k.pids, k.command],
            )
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Adds the outcome to intent `id`, once.
    pub fn record_kill_outcome(
        &self,
        id: i64,
        finished: DateTime<Utc>,
        outcome: &str,
        output: &str,
    ) -> Result<bool, LedgerError> {
        let changed = self
            .conn
            .execute(
                "UPDATE kills SET finished = ?2, outcome = ?3, output = ?4
                 WHERE id = ?1 AND outcome IS NULL",
                params![id, finished.to_rfc3339(), outcome, output],
            )
            .map_err(|e| self.err(e))?;
        Ok(changed == 1)
    }

    /// Every kill, newest first, optionally of one host.
    pub fn kills(&self, host: Option<&str>) -> Result<Vec<KillRecord>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, at, host, pids, command, finished, outcome, output FROM kills
                 WHERE ?1 IS NULL OR host = ?1 ORDER BY id DESC",
            )
            .map_err(|e| self.err(e))?;
        let time = |s: String| {
            DateTime::parse_from_rfc3339(&s)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
        };
        let rows = stmt
            .query_map(params![host], |r| {
                Ok(KillRecord {
                    id: r.get(0)?,
                    at: time(r.get(1)?),
                    host: r.get(2)?,
                    pids: r.get(3)?,
                    command: r.get(4)?,
                    finished: r.get::<_, Option<String>>(5)?.map(time),
                    outcome: r.get(6)?,
                    output: r.get(7)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kill_is_its_intent_then_its_outcome_once() {
        let dir = tempfile::tempdir().expect("dir");
        let ledger = Ledger::open(&dir.path().join("ledger.db")).expect("open");
        let at = Utc::now();
        let id = ledger
            .record_kill_intent(&KillIntent {
                at,
                host: "gpu-1".into(),
                pids: "585 python3 (29130 MiB)".into(),
                command: "kill -TERM 585".into(),
            })
            .expect("intent");
        let open = ledger.kills(Some("gpu-1")).expect("kills");
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].outcome, None);
        assert!(
            ledger
                .record_kill_outcome(id, at, "pid 585 ended on TERM", "")
                .expect("outcome")
        );
        assert!(
            !ledger
                .record_kill_outcome(id, at, "rewritten", "")
                .expect("second")
        );
        let done = ledger.kills(None).expect("kills");
        assert_eq!(done[0].outcome.as_deref(), Some("pid 585 ended on TERM"));
        assert!(ledger.kills(Some("other")).expect("none").is_empty());
    }
}
