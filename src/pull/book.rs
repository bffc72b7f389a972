//! Where a pull's records go as it goes, a chunk at a time, and where the last pull's records
//! of a chunk's files come from: the ledger for the CLI and the dashboard (nothing of the whole
//! pull is held in memory), or a vector for benches and tests that read the records back.

use std::collections::HashMap;
use std::path::PathBuf;

use super::PullError;
use super::remote::RemoteFile;
use super::scribe::Scribe;

use crate::ledger::{Ledger, LedgerError, PullRecord, PulledFile};

pub trait Book: Send {
    /// The last pull's records of these remote paths (any it has).
    fn recorded(&mut self, paths: &[&str]) -> Result<Vec<PulledFile>, LedgerError>;
    /// The next records of this pull, in plan order.
    fn write(&mut self, files: &[PulledFile]) -> Result<(), LedgerError>;
    /// The size of the largest file the last pull recorded (None: no last pull, or it recorded
    /// no file, or the ledger could not say).
    fn last_largest(&mut self) -> Option<u64>;
    /// The last pull's id, which a record carried over by stat names (None: no last pull).
    fn previous_id(&self) -> Option<i64>;
}

/// Every record kept in memory, the last pull's looked up in a copy of its own record.
pub struct Kept {
    previous: HashMap<String, Vec<PulledFile>>,
    previous_id: Option<i64>,
    largest: Option<u64>,
    pub files: Vec<PulledFile>,
}

impl Kept {
    pub fn new(previous: Option<&PullRecord>) -> Kept {
        let mut by_path: HashMap<String, Vec<PulledFile>> = HashMap::new();
        for f in previous.into_iter().flat_map(|p| &p.files) {
            by_path
                .entry(f.remote_path.clone())
                .or_default()
                .push(f.clone());
        }
        let largest = previous.and_then(|p| p.files.iter().map(|f| f.size).max());
        Kept {
            previous: by_path,
            previous_id: previous.map(|p| p.id),
            largest,
            files: Vec::new(),
        }
    }
}

impl Book for Kept {
    fn recorded(&mut self, paths: &[&str]) -> Result<Vec<PulledFile>, LedgerError> {
        let found = paths.iter().filter_map(|p| self.previous.get(*p)).flatten();
        Ok(found.cloned().collect())
    }

    fn write(&mut self, files: &[PulledFile]) -> Result<(), LedgerError> {
        self.files.extend_from_slice(files);
        Ok(())
    }

    fn last_largest(&mut self) -> Option<u64> {
        self.largest
    }

    fn previous_id(&self) -> Option<i64> {
        self.previous_id
    }
}

/// A pull in the ledger, begun (from `head`) at its first records: a pull that fails before it
/// has any leaves no row. `previous` is the host's last pull whose files may be unchanged
/// (None: every file is fresh). Its own connection to the ledger: the book works on a thread
/// of its own (`scribe`).
pub struct Booked {
    pub ledger: Ledger,
    pub previous: Option<i64>,
    pub head: PullRecord,
    pub id: Option<i64>,
}

impl Booked {
    /// The pull has ended: it becomes its host's last pull. Its id.
    pub fn end(&mut self, ended: &PullRecord) -> Result<i64, LedgerError> {
        self.write(&[])?;
        let id = self.id.unwrap_or_default();
        self.ledger.end_pull(id, ended.finished, &ended.unmatched)?;
        Ok(id)
    }
}

impl Book for Booked {
    fn recorded(&mut self, paths: &[&str]) -> Result<Vec<PulledFile>, LedgerError> {
        match self.previous {
            Some(id) => self.ledger.pulled_files(id, paths),
            None => Ok(Vec::new()),
        }
    }

    fn write(&mut self, files: &[PulledFile]) -> Result<(), LedgerError> {
        let id = match self.id {
            Some(id) => id,
            None => *self.id.insert(self.ledger.begin_pull(&self.head)?),
        };
        self.ledger.add_files(id, files)
    }

    fn last_largest(&mut self) -> Option<u64> {
        self.ledger.largest_file(self.previous?).ok().flatten()
    }

    fn previous_id(&self) -> Option<i64> {
        self.previous
    }
}

/// What the last pull recorded of a chunk's files, asked of the book as the chunk is made.
pub(super) type Asked =
    std::pin::Pin<Box<dyn Future<Output = Result<Vec<PulledFile>, PullError>> + Send>>;

/// The last pull's records of `plan`'s files, asked of the book now (it answers on its own
/// thread while the pull goes on).
pub(super) fn ask_recorded(scribe: &Scribe, plan: &[(RemoteFile, PathBuf)]) -> Asked {
    let paths: Vec<String> = plan.iter().map(|(f, _)| f.path.clone()).collect();
    Box::pin(scribe.ask(move |book| {
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        book.recorded(&paths)
    }))
}

/// The last pull's record of each of a chunk's files whose local copy was complete then, by
/// remote path. Any earlier copy that was complete locally counts, even one whose pull failed
/// afterwards (a link that died while hashing): its bytes are here, and this pull hashes both
/// ends again. A copy whose hash disagreed with the box's never does.
pub(super) async fn recorded(asked: Asked) -> (HashMap<String, PulledFile>, Result<(), PullError>) {
    match asked.await {
        Err(e) => (HashMap::new(), Err(e)),
        Ok(files) => {
            let complete = files.into_iter().filter(|f| {
                f.local_sha256.is_some()
                    && (f.remote_sha256.is_none() || f.remote_sha256 == f.local_sha256)
            });
            (
                complete.map(|f| (f.remote_path.clone(), f)).collect(),
                Ok(()),
            )
        }
    }
}
