//! A pull's listing, kept as the box prints it and read by the pull as it comes (`Reader`), a
//! block at a time: the pull's first chunks are planned, looked at and carried while the box
//! still lists. A re-pull of 100 000 files waited half a second for `find` on the box with this
//! machine idle, then read the whole listing once more only to count it. A listing past a few
//! MiB goes to an anonymous file beside `dest` rather than memory: a 100 000-file folder's
//! listing is ~15 MB, and every name in it parsed at once was ~500 B a file more.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::PullError;
use super::copy::disk;
use super::listing::ListingParser;
use super::local::parts_dir;
use super::remote::{Listing, RemoteFile, listing_command};
use crate::config::PullConfig;
use crate::transport::BoxExec;

/// Past this much (about 6 500 files) the listing goes to disk.
const IN_MEMORY: usize = 1 << 20;
/// The most a listing may be: about 1.6 million files. Past it the pull stops, saying so.
pub const SPOOL_MAX: u64 = 256 << 20;
/// The listing ends if the box sends nothing for this long (each `find` is killed at 110 s).
const LISTING_IDLE: Duration = Duration::from_secs(120);
/// Bytes read back at a time.
const BLOCK: usize = 256 << 10;
/// The longest record read back: a few names of at most 4 KiB each. A box that begins a record
/// and never ends it has sent a cut listing, not one record to hold whole.
const MAX_RECORD: usize = 1 << 20;

enum Store {
    Memory(Vec<u8>),
    Disk(File),
}

/// The box's listing as it arrives: written by `fill`, read by any number of `Reader`s.
#[derive(Default)]
pub(super) struct Spool {
    kept: Mutex<Kept>,
    /// Told each time more is kept, and once the listing has ended.
    grew: Notify,
}

#[derive(Default)]
struct Kept {
    store: Store,
    len: u64,
    /// How the box's command ended: what `find` said on stderr where it ended well.
    ended: Option<Result<Vec<u8>, ()>>,
}

impl Default for Store {
    fn default() -> Store {
        Store::Memory(Vec::new())
    }
}

/// Where a reader stands after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// A block was read (its files handed on).
    Read,
    /// Everything kept so far is read; the box is still listing.
    Waiting,
    /// The listing ended and is read to its end (or to where it broke off).
    Ended,
    /// The box's command failed: nothing more is read (`fill` says why).
    Failed,
}

impl Spool {
    fn kept(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lists the pull paths on the box into the spool until the listing ends. A listing that
    /// fails, is cut or ends without a status is an error, never an empty folder.
    pub(super) async fn fill<B: BoxExec>(
        &self,
        session: &B,
        host: &str,
        spec: &PullConfig,
    ) -> Result<(), PullError> {
        let began = Instant::now();
        let (mut over, mut failed) = (false, None);
        let mut sink = |data: &[u8]| {
            let mut kept = self.kept();
            if kept.len + data.len() as u64 > SPOOL_MAX {
                over = true;
                return false;
            }
            if let Err((path, e)) = kept.store.keep(data, &spec.dest) {
                failed = Some(disk(&path, e));
                return false;
            }
            kept.len += data.len() as u64;
            drop(kept);
            self.grew.notify_one();
            true
        };
        let ended = session
            .exec_bytes(&listing_command(&spec.paths), LISTING_IDLE, &mut sink)
            .await;
        let outcome = match (ended, failed) {
            (Err(source), _) => Err(PullError::Link {
                host: host.to_string(),
                stage: "listing the pull paths",
                source,
            }),
            (Ok(_), Some(e)) => Err(e),
            (Ok(ended), None) if ended.exit_status.is_none() || over => Err(PullError::Listing {
                host: host.to_string(),
                status: ended.exit_status,
                stderr: if over {
                    format!(
                        "the listing passed {} MiB (about 1.6 million files): narrow the pull paths",
                        SPOOL_MAX >> 20
                    )
                } else {
                    crate::sanitize::line(&String::from_utf8_lossy(&ended.stderr), 200)
                },
            }),
            (Ok(ended), None) => Ok(ended.stderr),
        };
        let len = {
            let mut kept = self.kept();
            kept.ended = Some(outcome.as_ref().map(Vec::clone).map_err(|_| ()));
            kept.len
        };
        self.grew.notify_one();
        tracing::debug!(
            host,
            bytes = len,
            ms = began.elapsed().as_millis() as u64,
            "pull: listed"
        );
        outcome.map(drop)
    }

    /// Ends once the spool may hold more than when it was last read, or the listing ended.
    pub(super) async fn grew(&self) {
        self.grew.notified().await;
    }

    /// The listing read from its start, a block at a time, as it arrives.
    pub(super) fn reader<'p>(&self, paths: &'p [String]) -> Reader<'_, 'p> {
        Reader {
            spool: self,
            at: 0,
            parser: ListingParser::new(paths),
            held: Vec::new(),
            done: false,
        }
    }
}

impl Store {
    /// `data` kept; where it could not be written, and why.
    fn keep(&mut self, data: &[u8], dest: &Path) -> Result<(), (PathBuf, std::io::Error)> {
        let dir = || parts_dir(dest);
        if let Store::Memory(held) = self {
            if held.len() + data.len() <= IN_MEMORY {
                held.extend_from_slice(data);
                return Ok(());
            }
            std::fs::create_dir_all(dir()).map_err(|e| (dir(), e))?;
            let mut file = tempfile::tempfile_in(dir()).map_err(|e| (dir(), e))?;
            file.write_all(held).map_err(|e| (dir(), e))?;
            *self = Store::Disk(file);
        }
        if let Store::Disk(file) = self {
            file.write_all(data).map_err(|e| (dir(), e))?;
        }
        Ok(())
    }

    /// Kept bytes from `at` into `buf`; how many.
    fn read_at(&self, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Store::Memory(held) => {
                let from = usize::try_from(at).unwrap_or(usize::MAX).min(held.len());
                let n = buf.len().min(held.len() - from);
                buf[..n].copy_from_slice(&held[from..from + n]);
                Ok(n)
            }
            Store::Disk(file) => file.read_at(buf, at),
        }
    }
}

/// The spooled listing's files, read a block at a time as they arrive.
pub(super) struct Reader<'s, 'p> {
    spool: &'s Spool,
    /// Bytes of the spool read so far.
    at: u64,
    parser: ListingParser<'p>,
    /// Read but not yet parsed: the start of a record the next block ends.
    held: Vec<u8>,
    done: bool,
}

impl Reader<'_, '_> {
    /// The files of the next block kept (maybe none) handed to `file`, and where the reader
    /// stands after it.
    pub(super) fn next_files(&mut self, file: &mut dyn FnMut(RemoteFile)) -> std::io::Result<Step> {
        if self.done {
            return Ok(Step::Ended);
        }
        let kept = self.spool.kept();
        let (len, ended) = (kept.len, kept.ended.as_ref().map(Result::is_ok));
        if ended == Some(false) {
            self.done = true;
            return Ok(Step::Failed);
        }
        if self.at >= len {
            self.done = ended.is_some();
            return Ok(if self.done {
                Step::Ended
            } else {
                Step::Waiting
            });
        }
        let start = self.held.len();
        let want = BLOCK.min(usize::try_from(len - self.at).unwrap_or(BLOCK));
        self.held.resize(start + want, 0);
        let n = kept.store.read_at(self.at, &mut self.held[start..])?;
        drop(kept);
        self.held.truncate(start + n);
        self.at += n as u64;
        let used = self.parser.feed(&self.held, file);
        self.held.drain(..used);
        // Past the longest record nothing more is read: the listing was cut (or broke off at a
        // record it could not read), and the rest would only pile up here.
        if self.held.len() > MAX_RECORD || n == 0 {
            self.done = true;
            return Ok(Step::Ended);
        }
        Ok(Step::Read)
    }

    /// Ends once the spool may hold more than this reader has read, or the listing ended.
    pub(super) async fn grew(&self) {
        self.spool.grew().await;
    }

    /// The box's `$HOME`, once the listing's first record is read.
    pub(super) fn home(&self) -> Option<&str> {
        self.parser.home()
    }

    /// Everything the listing said but its files.
    pub(super) fn finish(self) -> Listing {
        let kept = self.spool.kept();
        let stderr = match &kept.ended {
            Some(Ok(stderr)) => stderr.as_slice(),
            _ => &[],
        };
        self.parser.finish(!self.held.is_empty(), stderr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(store: Store, len: u64) -> Spool {
        let spool = Spool::default();
        *spool.kept() = Kept {
            store,
            len,
            ended: Some(Ok(Vec::new())),
        };
        spool
    }

    /// A box that starts a record and never ends it (a field with no NUL, megabytes long) is
    /// read a block at a time without holding what it sent, and said to be cut.
    #[test]
    fn a_record_that_never_ends_is_not_held_whole() {
        let mut file = tempfile::tempfile().expect("spool");
        file.write_all(b"@root\x000\0F\0").expect("write");
        file.write_all(&vec![b'7'; 3 << 20]).expect("write");
        let len = file.metadata().expect("meta").len();
        let spool = ended(Store::Disk(file), len);
        let paths = vec!["/w".to_string()];
        let mut reader = spool.reader(&paths);
        let mut most = 0;
        while reader.next_files(&mut |_| {}).expect("read") == Step::Read {
            most = most.max(reader.held.len());
        }
        assert!(
            most <= MAX_RECORD + BLOCK,
            "held {most} bytes of one record"
        );
        let listing = reader.finish();
        assert!(
            matches!(
                listing.problems.last(),
                Some(super::super::remote::Problem::Garbled(_))
            ),
            "{:?}",
            listing.problems
        );
    }

    /// A reader keeps up with the box: what is kept so far is read and handed on, then it
    /// waits; once the listing has ended it reads the rest and ends. A command that failed
    /// ends the reading at once.
    #[test]
    fn a_reader_reads_what_has_come_then_waits_for_the_rest() {
        let spool = Spool::default();
        let paths = vec!["/w".to_string()];
        let mut reader = spool.reader(&paths);
        let mut names = Vec::new();
        let read = |reader: &mut Reader<'_, '_>, names: &mut Vec<String>| loop {
            match reader
                .next_files(&mut |f| names.push(f.path))
                .expect("read")
            {
                Step::Read => {}
                other => return other,
            }
        };
        assert_eq!(read(&mut reader, &mut names), Step::Waiting);
        let first =
            b"@home\0/h\0@root\x000\0@base\0/w\0/w\0F\x001\x001.0\x001.0\x009\x00644\0/w/a\0F\x001";
        spool
            .kept()
            .store
            .keep(first, Path::new("/nowhere"))
            .expect("kept");
        spool.kept().len = first.len() as u64;
        assert_eq!(read(&mut reader, &mut names), Step::Waiting);
        assert_eq!(names, ["/w/a"], "the half record waits for its end");
        assert_eq!(reader.home(), Some("/h"));
        let rest = b"\x001.0\x001.0\x009\x00644\0/w/b\0@exit\x000\0@end\0";
        spool
            .kept()
            .store
            .keep(rest, Path::new("/nowhere"))
            .expect("kept");
        spool.kept().len += rest.len() as u64;
        assert_eq!(read(&mut reader, &mut names), Step::Waiting);
        spool.kept().ended = Some(Ok(Vec::new()));
        assert_eq!(read(&mut reader, &mut names), Step::Ended);
        assert_eq!(names, ["/w/a", "/w/b"]);
        assert_eq!(reader.finish().problems, []);

        let failed = Spool::default();
        failed.kept().ended = Some(Err(()));
        assert_eq!(
            failed.reader(&paths).next_files(&mut |_| {}).ok(),
            Some(Step::Failed)
        );
    }
}
