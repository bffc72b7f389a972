//! The sessions rigwatch saw in the last week, for a weekly GPU-hour quota (Kaggle: 30 h).
//! Kept across restarts of rigwatch with the rest of a host's memory.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// A week is what the quota counts; older spans are dropped.
const WEEK: Duration = Duration::days(7);
/// Sessions kept at most: a week of sessions restarted every few minutes still fits.
const MAX_SPANS: usize = 512;
/// A session whose start moves by less than this is the same session (uptime jitter).
const SAME_SESSION: Duration = Duration::seconds(90);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionLog {
    spans: Vec<Span>,
}

impl SessionLog {
    /// The box was up at `now` in the session that began at `start` (its boot).
    pub fn record(&mut self, start: DateTime<Utc>, now: DateTime<Utc>) {
        let start = start.min(now);
        match self.spans.last_mut() {
            Some(last) if (last.start - start).abs() <= SAME_SESSION => {
                last.end = last.end.max(now);
            }
            _ => self.spans.push(Span { start, end: now }),
        }
        self.spans.retain(|s| s.end > now - WEEK);
        let excess = self.spans.len().saturating_sub(MAX_SPANS);
        self.spans.drain(..excess);
    }

    /// Session time in the week before `now`; None before any session was seen, so a clock
    /// falls back to the current session alone.
    pub fn week_used(&self, now: DateTime<Utc>) -> Option<Duration> {
        (!self.spans.is_empty()).then(|| self.used_in_week(now))
    }

    /// Session time inside the week before `now`, overlapping spans counted once.
    pub fn used_in_week(&self, now: DateTime<Utc>) -> Duration {
        let from = now - WEEK;
        let mut clipped: Vec<(DateTime<Utc>, DateTime<Utc>)> = self
            .spans
            .iter()
            .map(|s| (s.start.max(from), s.end.min(now)))
            .filter(|(a, b)| a < b)
            .collect();
        clipped.sort();
        let mut used = Duration::zero();
        let mut current: Option<(DateTime<Utc>, DateTime<Utc>)> = None;
        for (a, b) in clipped {
            current = match current {
                Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
                Some((ca, cb)) => {
                    used += cb - ca;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        if let Some((a, b)) = current {
            used += b - a;
        }
        used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(hours: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::days(10_000) + Duration::hours(hours)
    }

    #[test]
    fn sessions_across_the_week_add_up_and_old_ones_fall_out() {
        let mut log = SessionLog::default();
        log.record(t(0), t(1));
        log.record(t(0), t(3));
        log.record(t(24), t(30));
        assert_eq!(log.used_in_week(t(30)), Duration::hours(9));
        let later = t(7 * 24 + 2);
        assert_eq!(
            log.used_in_week(later),
            Duration::hours(7),
            "the first session's first two hours left the week"
        );
        log.record(t(7 * 24 + 9), t(7 * 24 + 10));
        assert_eq!(log.spans.len(), 2, "a span older than a week is dropped");
    }

    #[test]
    fn a_jittering_boot_time_is_one_session_and_overlaps_count_once() {
        let mut log = SessionLog::default();
        log.record(t(0), t(1));
        log.record(t(0) + Duration::seconds(30), t(2));
        assert_eq!(log.spans.len(), 1);
        log.record(t(1), t(2));
        assert_eq!(log.used_in_week(t(2)), Duration::hours(2));
    }

    #[test]
    fn the_log_stays_bounded() {
        let mut log = SessionLog::default();
        for i in 0..2000 {
            let start = t(0) + Duration::minutes(i * 3);
            log.record(start, start + Duration::minutes(1));
        }
        assert!(log.spans.len() <= MAX_SPANS);
    }
}
