//! Reading the listing's records (`remote::listing_command`) as they come, whole records at a
//! time: a pull spools the box's listing to local disk and reads it back a block at a time,
//! so what it holds of a 100 000-file folder is a chunk, not every name at once. Each file is
//! handed on as it is read; everything else (problems, links, bases) is kept in the `Listing`.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

use super::names::escape;
use super::remote::{FIND_TIMEOUT_SECS, Listing, PendingLink, Problem, RemoteFile};

/// Reads the listing's records; `stderr` is what `find` said when one of them failed.
pub fn parse_listing(paths: &[String], out: &[u8], stderr: &[u8]) -> Listing {
    let mut parser = ListingParser::new(paths);
    let mut files = Vec::new();
    let used = parser.feed(out, &mut |f| files.push(f));
    let mut listing = parser.finish(used < out.len(), stderr);
    listing.files = files;
    listing
}

/// The listing's reader, fed a block at a time.
pub struct ListingParser<'p> {
    paths: &'p [String],
    listing: Listing,
    matched: Vec<bool>,
    root: Option<usize>,
    base: String,
    /// Every file handed on so far, by a 128-bit digest of its name: overlapping pull paths (a
    /// folder and a glob inside it) list a file twice. Sixteen bytes a file, not its name.
    seen: HashSet<u128>,
    /// The problems of each `find` that failed with a status its stderr may explain: what it
    /// said arrives with the listing's end (`finish`), after its records.
    unexplained: Vec<usize>,
    /// Fields read so far.
    count: usize,
    /// A record could not be read: nothing after it is trusted.
    broke: bool,
    /// The listing's last record (`@end`) was read.
    ended: bool,
    /// The box said its find is not GNU's (`@nofind`).
    no_gnu_find: bool,
}

impl<'p> ListingParser<'p> {
    pub fn new(paths: &'p [String]) -> ListingParser<'p> {
        ListingParser {
            paths,
            listing: Listing::default(),
            matched: vec![false; paths.len()],
            root: None,
            base: String::new(),
            seen: HashSet::new(),
            unexplained: Vec::new(),
            count: 0,
            broke: false,
            ended: false,
            no_gnu_find: false,
        }
    }

    /// Reads every whole record at the start of `data`, each file handed to `file`; returns
    /// how many bytes it read (the rest begins a record the next block ends).
    pub fn feed(&mut self, data: &[u8], file: &mut dyn FnMut(RemoteFile)) -> usize {
        let mut used = 0;
        while !self.broke {
            let rest = &data[used..];
            let Some(tag_end) = memchr::memchr(0, rest) else {
                break;
            };
            let tag = &rest[..tag_end];
            let wanted = fields_of(tag);
            let mut fields = Vec::with_capacity(wanted);
            let mut at = tag_end + 1;
            while fields.len() < wanted {
                let Some(end) = memchr::memchr(0, &rest[at..]) else {
                    break;
                };
                fields.push(&rest[at..at + end]);
                at += end + 1;
            }
            if fields.len() < wanted {
                break;
            }
            self.count += 1 + wanted;
            if self.record(tag, &fields, file).is_none() {
                // Past a record that cannot be read nothing can be trusted: say so, stop.
                self.listing.problems.push(Problem::Garbled(format!(
                    "record {}: {}",
                    self.count,
                    crate::sanitize::line(&String::from_utf8_lossy(tag), 60)
                )));
                self.broke = true;
            }
            used += at;
        }
        used
    }

    /// The box's `$HOME`, once the listing's first record was read.
    pub fn home(&self) -> Option<&str> {
        self.listing.home.as_deref()
    }

    /// The listing once every block was fed; `cut`: bytes were left that begin no whole record.
    /// `stderr` is what `find` said when one of them failed.
    pub fn finish(mut self, cut: bool, stderr: &[u8]) -> Listing {
        let complaint = crate::sanitize::line(&String::from_utf8_lossy(stderr), 300);
        for &i in self.unexplained.iter().filter(|_| !complaint.is_empty()) {
            if let Some(Problem::ListingFailed { why, .. }) = self.listing.problems.get_mut(i) {
                why.push_str(": ");
                why.push_str(&complaint);
            }
        }
        if cut && !self.broke {
            self.listing.problems.push(Problem::Garbled(format!(
                "the listing ended mid-record after {} records",
                self.count
            )));
        } else if !self.ended && !self.broke {
            // Cut between two records: the files after the cut would be missing from the pull
            // with nothing said.
            self.listing.problems.push(Problem::Garbled(format!(
                "the listing ended after {} records, before its last (cut on the way)",
                self.count
            )));
        }
        self.listing.unmatched = self
            .paths
            .iter()
            .zip(&self.matched)
            .filter(|(_, m)| !**m)
            .map(|(p, _)| p.clone())
            .collect();
        self.listing
    }

    fn record(&mut self, tag: &[u8], f: &[&[u8]], file: &mut dyn FnMut(RemoteFile)) -> Option<()> {
        let listing = &mut self.listing;
        match (tag, self.root) {
            (b"@end", _) => self.ended = true,
            // The box's find is not GNU's: every path failed to list (said once), none matched
            // nothing, and what each find said after is busybox's usage text.
            (b"@nofind", _) if self.no_gnu_find => {}
            (b"@nofind", _) => {
                self.no_gnu_find = true;
                for (path, matched) in self.paths.iter().zip(&mut self.matched) {
                    *matched = true;
                    listing.problems.push(Problem::ListingFailed {
                        root: path.clone(),
                        why: NO_GNU_FIND.into(),
                    });
                }
            }
            (b"@exit", _) if self.no_gnu_find => {}
            (b"@home", _) => listing.home = Some(escape(f[0])),
            (b"@user", _) => listing.user = Some(escape(f[0])),
            (b"@root", _) => {
                self.root = std::str::from_utf8(f[0])
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n < self.paths.len());
            }
            (b"@base", Some(_)) => {
                self.base = escape(f[0]);
                listing.bases.push(escape(f[1]));
            }
            (b"@exit", Some(_)) => {
                let code = String::from_utf8_lossy(f[0]).into_owned();
                if code != "0" {
                    let why = if code == "124" || code == "137" {
                        format!("find timed out after {FIND_TIMEOUT_SECS}s (a hung mount?)")
                    } else {
                        self.unexplained.push(listing.problems.len());
                        format!("find exited {code}")
                    };
                    listing.problems.push(Problem::ListingFailed {
                        root: self.base.clone(),
                        why,
                    });
                }
            }
            (b"F", Some(r)) => {
                let size = std::str::from_utf8(f[0]).ok()?.parse().ok()?;
                let mtime = seconds(std::str::from_utf8(f[1]).ok()?)?;
                let mode = u32::from_str_radix(std::str::from_utf8(f[4]).ok()?, 8).ok()?;
                self.matched[r] = true;
                // Overlapping paths (a folder and a glob inside it) list a file twice.
                if self.seen.insert(digest(f[5])) {
                    let stamp = format!(
                        "{} {} {}",
                        String::from_utf8_lossy(f[1]),
                        String::from_utf8_lossy(f[2]),
                        String::from_utf8_lossy(f[3])
                    );
                    file(RemoteFile {
                        path: escape(f[5]),
                        size,
                        mtime,
                        stamp,
                        root: r,
                        mode,
                    });
                }
            }
            (b"L", Some(_)) => listing.pending.push(PendingLink {
                kind: String::from_utf8_lossy(f[0]).into_owned(),
                path: escape(f[1]),
                raw_target: escape(f[2]),
            }),
            (b"P", Some(r)) => {
                self.matched[r] = true;
                listing.problems.push(Problem::UnreadableFile {
                    path: escape(f[0]),
                    user: listing
                        .user
                        .clone()
                        .unwrap_or_else(|| "the login user".into()),
                });
            }
            (b"U", Some(_)) => listing.problems.push(Problem::Unreadable(escape(f[0]))),
            (b"O", Some(_)) => listing.problems.push(Problem::Special {
                kind: String::from_utf8_lossy(f[0]).into_owned(),
                path: escape(f[1]),
            }),
            _ => return None,
        }
        Some(())
    }
}

/// Why nothing was listed on a box whose `find` is not GNU's.
const NO_GNU_FIND: &str = "the box's find is not GNU find (busybox's?): the listing needs its \
                           -printf and -readable; install GNU findutils on the box (Alpine: \
                           apk add findutils)";

/// How many fields follow each tag (an unknown tag: none, and it is garbled).
fn fields_of(tag: &[u8]) -> usize {
    match tag {
        b"@home" | b"@user" | b"@root" | b"@exit" | b"P" | b"U" => 1,
        b"@base" | b"O" => 2,
        b"L" => 3,
        b"F" => 6,
        _ => 0,
    }
}

/// A name's first 128 bits of SHA-256: two names agree by chance once in 2^64 pairs.
pub(super) fn digest(name: &[u8]) -> u128 {
    let hash = Sha256::digest(name);
    let mut first = [0u8; 16];
    first.copy_from_slice(&hash[..16]);
    u128::from_le_bytes(first)
}

/// `1700000000.1234567890` → 1700000000 (floor, so a negative time stays ordered).
fn seconds(text: &str) -> Option<i64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let whole: i64 = whole.parse().ok()?;
    let below = whole < 0 || whole == 0 && text.starts_with('-');
    Some(if below && frac.bytes().any(|b| b != b'0') {
        whole - 1
    } else {
        whole
    })
}

/// `out` fed to the reader `block` bytes at a time, as a spooled listing is read back.
#[cfg(test)]
pub(super) fn parse_in_blocks(
    paths: &[String],
    out: &[u8],
    stderr: &[u8],
    block: usize,
) -> Listing {
    let mut parser = ListingParser::new(paths);
    let (mut files, mut held) = (Vec::new(), Vec::new());
    for piece in out.chunks(block) {
        held.extend_from_slice(piece);
        let used = parser.feed(&held, &mut |f| files.push(f));
        held.drain(..used);
    }
    let mut listing = parser.finish(!held.is_empty(), stderr);
    listing.files = files;
    listing
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listing fed in blocks of every size reads as it does whole: a record split anywhere
    /// waits for the block that ends it.
    #[test]
    fn blocks_of_any_size_read_as_the_whole() {
        let paths = vec!["/w".to_string(), "/w/*.pt".to_string()];
        let out = b"@home\0/root\0@user\0root\0@root\x000\0@base\0/w\0/w\0\
                    F\x0012\x001.5\x002.5\x0077\x00644\0/w/a.pt\0\
                    L\0f\0/w/l\0/w/a.pt\0P\0/w/secret\0@exit\x000\0\
                    @root\x001\0@base\0/w/a.pt\0/w/a.pt\0\
                    F\x0012\x001.5\x002.5\x0077\x00644\0/w/a.pt\0@exit\x001\0\
                    F\x003\0";
        let whole = parse_listing(&paths, out, b"find: oops");
        assert_eq!(
            whole.files.len(),
            1,
            "the second root's copy is the same file"
        );
        assert_eq!(whole.pending.len(), 1);
        assert!(matches!(whole.problems.last(), Some(Problem::Garbled(_))));
        for block in 1..out.len() {
            let listing = parse_in_blocks(&paths, out, b"find: oops", block);
            assert_eq!(listing, whole, "blocks of {block} bytes");
        }
    }
}
