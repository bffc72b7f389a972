//! Cost so far: a running total per host, accrued at the running price while the box is up and
//! at the stopped rate while it is out of sight, with money burnt while idle kept apart.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billed {
    /// Up, doing work.
    Running,
    /// Up, GPUs idle and no live run: billing for nothing.
    Idle,
    /// Out of sight and (as far as anyone says) stopped: billed at the stopped rate.
    Unseen,
    /// The provider says it was destroyed: nothing bills any more.
    Gone,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostLedger {
    pub first_seen_up: DateTime<Utc>,
    pub last_accrued: DateTime<Utc>,
    pub spent: f64,
    pub idle_spent: f64,
}

impl CostLedger {
    pub fn start(now: DateTime<Utc>) -> Self {
        CostLedger {
            first_seen_up: now,
            last_accrued: now,
            spent: 0.0,
            idle_spent: 0.0,
        }
    }

    /// Adds what the time since the last accrual cost at `rate` per hour (the rate of `billed`,
    /// see `Rates::now`); an unknown rate adds nothing rather than a guess.
    pub fn accrue(&mut self, now: DateTime<Utc>, billed: Billed, rate: Option<f64>) {
        let hours = (now - self.last_accrued).num_milliseconds().max(0) as f64 / 3_600_000.0;
        self.last_accrued = now.max(self.last_accrued);
        let cost = rate.unwrap_or(0.0) * hours;
        self.spent += cost;
        if billed == Billed::Idle {
            self.idle_spent += cost;
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostReport {
    pub per_hour: Option<f64>,
    /// Where `per_hour` comes from: the provider's CLI, fleet.toml, or the profile's fraction.
    pub per_hour_from: super::RateSource,
    pub so_far: f64,
    pub idle_so_far: f64,
    pub since: DateTime<Utc>,
    pub currency: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn running_idle_and_unseen_time_each_bill_at_their_rate() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let mut ledger = CostLedger::start(t0);
        ledger.accrue(t0 + Duration::hours(2), Billed::Running, Some(3.0));
        ledger.accrue(t0 + Duration::hours(3), Billed::Idle, Some(3.0));
        ledger.accrue(t0 + Duration::hours(7), Billed::Unseen, Some(0.5));
        assert!((ledger.spent - 11.0).abs() < 1e-9, "{ledger:?}");
        assert!((ledger.idle_spent - 3.0).abs() < 1e-9);
        ledger.accrue(t0 + Duration::hours(8), Billed::Unseen, None);
        assert!(
            (ledger.spent - 11.0).abs() < 1e-9,
            "unknown stopped rate adds nothing"
        );
        ledger.accrue(t0, Billed::Running, Some(3.0));
        assert_eq!(
            ledger.last_accrued,
            t0 + Duration::hours(8),
            "time never runs backwards"
        );
    }
}
