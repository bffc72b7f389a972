//! Rate and ETA of the running cell and of the rest of its queue. Pure: `now` is passed in.
//!
//! - **Rate**: from a short history of (time, cell fraction) samples. Only the trailing run in
//!   which the fraction never goes down is used (a drop means a new cell or a restart), and the
//!   rate is the slope between its first and last sample. Fewer than 2 usable samples, no time
//!   between them, or no movement → `None`. Non-finite fractions are ignored; fractions are
//!   clamped to `[0, 1]`; samples are sorted by time first.
//! - **Cell ETA**: the fraction is extrapolated from the last sample to `now`, and the rest of
//!   the cell is `(1 - fraction_now) / rate`, never below zero.
//! - **Queue ETA**: cells are weighted by their `epochs`; a cell without epochs weighs the mean
//!   of the queue's known epochs, or 1 when no cell states epochs. Seconds per unit of weight
//!   ("seconds per epoch") = the current cell's measured seconds-per-cell / its weight; the queue
//!   ETA is the cell ETA plus every remaining cell's weight × seconds per epoch.
//!
//! Estimates are capped at [`MAX_ETA_SECS`] (about 31 years) so time arithmetic cannot overflow.

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;

use super::parse::Queue;

/// Longest estimate reported, in seconds.
pub const MAX_ETA_SECS: f64 = 1e9;

/// One observation of the running cell's progress.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub at: DateTime<Utc>,
    /// Fraction of the cell done, `[0, 1]` (`Progress::fraction`).
    pub fraction: f64,
}

/// How fast the current cell advances.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CellRate {
    pub fraction_per_sec: f64,
    /// Seconds a whole cell takes at this rate.
    pub secs_per_cell: f64,
    /// How many samples the slope was measured over.
    pub samples_used: usize,
    /// The last sample's time and (clamped) fraction.
    pub last_at: DateTime<Utc>,
    pub last_fraction: f64,
}

/// When the current cell will finish.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CellEta {
    pub rate: CellRate,
    pub remaining_secs: f64,
    pub done_at: DateTime<Utc>,
}

impl CellEta {
    /// Whole seconds, rounded, for `--json` (`eta_secs`) and labels.
    pub fn eta_secs(&self) -> u64 {
        self.remaining_secs.round() as u64
    }
}

/// When the queue will finish.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueueEta {
    pub cell: CellEta,
    /// Measured seconds per unit of weight (per epoch when the queue states epochs).
    pub secs_per_epoch: f64,
    pub remaining_secs: f64,
    pub done_at: DateTime<Utc>,
}

impl QueueEta {
    pub fn eta_secs(&self) -> u64 {
        self.remaining_secs.round() as u64
    }
}

/// Rate of the current cell from its samples; see the module docs.
pub fn cell_rate(samples: &[Sample]) -> Option<CellRate> {
    let mut s: Vec<(DateTime<Utc>, f64)> = samples
        .iter()
        .filter(|s| s.fraction.is_finite())
        .map(|s| (s.at, s.fraction.clamp(0.0, 1.0)))
        .collect();
    s.sort_by_key(|(at, _)| *at);
    let (last_at, last_fraction) = *s.last()?;
    let mut first = s.len() - 1;
    while first > 0 && s[first - 1].1 <= s[first].1 {
        first -= 1;
    }
    let (first_at, first_fraction) = s[first];
    let secs = secs_between(first_at, last_at);
    let moved = last_fraction - first_fraction;
    if s.len() - first < 2 || secs <= 0.0 || moved <= 1e-12 {
        return None;
    }
    let fraction_per_sec = moved / secs;
    Some(CellRate {
        fraction_per_sec,
        secs_per_cell: (1.0 / fraction_per_sec).min(MAX_ETA_SECS),
        samples_used: s.len() - first,
        last_at,
        last_fraction,
    })
}

/// ETA of the current cell at `now`; `None` when [`cell_rate`] has too little to go on.
pub fn cell_eta(samples: &[Sample], now: DateTime<Utc>) -> Option<CellEta> {
    let rate = cell_rate(samples)?;
    let since = secs_between(rate.last_at, now).max(0.0);
    let fraction_now = (rate.last_fraction + rate.fraction_per_sec * since).min(1.0);
    let remaining_secs = ((1.0 - fraction_now) / rate.fraction_per_sec).clamp(0.0, MAX_ETA_SECS);
    let done_at = add_secs(now, remaining_secs)?;
    Some(CellEta {
        rate,
        remaining_secs,
        done_at,
    })
}

/// Weight of every cell of `queue`, by index: its epochs, else the mean of the known epochs,
/// else 1.
pub fn cell_weights(queue: &Queue) -> Vec<f64> {
    let known: Vec<f64> = queue
        .cells
        .iter()
        .filter_map(|c| c.epochs)
        .map(f64::from)
        .collect();
    let fallback = if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    };
    queue
        .cells
        .iter()
        .map(|c| c.epochs.map_or(fallback, f64::from))
        .collect()
}

/// ETA of the queue: the current cell (`current`, measured by `samples`) plus the cells in
/// `remaining` (indices still to run, e.g. the pending ones; `current` and unknown indices are
/// ignored, repeats count once).
pub fn queue_eta(
    queue: &Queue,
    current: usize,
    remaining: &[usize],
    samples: &[Sample],
    now: DateTime<Utc>,
) -> Option<QueueEta> {
    let weights = cell_weights(queue);
    let current_weight = *weights.get(current)?;
    let cell = cell_eta(samples, now)?;
    let secs_per_epoch = cell.rate.secs_per_cell / current_weight;
    let mut rest: Vec<usize> = remaining
        .iter()
        .copied()
        .filter(|i| *i != current)
        .collect();
    rest.sort_unstable();
    rest.dedup();
    let rest_weight: f64 = rest.iter().filter_map(|i| weights.get(*i)).sum();
    let remaining_secs =
        (cell.remaining_secs + rest_weight * secs_per_epoch).clamp(0.0, MAX_ETA_SECS);
    if !remaining_secs.is_finite() {
        return None;
    }
    let done_at = add_secs(now, remaining_secs)?;
    Some(QueueEta {
        cell,
        secs_per_epoch,
        remaining_secs,
        done_at,
    })
}

fn secs_between(a: DateTime<Utc>, b: DateTime<Utc>) -> f64 {
    (b - a).num_milliseconds() as f64 / 1000.0
}

fn add_secs(t: DateTime<Utc>, secs: f64) -> Option<DateTime<Utc>> {
    let ms = (secs * 1000.0).round();
    if !ms.is_finite() {
        return None;
    }
    t.checked_add_signed(TimeDelta::try_milliseconds(ms as i64)?)
}
