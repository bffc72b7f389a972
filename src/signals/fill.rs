//! When a disk fills, from a least-squares fit of usage over the recent readings, and only
//! from enough of them: two readings a minute apart once said "1306d22h", then "3d16h". With
//! too little history the answer is "too little history", said as such.

use chrono::Duration;
use serde::Serialize;

use super::disk::{Usage, bytes_usage, inode_usage};
use crate::probe::Mount;
use crate::readings::HostReading;

/// An estimate needs readings spanning at least this long...
pub const MIN_SPAN_MINUTES: i64 = 10;
/// ...and at least this many of them.
pub const MIN_SAMPLES: usize = 5;
/// A fit this good (R²) over at least HIGH_SPAN_MINUTES is called high confidence.
const HIGH_R2: f64 = 0.9;
const HIGH_SPAN_MINUTES: i64 = 20;
/// Farther off than this, an estimate says nothing an operator can act on.
const HORIZON_DAYS: i64 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FillConfidence {
    /// Steady growth over a long enough span.
    High,
    /// Enough history to estimate, but the growth is uneven or the span short.
    Low,
}

impl FillConfidence {
    pub fn word(self) -> &'static str {
        match self {
            FillConfidence::High => "high",
            FillConfidence::Low => "low",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum FillOutlook {
    /// Not enough readings to estimate: what there is.
    TooLittleHistory { span_secs: i64, samples: usize },
    /// Usage is flat or falling, or would take longer than the horizon to fill.
    NotFilling { span_secs: i64, samples: usize },
    Filling {
        /// "bytes" or "inodes", whichever runs out first.
        what: &'static str,
        left_secs: i64,
        confidence: FillConfidence,
        span_secs: i64,
        samples: usize,
    },
}

impl FillOutlook {
    /// What runs out and when, for a filling disk.
    pub fn filling(&self) -> Option<(&'static str, Duration, FillConfidence)> {
        match self {
            FillOutlook::Filling {
                what,
                left_secs,
                confidence,
                ..
            } => Some((what, Duration::seconds(*left_secs), *confidence)),
            _ => None,
        }
    }

    /// One phrase for views: "bytes full in ~3h10m (high confidence, 25m of data)".
    pub fn describe(&self) -> String {
        let data = |span: i64, samples: usize| {
            format!(
                "{} of data, {samples} readings",
                super::minutes(Duration::seconds(span))
            )
        };
        match self {
            FillOutlook::TooLittleHistory { span_secs, samples } => format!(
                "growth not known yet ({}; needs {MIN_SPAN_MINUTES}m and {MIN_SAMPLES})",
                data(*span_secs, *samples)
            ),
            FillOutlook::NotFilling { span_secs, samples } => {
                format!("not filling ({})", data(*span_secs, *samples))
            }
            FillOutlook::Filling {
                what,
                left_secs,
                confidence,
                span_secs,
                samples,
            } => format!(
                "{what} full in ~{} ({} confidence, {})",
                super::minutes(Duration::seconds(*left_secs)),
                confidence.word(),
                data(*span_secs, *samples)
            ),
        }
    }
}

/// The outlook for `mount` from `history` (oldest first): bytes and inodes each fitted, the
/// sooner to run out reported.
pub fn fill_outlook(history: &[&HostReading], mount: &str) -> FillOutlook {
    let points = |usage: fn(&Mount) -> Option<Usage>| -> Vec<(f64, Usage)> {
        let Some(first) = history.first() else {
            return Vec::new();
        };
        history
            .iter()
            .filter_map(|r| {
                let m = r.sample.mounts.iter().find(|m| m.mount == mount)?;
                let secs = (r.at - first.at).num_milliseconds() as f64 / 1000.0;
                Some((secs, usage(m)?))
            })
            .collect()
    };
    let series = [
        ("bytes", points(bytes_usage)),
        ("inodes", points(inode_usage)),
    ];
    let (span_secs, samples) = series
        .iter()
        .map(|(_, p)| {
            (
                p.last().zip(p.first()).map_or(0.0, |(l, f)| l.0 - f.0),
                p.len(),
            )
        })
        .max_by_key(|(_, n)| *n)
        .map_or((0, 0), |(s, n)| (s as i64, n));
    if span_secs < MIN_SPAN_MINUTES * 60 || samples < MIN_SAMPLES {
        return FillOutlook::TooLittleHistory { span_secs, samples };
    }
    let mut best: Option<FillOutlook> = None;
    for (what, points) in &series {
        let Some((slope, r2)) = fit(points) else {
            continue;
        };
        let Some(&(_, last)) = points.last() else {
            continue;
        };
        if slope <= 0.0 {
            continue;
        }
        let left = last.total.saturating_sub(last.used) as f64 / slope;
        if left > (HORIZON_DAYS * 86400) as f64 {
            continue;
        }
        let confidence = if r2 >= HIGH_R2 && span_secs >= HIGH_SPAN_MINUTES * 60 {
            FillConfidence::High
        } else {
            FillConfidence::Low
        };
        let candidate = FillOutlook::Filling {
            what,
            left_secs: left as i64,
            confidence,
            span_secs,
            samples,
        };
        let sooner = match (&best, &candidate) {
            (Some(b), c) => c.filling().map(|x| x.1) < b.filling().map(|x| x.1),
            (None, _) => true,
        };
        if sooner {
            best = Some(candidate);
        }
    }
    best.unwrap_or(FillOutlook::NotFilling { span_secs, samples })
}

/// Least-squares slope (units per second) of usage over time, and the fit's R². None for
/// fewer than two points or no spread in time.
fn fit(points: &[(f64, Usage)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    // Centred, so terabyte counts squared stay well inside f64's precision.
    let mean_t = points.iter().map(|(t, _)| t).sum::<f64>() / n;
    let mean_u = points.iter().map(|(_, u)| u.used as f64).sum::<f64>() / n;
    let (mut stt, mut stu, mut suu) = (0.0, 0.0, 0.0);
    for (t, u) in points {
        let (dt, du) = (t - mean_t, u.used as f64 - mean_u);
        stt += dt * dt;
        stu += dt * du;
        suu += du * du;
    }
    if stt == 0.0 {
        return None;
    }
    let slope = stu / stt;
    let r2 = if suu == 0.0 {
        0.0
    } else {
        (stu * stu) / (stt * suu)
    };
    Some((slope, r2))
}
