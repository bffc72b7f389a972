//! The rate a connection's link last delivered a pull's bytes at, kept for the connection's
//! next pull: it starts asking the box at what the link carries (`pull::pace`) instead of
//! finding it again from an assumed 500 Mbit/s, which costs a far link's first big file a few
//! round trips and a slow link's box a first ask it queues. Only a pull measures it, and only
//! from reads and pieces timed by their bytes' arrival; the connection just keeps it.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes a second, as the bits of an f64; 0 before any pull measured it.
#[derive(Debug, Default)]
pub struct LinkRate(AtomicU64);

impl LinkRate {
    pub fn get(&self) -> Option<f64> {
        let rate = f64::from_bits(self.0.load(Ordering::Relaxed));
        (rate > 0.0).then_some(rate)
    }

    pub fn set(&self, bytes_per_second: f64) {
        if bytes_per_second.is_finite() && bytes_per_second > 0.0 {
            self.0.store(bytes_per_second.to_bits(), Ordering::Relaxed);
        }
    }
}
