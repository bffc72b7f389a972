//! The GPU runs of a `[[kaggle]]` member that rigwatch saw, remembered between runs, for a
//! lower bound of the weekly GPU quota where the account reports none (`kaggle quota` is 2.x's):
//! each commit seen running on a GPU counts from its start (`lastRunTime`) to the last time it
//! was seen running. Runs rigwatch never saw count on Kaggle too, so the hours used are at
//! least this, and the figure says so. Pure: readings and `now` in.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::kaggle::KernelRead;
use crate::probe::kaggle::GpuQuota;

/// Kaggle's weekly GPU hours (the `kaggle` profile's `weekly_gpu_hours`).
pub const WEEKLY_GPU_HOURS: f64 = 30.0;
/// Runs at most this many per kernel are kept (a week of commits).
const RUNS_KEPT: usize = 200;

/// One commit seen running on a GPU: from its start to the last time it was seen running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeenRun {
    pub start: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

/// Each kernel's GPU runs seen in the last week, by `owner/slug`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeenRuns {
    pub kernels: BTreeMap<String, Vec<SeenRun>>,
}

impl SeenRuns {
    /// What one read saw: each kernel running on a GPU (or on an accelerator not read) with a
    /// start extends its run to `now`; runs older than a week go.
    pub fn record(&mut self, kernels: &[KernelRead], now: DateTime<Utc>) {
        for k in kernels {
            let running = k.status.as_ref().is_ok_and(|s| s.word == "RUNNING");
            let cpu = k.accelerator.as_ref().is_some_and(|a| !a.gpu && !a.tpu);
            let (true, false, Some(start)) = (running, cpu, k.last_run) else {
                continue;
            };
            let runs = self.kernels.entry(k.kernel.clone()).or_default();
            match runs.iter_mut().find(|r| r.start == start) {
                Some(run) => run.until = run.until.max(now),
                None => runs.push(SeenRun { start, until: now }),
            }
            if runs.len() > RUNS_KEPT {
                runs.remove(0);
            }
        }
        let week = now - Duration::days(7);
        for runs in self.kernels.values_mut() {
            runs.retain(|r| r.until > week);
        }
        self.kernels.retain(|_, runs| !runs.is_empty());
    }

    /// GPU hours seen in the seven days before `now`.
    pub fn hours(&self, now: DateTime<Utc>) -> f64 {
        let week = now - Duration::days(7);
        let secs: i64 = self
            .kernels
            .values()
            .flatten()
            .map(|r| (r.until.min(now) - r.start.max(week)).num_seconds().max(0))
            .sum();
        secs as f64 / 3600.0
    }

    /// The quota as far as rigwatch's own count goes: a lower bound of the hours used.
    pub fn lower_bound(&self, now: DateTime<Utc>) -> GpuQuota {
        let used = self.hours(now);
        GpuQuota {
            used_hours: used,
            remaining_hours: (WEEKLY_GPU_HOURS - used).max(0.0),
            total_hours: WEEKLY_GPU_HOURS,
            refresh_at: None,
            lower_bound: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::probe::kaggle::{Accelerator, KernelStatus};

    fn t(h: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0)
            .single()
            .expect("time")
            + Duration::hours(h)
    }

    fn read(kernel: &str, word: &str, start: i64, cpu: bool) -> KernelRead {
        KernelRead {
            kernel: kernel.into(),
            status: Ok(KernelStatus {
                word: word.into(),
                failure: None,
            }),
            last_run: Some(t(start)),
            accelerator: cpu.then(Accelerator::default),
            outputs: None,
        }
    }

    #[test]
    fn gpu_runs_seen_count_from_their_start_to_the_last_look_and_age_out() {
        let mut seen = SeenRuns::default();
        seen.record(&[read("a/train", "RUNNING", 0, false)], t(1));
        seen.record(&[read("a/train", "RUNNING", 0, false)], t(3));
        // Ended: not seen running again; a second run of it, and a CPU run that does not count.
        seen.record(
            &[
                read("a/train", "RUNNING", 10, false),
                read("a/cpu-only", "RUNNING", 10, true),
            ],
            t(12),
        );
        seen.record(&[read("a/train", "COMPLETE", 10, false)], t(14));
        assert_eq!(seen.hours(t(14)), 5.0);
        let q = seen.lower_bound(t(14));
        assert!(q.lower_bound);
        assert_eq!((q.used_hours, q.remaining_hours), (5.0, 25.0));
        // A week on, the first run is partly out of the window; then gone.
        assert_eq!(seen.hours(t(24 * 7 + 2)), 3.0);
        seen.record(&[], t(24 * 7 + 13));
        assert!(seen.kernels.is_empty(), "{seen:?}");
    }
}
