//! A pull's listing, kept as the box printed it and read twice: once whole for what the pull
//! must know before it copies anything (problems, links, how many files and bytes), then a
//! chunk of files at a time as the pull goes. A listing past a few MiB goes to an anonymous
//! file beside `dest` rather than memory: a 100 000-file folder's listing is ~15 MB, and every
//! name in it parsed at once was ~500 B a file more.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::PullError;
use super::copy::disk;
use super::engine::judge_links;
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
    Disk(BufWriter<File>),
}

/// The box's listing, kept, with what the first reading found.
pub(super) struct Spooled {
    store: Store,
    /// Everything but the files (those are read again by `files`).
    pub listing: Listing,
    pub files: usize,
    pub bytes: u64,
    stderr: Vec<u8>,
}

/// Lists the pull paths on the box into a spool, reads it once, and judges every link.
pub(super) async fn spool_listing<B: BoxExec>(
    session: &B,
    host: &str,
    spec: &PullConfig,
) -> Result<Spooled, PullError> {
    let mut store = Store::Memory(Vec::new());
    let (mut written, mut failed) = (0u64, None);
    let dest = &spec.dest;
    let mut sink = |data: &[u8]| {
        written += data.len() as u64;
        if written > SPOOL_MAX {
            return false;
        }
        match store.keep(data, dest) {
            Ok(()) => true,
            Err((path, e)) => {
                failed = Some(disk(&path, e));
                false
            }
        }
    };
    let command = listing_command(&spec.paths);
    let ended = session.exec_bytes(&command, LISTING_IDLE, &mut sink).await;
    let ended = ended.map_err(|source| PullError::Link {
        host: host.to_string(),
        stage: "listing the pull paths",
        source,
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if ended.exit_status.is_none() || written > SPOOL_MAX {
        return Err(PullError::Listing {
            host: host.to_string(),
            status: ended.exit_status,
            stderr: if written > SPOOL_MAX {
                format!(
                    "the listing passed {} MiB (about 1.6 million files): narrow the pull paths",
                    SPOOL_MAX >> 20
                )
            } else {
                crate::sanitize::line(&String::from_utf8_lossy(&ended.stderr), 200)
            },
        });
    }
    let mut spooled = Spooled {
        store,
        listing: Listing::default(),
        files: 0,
        bytes: 0,
        stderr: ended.stderr,
    };
    let (mut files, mut bytes) = (0, 0);
    let mut reader = spooled.reader(&spec.paths).map_err(|e| disk(dest, e))?;
    while reader
        .next_files(&mut |f| {
            files += 1;
            bytes += f.size;
        })
        .map_err(|e| disk(dest, e))?
    {}
    let mut listing = reader.finish();
    (spooled.files, spooled.bytes) = (files, bytes);
    judge_links(session, &mut listing).await;
    spooled.listing = listing;
    Ok(spooled)
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
            let file = tempfile::tempfile_in(dir()).map_err(|e| (dir(), e))?;
            let mut file = BufWriter::with_capacity(1 << 20, file);
            file.write_all(held).map_err(|e| (dir(), e))?;
            *self = Store::Disk(file);
        }
        if let Store::Disk(file) = self {
            file.write_all(data).map_err(|e| (dir(), e))?;
        }
        Ok(())
    }
}

impl Spooled {
    /// The listing read again from its start, a block at a time.
    pub(super) fn reader<'p>(&mut self, paths: &'p [String]) -> std::io::Result<Reader<'_, 'p>> {
        let source = match &mut self.store {
            Store::Memory(held) => Source::Memory(held, 0),
            Store::Disk(file) => {
                file.flush()?;
                let file = file.get_mut();
                file.rewind()?;
                Source::Disk(file)
            }
        };
        Ok(Reader {
            source,
            parser: ListingParser::new(paths, &self.stderr),
            held: Vec::new(),
            done: false,
        })
    }
}

enum Source<'s> {
    Memory(&'s [u8], usize),
    Disk(&'s mut File),
}

/// The spooled listing's files, read a block at a time.
pub(super) struct Reader<'s, 'p> {
    source: Source<'s>,
    parser: ListingParser<'p>,
    /// Read but not yet parsed: the start of a record the next block ends.
    held: Vec<u8>,
    done: bool,
}

impl Reader<'_, '_> {
    /// The files of the next block (maybe none) handed to `file`; false once the listing has
    /// ended.
    pub(super) fn next_files(&mut self, file: &mut dyn FnMut(RemoteFile)) -> std::io::Result<bool> {
        if self.done {
            return Ok(false);
        }
        match &mut self.source {
            Source::Memory(all, at) => {
                let end = (*at + BLOCK).min(all.len());
                let mut used = self.parser.feed(&all[*at..end], file);
                if used == 0 && end < all.len() {
                    // A record longer than a block.
                    used = self.parser.feed(&all[*at..], file);
                }
                *at += used;
                if used == 0 {
                    self.done = true;
                    self.held = all[*at..].to_vec();
                }
            }
            Source::Disk(f) => {
                let start = self.held.len();
                self.held.resize(start + BLOCK, 0);
                let n = f.read(&mut self.held[start..])?;
                self.held.truncate(start + n);
                let used = self.parser.feed(&self.held, file);
                self.held.drain(..used);
                // Past the longest record nothing more is read: the listing was cut (or broke
                // off at a record it could not read), and the rest would only pile up here.
                self.done = n == 0 || self.held.len() > MAX_RECORD;
            }
        }
        Ok(true)
    }

    /// Everything the listing said but its files.
    pub(super) fn finish(self) -> Listing {
        self.parser.finish(!self.held.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A box that starts a record and never ends it (a field with no NUL, megabytes long) is
    /// read a block at a time without holding what it sent, and said to be cut.
    #[test]
    fn a_record_that_never_ends_is_not_held_whole() {
        let mut file = tempfile::tempfile().expect("spool");
        file.write_all(b"@root\x000\0F\0").expect("write");
        file.write_all(&vec![b'7'; 3 << 20]).expect("write");
        let mut spooled = Spooled {
            store: Store::Disk(BufWriter::new(file)),
            listing: Listing::default(),
            files: 0,
            bytes: 0,
            stderr: Vec::new(),
        };
        let paths = vec!["/w".to_string()];
        let mut reader = spooled.reader(&paths).expect("reader");
        let mut most = 0;
        while reader.next_files(&mut |_| {}).expect("read") {
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
}
