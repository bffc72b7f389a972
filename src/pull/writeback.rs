//! A copy's bytes sent to disk while it still arrives, so its closing fsync waits for the last
//! few MiB instead of the whole file: a 256 MiB part's fsync alone was 0.48 s on this VM's
//! disk, a third of a pull at 30 ms. A background `fdatasync` each `STEP` bytes (one at a
//! time, on the same open file) starts the disk's work early; std has no `sync_file_range`
//! and the crate forbids unsafe code.

use std::fs::File;
use std::io;
use std::path::Path;

use tokio::task::JoinHandle;

use super::PullError;
use super::copy::disk;

/// Bytes written between two early syncs: large enough that their count is small (16 for a
/// 256 MiB file), small enough that the last one leaves little for the closing fsync.
const STEP: u64 = 16 << 20;

pub(super) struct Writeback {
    file: File,
    unsynced: u64,
    running: Option<JoinHandle<io::Result<()>>>,
    /// The first error an early sync met: the kernel reports a failed writeback once per open
    /// file, so the closing fsync on the same file may no longer see it.
    failed: Option<io::Error>,
}

impl Writeback {
    pub(super) fn new(file: File) -> Writeback {
        Writeback {
            file,
            unsynced: 0,
            running: None,
            failed: None,
        }
    }

    pub(super) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// `n` more bytes written: past `STEP` since the last early sync, and with none still
    /// running, the next one starts (a disk slower than the link keeps one going at a time).
    pub(super) fn wrote(&mut self, n: u64) {
        self.unsynced += n;
        if self.unsynced < STEP {
            return;
        }
        if let Some(running) = self.running.take_if(|r| r.is_finished()) {
            // Finished, so this does not wait.
            self.keep(futures::FutureExt::now_or_never(running));
        }
        if self.running.is_some() {
            return;
        }
        let Ok(clone) = self.file.try_clone() else {
            // No second handle: the closing fsync does all of it.
            return;
        };
        self.unsynced = 0;
        self.running = Some(tokio::task::spawn_blocking(move || clone.sync_data()));
    }

    fn keep(&mut self, ended: Option<Result<io::Result<()>, tokio::task::JoinError>>) {
        let result = match ended {
            Some(Ok(result)) => result,
            Some(Err(e)) => Err(io::Error::other(e.to_string())),
            None => Ok(()),
        };
        if let (Err(e), None) = (result, &self.failed) {
            self.failed = Some(e);
        }
    }

    /// fsync: the bytes are on disk before anything compares their hash or names them final.
    pub(super) async fn seal(mut self, part: &Path) -> Result<(), PullError> {
        if let Some(running) = self.running.take() {
            self.keep(Some(running.await));
        }
        let file = self.file;
        let synced = tokio::task::spawn_blocking(move || file.sync_all())
            .await
            .map_err(|e| io::Error::other(e.to_string()))
            .and_then(|r| r);
        match (self.failed, synced) {
            (Some(e), _) | (None, Err(e)) => Err(disk(part, e)),
            (None, Ok(())) => Ok(()),
        }
    }
}
