//! The ledger: a local SQLite database of every pull (what came home, its hashes, whether it
//! loads) and every teardown (who confirmed what, the command, its output). It is the evidence
//! the teardown guard reads; rows are only ever added.

mod db;

pub use db::{Ledger, LedgerError, default_path};

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
    /// How it was verified, or why it failed.
    pub verification: String,
    /// Set when the file could not be pulled.
    pub error: Option<String>,
    pub at: DateTime<Utc>,
}

impl PulledFile {
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
}

/// What a teardown confirmation did, kept forever.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeardownRecord {
    pub at: DateTime<Utc>,
    pub host: String,
    pub instance_id: Option<String>,
    /// The command run; None when the platform has no API and the user destroyed it by hand.
    pub command: Option<String>,
    pub exit_status: Option<i32>,
    pub output: String,
    pub pull_id: i64,
}
