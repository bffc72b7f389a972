//! The ledger: a local SQLite database of every pull (what came home, its hashes, whether it
//! loads) and every teardown (who confirmed what, the command, its output). It is the evidence
//! the teardown guard reads; processes ended from the dashboard (`K`) are kept too; rows are only ever added (a teardown's intent row gets its outcome
//! once, when the destroy has ended).

mod db;
mod kills;
pub mod locks;
mod pulls;
mod teardowns;

pub use db::{Ledger, LedgerError, default_path};
pub use kills::{KillIntent, KillRecord};
pub use teardowns::{DestroyOutcome, LaterLook, TeardownFinish, TeardownIntent, TeardownRecord};

use chrono::{DateTime, Utc};
use serde::Serialize;

/// One file of one pull, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PulledFile {
    pub remote_path: String,
    pub size: u64,
    /// Seconds since the epoch, as the box reported it.
    pub mtime: i64,
    /// `mtime ctime inode` to the nanosecond (see `pull::remote::RemoteFile::stamp`); None in
    /// records written before rigwatch kept it, which therefore never count as current.
    pub stamp: Option<String>,
    pub remote_sha256: Option<String>,
    pub local_path: String,
    pub local_sha256: Option<String>,
    /// Bytes that crossed the link for it in this pull (0 when unchanged since the last one).
    pub sent: u64,
    pub verified: bool,
    /// Copied, but nothing could check that it loads (no built-in check, no command for its
    /// kind): recorded UNPROVEN, as it is. A value, never read off `verification`'s words.
    pub unproven: bool,
    /// How it was verified, or why it failed.
    pub verification: String,
    /// Set when the file could not be pulled.
    pub error: Option<String>,
    pub at: DateTime<Utc>,
    /// The local copy's identity once it was in place (`pull::local::identity`: device, inode,
    /// size, mtime and ctime to the nanosecond); None where it was not taken (a failed file, a
    /// record written before schema 9).
    pub local_stat: Option<String>,
    /// Carried over unhashed from pull N's record because nothing of it changed since, on the
    /// box (its stamp) or here (`local_stat`): "unchanged since pull #N, by stat". None: hashed
    /// on both ends in this pull.
    pub settled_since: Option<i64>,
}

/// What a pull proved about one file, in the words every view uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Copied whole, hashes equal on both ends, and shown to load (by what: `verification`).
    Proven,
    /// Copied whole and hashed, but nothing could check that it loads (what to add:
    /// `verification`).
    Unproven,
    /// Not copied, hashes differ, or a check said it does not load (why: `error` or
    /// `verification`).
    Failed,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Proven => "proven",
            Outcome::Unproven => "UNPROVEN",
            Outcome::Failed => "FAILED",
        }
    }
}

impl PulledFile {
    pub fn outcome(&self) -> Outcome {
        let copied = self.error.is_none()
            && self.remote_sha256.is_some()
            && self.remote_sha256 == self.local_sha256;
        match (copied, self.verified) {
            (true, true) => Outcome::Proven,
            (true, false) if self.unproven => Outcome::Unproven,
            _ => Outcome::Failed,
        }
    }

    /// Copied whole, hashes equal on both ends, and proven to load.
    pub fn is_good(&self) -> bool {
        self.error.is_none()
            && self.verified
            && self.remote_sha256.is_some()
            && self.remote_sha256 == self.local_sha256
    }
}

/// One pull of one host: its configured paths and every file it brought (or failed to).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PullRecord {
    pub id: i64,
    pub host: String,
    pub started: DateTime<Utc>,
    pub finished: DateTime<Utc>,
    pub paths: Vec<String>,
    /// Configured paths that matched nothing on the box.
    pub unmatched: Vec<String>,
    /// The host's `instance_id` when this pull was taken: a teardown of another id refuses.
    pub instance_id: Option<String>,
    pub files: Vec<PulledFile>,
    /// This run of the pull met a full local disk (what to do next is to free space). Not
    /// kept in the ledger: a record read back says false.
    pub local_disk_full: bool,
}

#[cfg(test)]
mod outcome_tests {
    use super::*;

    fn file(verified: bool, verification: &str, error: Option<&str>) -> PulledFile {
        PulledFile {
            remote_path: "/r/pytorch_model.bin".into(),
            size: 5,
            mtime: 0,
            stamp: None,
            remote_sha256: Some("ab".into()),
            local_path: "/l/pytorch_model.bin".into(),
            local_sha256: Some("ab".into()),
            sent: 5,
            verified,
            unproven: false,
            local_stat: None,
            settled_since: None,
            verification: verification.into(),
            error: error.map(String::from),
            at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    /// One vocabulary: a file nothing could check is unproven, not BAD; a check that failed or
    /// a copy that failed is FAILED.
    #[test]
    fn every_file_is_proven_unproven_or_failed() {
        assert_eq!(
            file(true, "zip: 3 entries", None).outcome(),
            Outcome::Proven
        );
        // What is unproven is a value: rewording its message changes nothing, and a failed
        // check whose words begin the same way is still FAILED.
        let mut unproven = file(false, "nothing here checks \"bin\" files", None);
        unproven.unproven = true;
        assert_eq!(unproven.outcome(), Outcome::Unproven);
        assert_eq!(
            file(false, "unproven-looking words of a failed check", None).outcome(),
            Outcome::Failed
        );
        assert_eq!(file(false, "json: line 3", None).outcome(), Outcome::Failed);
        assert_eq!(
            file(true, "x", Some("hash mismatch")).outcome(),
            Outcome::Failed
        );
        let mut other = file(true, "zip", None);
        other.local_sha256 = Some("cd".into());
        assert_eq!(other.outcome(), Outcome::Failed, "hashes differ");
    }
}
