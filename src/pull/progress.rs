//! A pull's progress, shared with whoever draws its bar (this process's, or another's through
//! `runtime::control`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Where a pull is: one at a time, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Stage {
    Starting,
    Listing,
    Copying,
    Verifying,
}

impl Stage {
    pub fn word(self) -> &'static str {
        match self {
            Stage::Starting => "starting",
            Stage::Listing => "listing",
            Stage::Copying => "copying",
            Stage::Verifying => "verifying",
        }
    }

    fn of(n: u8) -> Stage {
        [Stage::Starting, Stage::Listing, Stage::Copying]
            .into_iter()
            .find(|s| *s as u8 == n)
            .unwrap_or(Stage::Verifying)
    }
}

/// Shared with whoever draws the progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_done: AtomicU64,
    pub bytes_total: AtomicU64,
    /// Files whose copy has ended (landed, unchanged or failed).
    pub files_copied: AtomicUsize,
    /// Files hashed, compared and verified.
    pub files_done: AtomicUsize,
    pub files_total: AtomicUsize,
    stage: AtomicU8,
    copy_started: Mutex<Option<Instant>>,
}

impl Progress {
    pub fn stage(&self) -> Stage {
        Stage::of(self.stage.load(Ordering::Relaxed))
    }

    pub(super) fn set_stage(&self, stage: Stage) {
        self.stage.store(stage as u8, Ordering::Relaxed);
        if stage == Stage::Copying {
            if let Ok(mut started) = self.copy_started.lock() {
                *started = Some(Instant::now());
            }
        }
    }

    /// The figures a bar is drawn from, to be shown by another process (`runtime::control`):
    /// bytes done and in all, files in all, copied and done, and the stage.
    pub fn figures(&self) -> [u64; 6] {
        let n = |a: &AtomicUsize| a.load(Ordering::Relaxed) as u64;
        [
            self.bytes_done.load(Ordering::Relaxed),
            self.bytes_total.load(Ordering::Relaxed),
            n(&self.files_total),
            n(&self.files_copied),
            n(&self.files_done),
            u64::from(self.stage.load(Ordering::Relaxed)),
        ]
    }

    /// Shows `figures` taken from a pull another process runs.
    pub fn mirror(&self, [done, total, files, copied, finished, stage]: [u64; 6]) {
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        self.bytes_done.store(done, Ordering::Relaxed);
        self.bytes_total.store(total, Ordering::Relaxed);
        self.files_total.store(n(files), Ordering::Relaxed);
        self.files_copied.store(n(copied), Ordering::Relaxed);
        self.files_done.store(n(finished), Ordering::Relaxed);
        let stage = Stage::of(u8::try_from(stage).unwrap_or(u8::MAX));
        if stage != self.stage() {
            self.set_stage(stage);
        }
    }

    /// Files not yet copied while copying, then not yet verified.
    pub fn files_left(&self) -> usize {
        let total = self.files_total.load(Ordering::Relaxed);
        let copied = self.files_copied.load(Ordering::Relaxed);
        if copied < total {
            total - copied
        } else {
            total.saturating_sub(self.files_done.load(Ordering::Relaxed))
        }
    }

    /// Bytes per second since copying began, and the time left at that rate, once known.
    pub fn rate_and_eta(&self) -> Option<(f64, Option<Duration>)> {
        let started = (*self.copy_started.lock().ok()?)?;
        let secs = started.elapsed().as_secs_f64();
        let done = self.bytes_done.load(Ordering::Relaxed);
        if secs < 0.5 || done == 0 {
            return None;
        }
        let rate = done as f64 / secs;
        let left = self
            .bytes_total
            .load(Ordering::Relaxed)
            .saturating_sub(done);
        Some((
            rate,
            (left > 0).then(|| Duration::from_secs_f64(left as f64 / rate)),
        ))
    }
}
