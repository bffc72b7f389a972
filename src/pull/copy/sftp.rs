//! One file copied over SFTP: many reads in flight, each sized to the server's largest read,
//! as many as the pull's pace allows (`pull::pace`: what the link carries in a round trip),
//! answered in order and written in order into the file's `.part`, hashed as they land.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use futures::stream::FuturesOrdered;
use russh_sftp::client::error::Error as SftpError;
use russh_sftp::protocol::StatusCode;
use sha2::Digest;
use std::io::Write;

use super::super::PullError;
use super::super::channel::OpenHandle;
use super::super::pace::Budget;
use super::super::remote::RemoteFile;
use super::super::writeback::Writeback;
use super::{Copied, disk, open_part};
use crate::transport::SftpChannel;

/// Bytes asked per read: what the server says it answers whole (`limits@openssh.com`, 255 KiB on
/// OpenSSH 8.9+), at most 255 KiB (russh-sftp's 256 KiB packets), else 64 KiB, which every
/// OpenSSH answers whole (older ones cap reads there; a bigger ask would come back short and
/// cost a second round trip per read).
fn chunk_for(max_read: Option<u64>) -> u64 {
    const CAP: u64 = 255 * 1024;
    const SAFE: u64 = 64 * 1024;
    max_read.map_or(SAFE, |m| m.clamp(1, CAP))
}

/// How long a copy waits for any of its reads to answer on a live link before giving up: one
/// 255 KiB read takes ~37 s at 56 kbit/s, and reads are answered in order.
const READ_IDLE: std::time::Duration = std::time::Duration::from_secs(120);

/// Where a copy starts, and the pull's pace, which says how many reads it may keep in flight.
#[derive(Clone, Copy)]
pub(super) struct Span<'a> {
    pub(super) from: u64,
    pub(super) budget: &'a Budget,
}

/// The next read's answer, in order: the reads in flight wait for the link, not for their own
/// timeouts. A live link that answers no read for READ_IDLE is given up on; a slow one that
/// answers is waited for (a lost one ends the copy where it is started).
async fn next_answer<F: std::future::Future>(
    inflight: &mut FuturesOrdered<F>,
    channel: &SftpChannel,
    remote: &RemoteFile,
) -> Result<Option<F::Output>, PullError> {
    tokio::select! {
        answered = inflight.next() => Ok(answered),
        () = tokio::time::sleep(READ_IDLE) => {
            // Its sftp-server may be stuck on this file: later pulls get another.
            channel.retire();
            Err(PullError::Remote {
                path: remote.path.clone(),
                reason: format!("no read answered for {} s on a live link", READ_IDLE.as_secs()),
            })
        }
    }
}

/// A read's bytes made whole: a server may return fewer bytes than asked, so the rest of the
/// chunk at `at` (offset, length) is fetched before writing on, and the file is always written
/// in order. A file that ends early shrank.
async fn whole_read(
    channel: &SftpChannel,
    handle: &str,
    remote: &RemoteFile,
    (offset, len): (u64, u64),
    mut data: Vec<u8>,
) -> Result<Vec<u8>, PullError> {
    while (data.len() as u64) < len {
        let at = offset + data.len() as u64;
        let want = (len - data.len() as u64) as u32;
        match channel.raw.read(handle, at, want).await {
            Ok(more) if !more.data.is_empty() => data.extend_from_slice(&more.data),
            Ok(_) | Err(SftpError::Status(_)) => {
                return Err(PullError::Shrank {
                    path: remote.path.clone(),
                    expected: remote.size,
                    got: at,
                });
            }
            Err(e) => return Err(failed(channel, remote, e)),
        }
    }
    Ok(data)
}

/// A request of the copy that failed. The channel is the connection's, kept for later pulls:
/// one whose requests fail other than with the server's answer (a timeout, its stream gone) is
/// not handed out again.
fn failed(channel: &SftpChannel, remote: &RemoteFile, e: SftpError) -> PullError {
    if !matches!(e, SftpError::Status(_)) {
        channel.retire();
    }
    remote_error(remote, e)
}

/// Copies `remote` from byte `from` into `local`'s `.part`, fsynced.
/// Writes go straight to the page cache from this task: a 128 KiB write costs microseconds,
/// far less than handing each chunk to a blocking thread.
pub(super) async fn download(
    channel: &Arc<SftpChannel>,
    name: &str,
    remote: &RemoteFile,
    (dest, local): (&Path, &Path),
    span: Span<'_>,
    progress: &AtomicU64,
) -> Result<Copied, PullError> {
    let sftp = &channel.raw;
    let failed = |e: SftpError| failed(channel, remote, e);
    let Span { from, budget } = span;
    let ask = |handle: String, offset: u64, len: u64| {
        let read = sftp.read(handle, offset, len as u32);
        async move { (offset, len, read.await.map(|r| r.data)) }
    };
    let mut next = from;
    // Requests go out when first polled: FuturesOrdered polls them all, hands them back in order.
    let mut inflight = FuturesOrdered::new();
    // Each answer's lease, in the order they are asked (and answered: FuturesOrdered).
    let mut leases = VecDeque::new();
    // The remote file first: one that vanished leaves no `.part` behind. Where its handle is
    // known before the answer, the first reads go with the open, a round trip before they
    // could after it; the server's read size is asked beside it (once per channel).
    let (opening, guess) = channel.open_read(name);
    if let Some(guess) = &guess {
        let len = chunk_for(channel.known_max_read());
        while next < remote.size {
            let len = len.min(remote.size - next);
            let Some(lease) = budget.ask_beside(len, inflight.len(), 0).await else {
                break;
            };
            inflight.push_back(ask(guess.clone(), next, len));
            leases.push_back(lease);
            next += len;
        }
    }
    let guessed_to = next;
    // Answers that came before the open's (from a server that does not answer in order).
    let mut early = VecDeque::new();
    let (opened, max_read) = {
        let opening = async { tokio::join!(opening, channel.max_read()) };
        tokio::pin!(opening);
        loop {
            tokio::select! {
                biased;
                out = &mut opening => break out,
                Some(answer) = inflight.next(), if !inflight.is_empty() => early.push_back(answer),
            }
        }
    };
    let handle = OpenHandle::new(channel, opened.map_err(failed)?);
    let guessed = guess.as_ref().map(|g| g == handle.name());
    if guessed == Some(false) {
        // The guess named no file open: its reads are waited out (their leases held till
        // then, as the pace counts them) and asked again.
        while next_answer(&mut inflight, channel, remote).await?.is_some() {}
        (early, next) = (VecDeque::new(), from);
        leases.clear();
    }
    let chunk = chunk_for(max_read);
    let mut most_asked = 0u64;
    let (part, file, mut hasher) = open_part(remote, dest, local, from).await?;
    let mut file = Writeback::new(file);

    let began = std::time::Instant::now();
    let mut sent = 0u64;
    let result: Result<(), PullError> = async {
        loop {
            while next < remote.size {
                let len = chunk.min(remote.size - next);
                // A copy with nothing asked waits for room; one with reads out asks again as
                // each is answered.
                let Some(lease) = budget.ask_beside(len, inflight.len(), 0).await else {
                    break;
                };
                inflight.push_back(ask(handle.name().to_string(), next, len));
                leases.push_back(lease);
                next += len;
            }
            most_asked = most_asked.max(next - from - sent);
            let answer = match early.pop_front() {
                Some(answer) => answer,
                None => match next_answer(&mut inflight, channel, remote).await? {
                    Some(answer) => answer,
                    None => break,
                },
            };
            let (offset, len, read) = answer;
            if let Some(lease) = leases.pop_front() {
                lease.answered(std::time::Instant::now());
            }
            let read = match read {
                Ok(data) => data,
                // A guessed read the server did not answer with bytes is asked again.
                Err(_) if offset < guessed_to => Vec::new(),
                Err(e) => return Err(failed(e)),
            };
            let data = whole_read(channel, handle.name(), remote, (offset, len), read).await?;
            file.file()
                .write_all(&data)
                .map_err(|source| disk(&part, source))?;
            file.wrote(data.len() as u64);
            hasher.update(&data);
            sent += data.len() as u64;
            progress.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }
    .await;
    // Reads still in flight (a copy that failed) borrow the handle it is about to close.
    drop(inflight);
    let received = began.elapsed();
    drop(handle);
    result?;
    file.seal(&part).await?;
    tracing::debug!(
        bytes = sent,
        most_asked_mib = most_asked >> 20,
        pace_mib = budget.target() >> 20,
        read_bytes = chunk,
        handle_guessed = ?guessed,
        received_ms = received.as_millis() as u64,
        sealed_ms = began.elapsed().as_millis() as u64,
        "pull: copied over SFTP"
    );
    Ok(Copied {
        sent,
        sha256: super::super::local::hex(&hasher.finalize()),
        box_sha256: None,
        seen: None,
        unnamed: None,
    })
}

fn remote_error(remote: &RemoteFile, e: SftpError) -> PullError {
    match e {
        SftpError::Status(s) if s.status_code == StatusCode::NoSuchFile => {
            PullError::Vanished(remote.path.clone())
        }
        SftpError::Status(s) if s.status_code == StatusCode::Eof => PullError::Shrank {
            path: remote.path.clone(),
            expected: remote.size,
            got: 0,
        },
        other => PullError::Remote {
            path: remote.path.clone(),
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_sized_to_the_server() {
        assert_eq!(
            chunk_for(None),
            64 * 1024,
            "an older OpenSSH answers 64 KiB whole"
        );
        assert_eq!(
            chunk_for(Some(261_120)),
            261_120,
            "OpenSSH 8.9+ says 255 KiB"
        );
        assert_eq!(
            chunk_for(Some(1 << 20)),
            255 * 1024,
            "russh-sftp's packets cap it"
        );
        assert_eq!(chunk_for(Some(32_768)), 32_768);
    }
}
