//! Danger clocks: countdowns to what costs data or money, and what keeps accruing. A pure
//! function of the platform profile, the host's billing, what was observed and `now`.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::Profile;
use crate::config::Billing;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockKind {
    AutoRelease,
    StoppedBilling,
    IdleTimeout,
    MaxSession,
    WeeklyQuota,
    DiskFull,
    BalanceRunway,
    CheckpointInterval,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// From the provider or a measurement.
    Exact,
    /// From what rigwatch last saw (e.g. "last seen running at T"): the real deadline is no
    /// earlier than this one.
    Conservative,
    /// An estimate from a rate (disk growth, burn rate).
    Estimate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clock {
    pub kind: ClockKind,
    pub deadline: Option<DateTime<Utc>>,
    pub remaining_secs: Option<i64>,
    /// Money accrued so far, for accrual clocks.
    pub accrued: Option<f64>,
    pub confidence: Confidence,
    /// What happens when it fires, and what to do.
    pub message: String,
}

/// What the clocks are computed from.
pub struct ClockFacts<'a> {
    pub profile: Option<&'a Profile>,
    pub billing: &'a Billing,
    pub link_up: bool,
    /// The last moment the box was seen up.
    pub last_seen_up: Option<DateTime<Utc>>,
    /// When the box's current boot (session) began.
    pub session_start: Option<DateTime<Utc>>,
    /// The last moment a GPU worked or the run was seen alive.
    pub last_activity: Option<DateTime<Utc>>,
    pub time_to_full: Option<(&'static str, Duration)>,
    pub checkpoint_age: Option<Duration>,
    /// The whole fleet's burn rate and the account balance, for the runway.
    pub fleet_burn_per_hour: f64,
    pub balance: Option<f64>,
    pub now: DateTime<Utc>,
}

impl ClockFacts<'_> {
    fn currency(&self) -> &str {
        self.billing.currency.as_deref().unwrap_or("USD")
    }

    fn clock(
        &self,
        kind: ClockKind,
        deadline: DateTime<Utc>,
        confidence: Confidence,
        message: String,
    ) -> Clock {
        Clock {
            kind,
            deadline: Some(deadline),
            remaining_secs: Some((deadline - self.now).num_seconds()),
            accrued: None,
            confidence,
            message,
        }
    }
}

/// The rate a box bills at while stopped or out of sight: the user's figure, else the
/// profile's fraction of the running price, else (no stop state) the full price.
pub fn stopped_rate(profile: Option<&Profile>, billing: &Billing) -> Option<f64> {
    if let Some(rate) = billing.stopped_price_per_hour {
        return Some(rate);
    }
    let price = billing.price_per_hour?;
    match profile {
        Some(p) if !p.stop.exists => Some(price),
        Some(p) => p.stop.billing_fraction.map(|f| price * f),
        None => None,
    }
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

pub fn clocks(f: &ClockFacts<'_>) -> Vec<Clock> {
    let mut out = Vec::new();
    let name = f.profile.map_or("the provider", |p| p.title.as_str());
    if !f.link_up {
        if let Some(seen) = f.last_seen_up {
            if let Some(days) = f
                .profile
                .and_then(|p| p.timers.auto_release_days_after_stop)
            {
                out.push(f.clock(
                    ClockKind::AutoRelease,
                    seen + Duration::days(i64::from(days)),
                    Confidence::Conservative,
                    format!(
                        "out of sight since {} (counted as stopped since last seen): {name} releases a box \
                         {days} days after stop, deleting its disks. Start it or pull its results before then",
                        when(seen)
                    ),
                ));
            }
            let hours = (f.now - seen).num_seconds().max(0) as f64 / 3600.0;
            let bills = f
                .profile
                .and_then(|p| p.stop.bills.clone())
                .unwrap_or_else(|| "unknown".into());
            let rate = stopped_rate(f.profile, f.billing);
            out.push(Clock {
                kind: ClockKind::StoppedBilling,
                deadline: None,
                remaining_secs: None,
                accrued: rate.map(|r| r * hours),
                confidence: Confidence::Conservative,
                message: match rate {
                    Some(r) => format!(
                        "unreachable for {hours:.1} h: if stopped it still bills {bills}; about {:.2} {} so far at {r:.2}/h",
                        r * hours,
                        f.currency()
                    ),
                    None => format!("unreachable for {hours:.1} h: if stopped it still bills {bills} (set stopped_price_per_hour to count it)"),
                },
            });
        }
    }
    let timers = f.profile.map(|p| p.timers.clone()).unwrap_or_default();
    if f.link_up {
        if let (Some(minutes), Some(active)) = (
            timers.idle_timeout_minutes,
            f.last_activity.or(f.session_start),
        ) {
            out.push(f.clock(
                ClockKind::IdleTimeout,
                active + Duration::minutes(i64::from(minutes)),
                Confidence::Conservative,
                format!("{name} ends an idle session after {minutes} min: keep a cell running or save your work"),
            ));
        }
        if let (Some(hours), Some(start)) = (timers.max_session_hours, f.session_start) {
            out.push(f.clock(
                ClockKind::MaxSession,
                start + Duration::hours(i64::from(hours)),
                Confidence::Conservative,
                format!("{name} ends any session after {hours} h: checkpoint and copy results off before then"),
            ));
        }
        if let (Some(hours), Some(start)) = (timers.weekly_gpu_hours, f.session_start) {
            out.push(f.clock(
                ClockKind::WeeklyQuota,
                start + Duration::hours(i64::from(hours)),
                Confidence::Conservative,
                format!("{hours} GPU-hours a week: this session alone uses it up then (earlier sessions this week count too)"),
            ));
        }
    }
    if let Some((what, left)) = f.time_to_full {
        out.push(f.clock(
            ClockKind::DiskFull,
            f.now + left,
            Confidence::Estimate,
            format!("{what} full at the current growth rate: writes (checkpoints, logs) fail then"),
        ));
    }
    if let (Some(balance), true) = (f.balance, f.fleet_burn_per_hour > 0.0) {
        let hours = balance / f.fleet_burn_per_hour;
        out.push(f.clock(
            ClockKind::BalanceRunway,
            f.now + Duration::seconds((hours * 3600.0).min(1e9) as i64),
            Confidence::Estimate,
            format!(
                "balance {balance:.2} {} lasts {hours:.1} h at the fleet's {:.2}/h: at zero, providers stop boxes and may delete their data",
                f.currency(),
                f.fleet_burn_per_hour
            ),
        ));
    }
    if let (Some(mtbi), Some(write), Some(age)) = (
        f.billing.mtbi_hours,
        f.billing.ckpt_write_secs,
        f.checkpoint_age,
    ) {
        let optimum = (2.0 * mtbi * 3600.0 * write).sqrt();
        let due = f.now - age + Duration::seconds(optimum as i64);
        out.push(f.clock(
            ClockKind::CheckpointInterval,
            due,
            Confidence::Estimate,
            format!(
                "Young/Daly: with interruptions every {mtbi:.0} h and {write:.0} s per checkpoint, checkpoint every {:.0} min; the last is {:.0} min old",
                optimum / 60.0,
                age.num_seconds() as f64 / 60.0
            ),
        ));
    }
    out.sort_by_key(|c| c.remaining_secs.unwrap_or(i64::MAX));
    out
}

/// How urgent a clock is, as a word the views show next to its colour.
pub fn urgency(clock: &Clock) -> &'static str {
    match clock.remaining_secs {
        Some(s) if s <= 0 => "FIRED",
        Some(s) if s < 3600 => "SOON",
        Some(s) if s < 24 * 3600 => "today",
        Some(_) => "later",
        None => "accruing",
    }
}

#[cfg(test)]
mod tests;
