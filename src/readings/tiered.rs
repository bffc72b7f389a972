//! A history that stays small: the last readings at full rate, older ones thinned to one per
//! spacing. Thirty minutes of 2 s readings for a hundred boxes would otherwise hold a hundred
//! megabytes of mostly repeated samples; the signals need the recent detail and the older shape
//! (idle for 40 minutes, a disk's growth over half an hour, the boot before a reboot).

use std::collections::VecDeque;

use chrono::{DateTime, Duration, Utc};

/// Something stamped with the time it was read.
pub trait Stamped {
    fn at(&self) -> DateTime<Utc>;
    /// What the thinned tier keeps of it: only what judgements read from older readings, so
    /// two hours of history hold the shape, not every detail of every reading.
    fn thinned(self) -> Self
    where
        Self: Sized,
    {
        self
    }
}

#[derive(Debug, Clone)]
pub struct Tiered<T> {
    recent: VecDeque<T>,
    older: VecDeque<T>,
    recent_len: usize,
    older_len: usize,
    spacing: Duration,
}

impl<T: Stamped> Tiered<T> {
    pub fn new(recent_len: usize, older_len: usize, spacing: Duration) -> Self {
        Tiered {
            recent: VecDeque::new(),
            older: VecDeque::new(),
            recent_len: recent_len.max(1),
            older_len,
            spacing,
        }
    }

    pub fn push(&mut self, item: T) {
        self.recent.push_back(item);
        if self.recent.len() <= self.recent_len {
            return;
        }
        let Some(leaving) = self.recent.pop_front() else {
            return;
        };
        let keep = self
            .older
            .back()
            .is_none_or(|last| leaving.at() - last.at() >= self.spacing);
        if keep && self.older_len > 0 {
            if self.older.len() == self.older_len {
                self.older.pop_front();
            }
            self.older.push_back(leaving.thinned());
        }
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + Clone {
        self.older.iter().chain(self.recent.iter())
    }

    pub fn len(&self) -> usize {
        self.older.len() + self.recent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn last(&self) -> Option<&T> {
        self.recent.back().or_else(|| self.older.back())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Stamped for DateTime<Utc> {
        fn at(&self) -> DateTime<Utc> {
            *self
        }
    }

    #[test]
    fn recent_kept_whole_older_thinned_and_capped() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let mut h = Tiered::new(3, 2, Duration::seconds(10));
        for s in 0..20 {
            h.push(t0 + Duration::seconds(s * 2));
        }
        let seconds: Vec<i64> = h.iter().map(|t| (*t - t0).num_seconds()).collect();
        assert_eq!(seconds, [20, 30, 34, 36, 38]);
        assert_eq!(h.last().map(|t| (*t - t0).num_seconds()), Some(38));
        assert_eq!(h.len(), 5);
    }
}
