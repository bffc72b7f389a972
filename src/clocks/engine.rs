//! Danger clocks: countdowns to what costs data or money, and what keeps accruing. A pure
//! function of the platform profile, the host's billing, what was observed and `now`.
//!
//! Past 400 lines: every clock kind from the same facts, side by side, so their bands and
//! words stay alike.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::Profile;
use super::rates::{RateSource, rates};
use crate::config::Billing;
use crate::probe::SlurmJob;
use crate::provider::{InstanceState, ProviderState};
use crate::signals::Severity;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
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
    Walltime,
    LifetimeEnd,
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

impl Confidence {
    pub fn word(self) -> &'static str {
        match self {
            Confidence::Exact => "exact",
            Confidence::Conservative => "conservative",
            Confidence::Estimate => "estimate",
        }
    }
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
    pub time_to_full: Option<(&'static str, Duration, crate::signals::FillConfidence)>,
    pub checkpoint_age: Option<Duration>,
    /// The whole fleet's burn rate and the account balance, for the runway.
    pub fleet_burn_per_hour: f64,
    pub balance: Option<f64>,
    /// What the provider's CLI last said about the box, where it answered.
    pub provider: Option<&'a ProviderState>,
    /// The Slurm job and when squeue was read.
    pub slurm: Option<(&'a SlurmJob, DateTime<Utc>)>,
    /// Session time in the last 7 days, every session rigwatch saw (the current one included),
    /// for a weekly quota.
    pub week_used: Option<Duration>,
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

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

pub fn clocks(f: &ClockFacts<'_>) -> Vec<Clock> {
    let mut out = Vec::new();
    let name = f.profile.map_or("the provider", |p| p.title.as_str());
    if !f.link_up {
        out_of_sight(f, name, &mut out);
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
        if let Some(hours) = timers.weekly_gpu_hours {
            weekly_quota(f, hours, &mut out);
        }
    }
    if let Some((job, read_at)) = f.slurm {
        walltime(f, job, read_at, &mut out);
    }
    // Past its end date the provider's own state says what happened; a date it let pass is
    // no countdown.
    if let Some(p) = f.provider {
        let ahead = p.ends_at.filter(|end| *end > f.now);
        if let (Some(end), false) = (ahead, p.state == InstanceState::Destroyed) {
            out.push(f.clock(
                ClockKind::LifetimeEnd,
                end,
                Confidence::Exact,
                format!(
                    "{name} stops this rental at its host's lifetime end ({}): the run stops \
                     and the disk keeps billing; pull results or move the run before then",
                    when(end)
                ),
            ));
        }
    }
    if let Some((what, left, confidence)) = f.time_to_full {
        out.push(f.clock(
            ClockKind::DiskFull,
            f.now + left,
            Confidence::Estimate,
            format!(
                "{what} full at the current growth rate ({} confidence): writes \
                 (checkpoints, logs) fail then",
                confidence.word()
            ),
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

/// A box rigwatch cannot reach: stopped (its disk still bills, a release timer may run) or
/// running where rigwatch cannot see it. The provider's word decides where it answered;
/// without it the box counts as stopped since last seen, the conservative reading.
fn out_of_sight(f: &ClockFacts<'_>, name: &str, out: &mut Vec<Clock>) {
    let Some(seen) = f.last_seen_up else { return };
    let r = rates(f.profile, f.billing, f.provider);
    let provider_state = f.provider.map(|p| &p.state);
    if matches!(provider_state, Some(InstanceState::Destroyed)) {
        return;
    }
    if let Some(InstanceState::Running | InstanceState::Starting) = provider_state {
        let hours = (f.now - seen).num_seconds().max(0) as f64 / 3600.0;
        out.push(Clock {
            kind: ClockKind::StoppedBilling,
            deadline: None,
            remaining_secs: None,
            accrued: r.running.map(|rate| rate * hours),
            confidence: Confidence::Exact,
            message: format!(
                "unreachable for {hours:.1} h but {name} says it is running: it bills {} while rigwatch cannot see it",
                per_hour(r.running, f.currency())
            ),
        });
        return;
    }
    // Only a stop the provider names confirms the guess; a state it spells in a way this
    // version does not know leaves it a guess.
    let stopped_by_provider = f
        .provider
        .filter(|p| matches!(p.state, InstanceState::Stopped | InstanceState::Exited));
    let since = stopped_by_provider
        .and_then(|p| p.state_since)
        .unwrap_or(seen);
    let exact_state = stopped_by_provider.is_some_and(|p| p.state_since.is_some());
    if let Some(days) = f
        .profile
        .and_then(|p| p.timers.auto_release_days_after_stop)
    {
        let why = if exact_state {
            format!("stopped since {} ({name} says)", when(since))
        } else {
            format!(
                "out of sight since {} (counted as stopped since last seen)",
                when(since)
            )
        };
        out.push(f.clock(
            ClockKind::AutoRelease,
            since + Duration::days(i64::from(days)),
            if exact_state {
                Confidence::Exact
            } else {
                Confidence::Conservative
            },
            format!(
                "{why}: {name} releases a box {days} days after stop, deleting its disks. \
                 Start it or pull its results before then"
            ),
        ));
    }
    let hours = (f.now - since).num_seconds().max(0) as f64 / 3600.0;
    let bills = f
        .profile
        .and_then(|p| p.stop.bills.clone())
        .unwrap_or_else(|| "unknown".into());
    let state_words = match stopped_by_provider {
        Some(p) => format!("{name} says it is {}", p.state.word()),
        None => format!("unreachable for {hours:.1} h"),
    };
    out.push(Clock {
        kind: ClockKind::StoppedBilling,
        deadline: None,
        remaining_secs: None,
        accrued: r.stopped.map(|rate| rate * hours),
        confidence: if stopped_by_provider.is_some() && r.stopped_source == RateSource::Provider {
            Confidence::Exact
        } else {
            Confidence::Conservative
        },
        message: match r.stopped {
            Some(rate) => format!(
                "{state_words}: stopped it still bills {bills}; about {:.2} {} so far at {}",
                rate * hours,
                f.currency(),
                per_hour(Some(rate), f.currency())
            ),
            None => format!(
                "{state_words}: stopped it still bills {bills} (set stopped_price_per_hour to count it)"
            ),
        },
    });
}

fn per_hour(rate: Option<f64>, currency: &str) -> String {
    rate.map_or("an unknown amount per hour".into(), |r| {
        format!("{r:.2} {currency}/h")
    })
}

/// Quota left = the weekly hours less what the last 7 days used. rigwatch counts the sessions
/// it saw; one it never saw (another machine, before install) makes the real end earlier.
fn weekly_quota(f: &ClockFacts<'_>, hours: u32, out: &mut Vec<Clock>) {
    let used = match (f.week_used, f.session_start) {
        (Some(used), _) => used,
        (None, Some(start)) => f.now - start,
        (None, None) => return,
    };
    let left = Duration::hours(i64::from(hours)) - used;
    out.push(f.clock(
        ClockKind::WeeklyQuota,
        f.now + left,
        Confidence::Conservative,
        format!(
            "{hours} GPU-hours a week: {:.1} h used in the last 7 days by the sessions rigwatch saw; \
             sessions it did not see count too",
            used.num_seconds().max(0) as f64 / 3600.0
        ),
    ));
}

/// Slurm kills the job at its walltime; a checkpoint older than the time left means the next
/// one may not land before the kill.
fn walltime(f: &ClockFacts<'_>, job: &SlurmJob, read_at: DateTime<Utc>, out: &mut Vec<Clock>) {
    out.extend(walltime_clock(job, read_at, f.checkpoint_age, f.now));
}

/// A Slurm job's walltime as a danger clock at `now`, from squeue as read at `read_at`: for a
/// box inside a job and for a cluster's job alike. None while no time left is known.
pub fn walltime_clock(
    job: &SlurmJob,
    read_at: DateTime<Utc>,
    checkpoint_age: Option<Duration>,
    now: DateTime<Utc>,
) -> Option<Clock> {
    let left = job.left.and_then(|l| Duration::from_std(l).ok())?;
    let deadline = read_at + left;
    let remaining = deadline - now;
    let risk = match checkpoint_age {
        Some(age) if age > remaining => format!(
            "; the last checkpoint is {:.0} min old, older than the {:.0} min left: \
             the next may not land before the kill, checkpoint now",
            age.num_seconds() as f64 / 60.0,
            remaining.num_seconds().max(0) as f64 / 60.0
        ),
        Some(age) => format!(
            "; the last checkpoint is {:.0} min old",
            age.num_seconds() as f64 / 60.0
        ),
        None => String::new(),
    };
    Some(Clock {
        kind: ClockKind::Walltime,
        deadline: Some(deadline),
        remaining_secs: Some(remaining.num_seconds()),
        accrued: None,
        confidence: Confidence::Exact,
        message: format!(
            "job {} ({}) reaches its walltime in {}: SIGTERM, then SIGKILL after KillWait{risk}",
            job.id,
            job.name.as_deref().unwrap_or(&job.state),
            crate::signals::minutes(remaining)
        ),
    })
}

/// How near a clock is: the one set of bands the views colour by, the dashboard's events cross
/// and the alerts stage by. Ordered from least to most urgent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Urgency {
    /// A clock with no deadline: money accruing.
    Accruing,
    Later,
    /// Within a day.
    Today,
    /// Within the hour.
    Hour,
    /// Within ten minutes.
    TenMinutes,
    Fired,
}

impl Urgency {
    pub fn of(clock: &Clock) -> Urgency {
        Urgency::of_secs(clock.remaining_secs)
    }

    pub fn of_secs(left: Option<i64>) -> Urgency {
        match left {
            None => Urgency::Accruing,
            Some(s) if s <= 0 => Urgency::Fired,
            Some(s) if s <= 600 => Urgency::TenMinutes,
            Some(s) if s <= 3600 => Urgency::Hour,
            Some(s) if s <= 24 * 3600 => Urgency::Today,
            Some(_) => Urgency::Later,
        }
    }

    /// The word the views show next to the clock's colour.
    pub fn word(self) -> &'static str {
        match self {
            Urgency::Fired => "FIRED",
            Urgency::TenMinutes | Urgency::Hour => "SOON",
            Urgency::Today => "today",
            Urgency::Later => "later",
            Urgency::Accruing => "accruing",
        }
    }

    /// How loud a clock in this band is; None below a day.
    pub fn severity(self) -> Option<Severity> {
        match self {
            Urgency::Fired | Urgency::TenMinutes | Urgency::Hour => Some(Severity::Crit),
            Urgency::Today => Some(Severity::Warn),
            Urgency::Later | Urgency::Accruing => None,
        }
    }

    /// The alert's stage: a clock alerts again as it nears (a day, an hour, ten minutes).
    pub fn stage(self) -> Option<&'static str> {
        match self {
            Urgency::Today => Some("24h"),
            Urgency::Hour => Some("1h"),
            Urgency::TenMinutes | Urgency::Fired => Some("10m"),
            Urgency::Later | Urgency::Accruing => None,
        }
    }
}

#[cfg(test)]
mod tests;
