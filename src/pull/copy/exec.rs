//! A file SFTP cannot carry (a name that is not UTF-8, a box without SFTP, a pod): read by
//! `dd` (or `tail`) on an exec channel, resumed from where its `.part` stopped like an SFTP
//! copy, written and hashed as it arrives.
//!
//! Over SSH it is asked in pieces (LEN bytes from byte N: `piece_reader`), each leased from the
//! pull's pace like an SFTP read: one stream of the whole file would be sent as fast as the
//! channel's window allows, and what the link cannot carry at once would wait in the box's
//! sshd, which copies its whole buffer at each growth (`pull::pace`). The pieces go to the
//! connection's helper shell, which runs them one after another with no round trip between, so
//! a piece asked while the one before it streams keeps the link busy; each costs the box a
//! process or two (a `tail` and a `head` took ~2 ms of CPU on the bench's VM: 2 MiB pieces
//! made a loopback copy 23 % slower than one stream), so a piece is at least 4 MiB, and the
//! next may be asked one piece beyond the pace. A pod's pull is not paced (no sshd on the box
//! holds its stream): there the file is one piece.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::io::Write;

use super::super::PullError;
use super::super::names::Words;
use super::super::pace::{Budget, Lease};
use super::super::remote::RemoteFile;
use super::super::writeback::Writeback;
use super::{Copied, disk, open_part};
use crate::transport::{BoxExec, BytesEnd};

/// A copy over an exec channel ends if the box sends nothing for this long.
const EXEC_IDLE: Duration = Duration::from_secs(60);
/// The exit status of a piece whose file no longer exists.
const GONE: u32 = 66;
/// Streams one piece may take, each from where the last stopped short.
const STREAM_TRIES: usize = 4;
/// A piece's bounds: half what the pace asks (two at once keep the link busy while the next
/// starts on the box), but at least this, as each costs the box a process or two...
const PIECE_LEAST: u64 = 4 << 20;
/// ...and at most this, so a fast link still has a few asked at once.
const PIECE_MOST: u64 = 32 << 20;

/// Copies `remote` from byte `from` into `local`'s `.part`, fsynced.
pub(super) async fn download_by_exec<B: BoxExec>(
    session: &B,
    remote: &RemoteFile,
    (dest, local): (&Path, &Path),
    from: u64,
    budget: &Budget,
    progress: &AtomicU64,
) -> Result<Copied, PullError> {
    let (part, file, hasher) = open_part(remote, dest, local, from).await?;
    let landing = Mutex::new(Landing {
        file: Writeback::new(file),
        hasher,
        at: from,
        early: BTreeMap::new(),
        error: None,
    });
    let mut words = Words::default();
    let word = words.word(&remote.path);
    // A file gone before the piece is read says so by its exit status (sysexits' EX_NOINPUT),
    // not by the tool's words, which are the box's locale's.
    let command = |at: u64, len: u64| {
        format!(
            "{}[ -e {word} ] || exit {GONE}; {}",
            words.preamble(),
            piece_reader(&word, at, len)
        )
    };
    let to = Pieces {
        session,
        command: &command,
        landing: &landing,
        progress,
    };
    let mut next = from;
    let mut running = futures::stream::FuturesUnordered::new();
    let ended = loop {
        while next < remote.size {
            let len = piece_len(budget, remote.size - next);
            // A copy with nothing asked waits for room; one with pieces out asks again as
            // each ends, up to a piece beyond the pace, so the next is always waiting.
            let Some(lease) = budget.ask_beside(len, running.len(), PIECE_LEAST).await else {
                break;
            };
            running.push(to.stream((next, len), lease));
            next += len;
        }
        match running.next().await {
            Some(Ok(())) => {}
            // The first piece that ended short ends the copy: the pieces after it are let go.
            Some(Err(end)) => break Some(end),
            None => break None,
        }
    };
    drop(running);
    let landing = landing.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = landing.error {
        return Err(disk(&part, e));
    }
    let got = landing.at;
    if let Some(end) = ended {
        // As on the SFTP path, a file that vanished leaves no empty `.part` behind.
        if from == 0 && matches!(&end, Ok(end) if end.exit_status == Some(GONE)) {
            drop(landing.file);
            super::super::local::discard_part(dest, local).await;
        }
        return Err(match end {
            Ok(end) => ended_short(remote, got, &end),
            Err(reason) => PullError::Remote {
                path: remote.path.clone(),
                reason,
            },
        });
    }
    landing.file.seal(&part).await?;
    Ok(Copied {
        sent: got - from,
        sha256: super::super::local::hex(&landing.hasher.finalize()),
        box_sha256: None,
        seen: None,
        unnamed: None,
    })
}

/// The shell that writes `len` bytes of the file `word` names, from byte `at`, seeking to it:
/// `dd` where it takes byte offsets (GNU's and busybox's both do), else `tail -c +N | head`.
/// busybox's `tail -c +N` reads through the N bytes before instead of seeking (GNU's seeks):
/// there every piece read all that came before it, the square of a file's size in all
/// (`tests/pull_busybox.rs`: 312 MiB read to send 48 MiB). `status=none` leaves stderr to
/// errors, so a clean short piece is told apart from a failed read.
fn piece_reader(word: &str, at: u64, len: u64) -> String {
    const FLAGS: &str = "iflag=skip_bytes,count_bytes status=none";
    format!(
        "if dd if=/dev/null {FLAGS} 2>/dev/null; then \
         dd if={word} bs=1048576 skip={at} count={len} {FLAGS}; \
         else tail -c +{} -- {word} | head -c {len}; fi",
        at + 1
    )
}

/// How much the next piece asks: the whole rest where the pull is not paced.
fn piece_len(budget: &Budget, rest: u64) -> u64 {
    if !budget.paced() {
        return rest;
    }
    (budget.target() / 2)
        .clamp(PIECE_LEAST, PIECE_MOST)
        .min(rest)
}

/// Where the pieces' bytes land: the `.part`, written and hashed in file order. A piece that
/// comes before the one ahead of it has ended (on channels of their own, where the box has no
/// helper shell) waits here, at most what the pace has asked.
struct Landing {
    file: Writeback,
    hasher: Sha256,
    /// The next byte the `.part` takes.
    at: u64,
    early: BTreeMap<u64, Vec<u8>>,
    error: Option<std::io::Error>,
}

impl Landing {
    /// `data`, the file's bytes from `at`; false once the disk failed.
    fn land(&mut self, at: u64, data: &[u8]) -> bool {
        if self.error.is_some() {
            return false;
        }
        if at != self.at {
            self.early.insert(at, data.to_vec());
            return true;
        }
        self.write(data);
        while let Some(data) = self.early.remove(&self.at) {
            self.write(&data);
        }
        self.error.is_none()
    }

    fn write(&mut self, data: &[u8]) {
        if let Err(e) = self.file.file().write_all(data) {
            self.error = Some(e);
            return;
        }
        self.file.wrote(data.len() as u64);
        self.hasher.update(data);
        self.at += data.len() as u64;
    }
}

/// What every piece of one copy shares.
struct Pieces<'a, B, C> {
    session: &'a B,
    command: &'a C,
    landing: &'a Mutex<Landing>,
    progress: &'a AtomicU64,
}

/// How a piece that ended short ended: the stream's end, or the exec's own failure.
type Short = Result<BytesEnd, String>;

impl<B: BoxExec, C: Fn(u64, u64) -> String> Pieces<'_, B, C> {
    /// Streams `len` bytes from `at`. A stream that ends short with a clean exit and nothing
    /// on stderr is asked again from where it stopped, while each try brings bytes: `kubectl
    /// exec` can lose the end of a command's stdout and still exit 0 (kubernetes/kubernetes
    /// #124571). A file that really shrank brings nothing on its next try.
    async fn stream(&self, (at, len): (u64, u64), lease: Lease<'_>) -> Result<(), Short> {
        let (mut got, mut tries, mut first) = (0u64, 0, None);
        loop {
            let before = got;
            let command = (self.command)(at + got, len - got);
            let mut sink = |data: &[u8]| {
                // `head` ends the piece at its length, even where the box kept writing the file.
                let room = usize::try_from(len - got).unwrap_or(usize::MAX);
                let data = &data[..data.len().min(room)];
                first.get_or_insert_with(Instant::now);
                let landed = lock(self.landing).land(at + got, data);
                got += data.len() as u64;
                self.progress
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                landed
            };
            let end = self
                .session
                .exec_bytes(&command, EXEC_IDLE, &mut sink)
                .await
                .map_err(|e| Err(e.to_string()))?;
            tries += 1;
            if got == len {
                // Timed from its first byte: a piece queued behind another in the box's shell
                // waited for it, not for the link.
                lease.streamed(first.unwrap_or_else(Instant::now), Instant::now());
                return Ok(());
            }
            let cut_clean = end.exit_status == Some(0) && end.stderr.is_empty();
            if !cut_clean || end.stopped || got == before || tries == STREAM_TRIES {
                return Err(Ok(end));
            }
        }
    }
}

fn lock(landing: &Mutex<Landing>) -> std::sync::MutexGuard<'_, Landing> {
    landing.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a stream ended at `got` bytes, short of the listed size: the file was gone before its
/// read started (its exit status says so, not its words, which are the box's locale's), it
/// shrank (a clean exit and nothing said), or the read failed (what it said).
fn ended_short(remote: &RemoteFile, got: u64, end: &BytesEnd) -> PullError {
    match end.exit_status {
        Some(GONE) => PullError::Vanished(remote.path.clone()),
        Some(0) if end.stderr.is_empty() => PullError::Shrank {
            path: remote.path.clone(),
            expected: remote.size,
            got,
        },
        status => PullError::Remote {
            path: remote.path.clone(),
            reason: format!(
                "its read on the box ended ({}) after {got} of {} bytes: {}",
                crate::transport::status_words(status),
                remote.size,
                crate::sanitize::line(&String::from_utf8_lossy(&end.stderr), 200)
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces on channels of their own may come in any order: each lands at its place, the
    /// `.part` is written and hashed in file order, and nothing waits once the gap is filled.
    #[tokio::test]
    async fn pieces_that_come_out_of_order_land_in_file_order() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("f.part");
        let file = std::fs::File::create(&path).expect("file");
        let mut landing = Landing {
            file: Writeback::new(file),
            hasher: Sha256::new(),
            at: 0,
            early: BTreeMap::new(),
            error: None,
        };
        let bytes: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        // The third piece, then the second, then the first, the second in two reads.
        assert!(landing.land(6_000, &bytes[6_000..]));
        assert!(landing.land(3_000, &bytes[3_000..4_500]));
        assert!(landing.land(4_500, &bytes[4_500..6_000]));
        assert_eq!(landing.at, 0, "nothing lands ahead of a gap");
        assert!(landing.land(0, &bytes[..3_000]));
        assert_eq!(landing.at, 10_000);
        assert!(landing.early.is_empty(), "{:?}", landing.early.keys());
        let hash = landing.hasher.finalize();
        assert_eq!(hash, Sha256::digest(&bytes));
        assert_eq!(std::fs::read(&path).expect("read"), bytes);
    }
}
