//! Where a pull's records go as it goes, a chunk at a time, and where the last pull's records
//! of a chunk's files come from: the ledger for the CLI and the dashboard (nothing of the whole
//! pull is held in memory), or a vector for benches and tests that read the records back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::PullError;
use super::remote::RemoteFile;

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

/// Every record kept in memory, the last pull's looked up in its own record.
pub struct Kept<'a> {
    previous: HashMap<&'a str, Vec<&'a PulledFile>>,
    previous_id: Option<i64>,
    largest: Option<u64>,
    pub files: Vec<PulledFile>,
}

impl<'a> Kept<'a> {
    pub fn new(previous: Option<&'a PullRecord>) -> Kept<'a> {
        let mut by_path: HashMap<&str, Vec<&PulledFile>> = HashMap::new();
        for f in previous.into_iter().flat_map(|p| &p.files) {
            by_path.entry(f.remote_path.as_str()).or_default().push(f);
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

impl Book for Kept<'_> {
    fn recorded(&mut self, paths: &[&str]) -> Result<Vec<PulledFile>, LedgerError> {
        let found = paths.iter().filter_map(|p| self.previous.get(p)).flatten();
        Ok(found.map(|f| (*f).clone()).collect())
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
/// (None: every file is fresh).
pub struct Booked<'a> {
    pub ledger: &'a mut Ledger,
    pub previous: Option<i64>,
    pub head: PullRecord,
    pub id: Option<i64>,
}

impl Booked<'_> {
    /// The pull has ended: it becomes its host's last pull. Its id.
    pub fn end(&mut self, ended: &PullRecord) -> Result<i64, LedgerError> {
        self.write(&[])?;
        let id = self.id.unwrap_or_default();
        self.ledger.end_pull(id, ended.finished, &ended.unmatched)?;
        Ok(id)
    }
}

impl Book for Booked<'_> {
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

/// The last pull's record of each of `plan`'s files whose local copy was complete then, by
/// remote path. Any earlier copy that was complete locally counts, even one whose pull failed
/// afterwards (a link that died while hashing): its bytes are here, and this pull hashes both
/// ends again. A copy whose hash disagreed with the box's never does.
pub(super) fn recorded(
    book: &Mutex<&mut dyn Book>,
    plan: &[(RemoteFile, PathBuf)],
) -> (
    HashMap<String, PulledFile>,
    Option<i64>,
    Result<(), PullError>,
) {
    let paths: Vec<&str> = plan.iter().map(|(f, _)| f.path.as_str()).collect();
    let found = match book.lock() {
        Ok(mut book) => book
            .recorded(&paths)
            .map(|files| (files, book.previous_id()))
            .map_err(PullError::from),
        Err(_) => Err(PullError::Book("a chunk's reader panicked".into())),
    };
    match found {
        Err(e) => (HashMap::new(), None, Err(e)),
        Ok((files, previous)) => {
            let complete = files.into_iter().filter(|f| {
                f.local_sha256.is_some()
                    && (f.remote_sha256.is_none() || f.remote_sha256 == f.local_sha256)
            });
            (
                complete.map(|f| (f.remote_path.clone(), f)).collect(),
                previous,
                Ok(()),
            )
        }
    }
}
