//! Fleet state: per-host ring buffers of what the probes saw, each reading stamped with the
//! local time it arrived. Pure data; the monitor and `status` fill it, signals and views read it.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

mod observation;
mod tiered;

pub use observation::{Observation, Update};
pub use tiered::{Stamped, Tiered};

use crate::probe::GpuSample;
use crate::probe::sample::HostSample;

/// GPU readings kept at full rate (5 minutes at a 2 s period: the sparklines), then one per
/// 30 s for two hours (the idle window fits four times).
pub const GPU_RECENT: usize = 150;
pub const GPU_OLDER: usize = 240;
pub const GPU_SPACING_SECS: i64 = 30;
/// Probe-loop readings are larger (mounts, processes, log tail) and change slowly: a minute at
/// full rate, then one a minute for two hours.
pub const HOST_RECENT: usize = 30;
pub const HOST_OLDER: usize = 120;
pub const HOST_SPACING_SECS: i64 = 60;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuReading {
    pub at: DateTime<Utc>,
    pub gpus: Vec<GpuSample>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostReading {
    pub at: DateTime<Utc>,
    pub sample: HostSample,
}

/// What identifies one boot of a box: a changed boot id or an uptime that went backwards means
/// it rebooted in between.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct BootMark {
    pub at: DateTime<Utc>,
    pub boot_id: Option<String>,
    pub uptime_secs: Option<f64>,
}

impl BootMark {
    pub fn of(reading: &HostReading) -> BootMark {
        BootMark {
            at: reading.at,
            boot_id: reading.sample.boot_id.clone(),
            uptime_secs: reading.sample.uptime.as_ref().map(|u| u.up.as_secs_f64()),
        }
    }
}

/// Whether this box has GPUs as far as rigwatch can tell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "kebab-case")]
pub enum GpuAvailability {
    Unknown,
    Present,
    /// nvidia-smi is not installed: a box without GPUs.
    NoNvidiaSmi,
    /// nvidia-smi is there but failed; the message says how.
    Failing(String),
}

impl Stamped for GpuReading {
    fn at(&self) -> DateTime<Utc> {
        self.at
    }

    /// Older readings feed the idle and zombie windows, the sparklines and a limit looked up
    /// where the latest has none: numbers. The GPU's name, UUID and P-state (three strings a
    /// GPU, a third of an 8-GPU box's two hours) are read from recent readings only.
    fn thinned(mut self) -> Self {
        for g in &mut self.gpus {
            g.uuid = None;
            g.name = None;
            g.pstate = None;
        }
        self
    }
}

impl Stamped for HostReading {
    fn at(&self) -> DateTime<Utc> {
        self.at
    }

    /// Older readings feed a disk's growth (mounts), the boot before a reboot (boot id, uptime)
    /// and when the run was last alive (tmux, run processes); the log tail, the processes
    /// holding VRAM (up to 256 KiB a batch), the kernel log's lines and the queue's text are
    /// read from the latest reading only.
    fn thinned(mut self) -> Self {
        let s = &mut self.sample;
        s.log_tail = Vec::new();
        s.gpu_processes = None;
        s.kernel_events = Vec::new();
        s.queue = None;
        self
    }
}

#[derive(Debug, Clone)]
pub struct HostHistory {
    gpu: Tiered<GpuReading>,
    host: Tiered<HostReading>,
}

impl Default for HostHistory {
    fn default() -> Self {
        HostHistory {
            gpu: Tiered::new(GPU_RECENT, GPU_OLDER, Duration::seconds(GPU_SPACING_SECS)),
            host: Tiered::new(
                HOST_RECENT,
                HOST_OLDER,
                Duration::seconds(HOST_SPACING_SECS),
            ),
        }
    }
}

impl HostHistory {
    /// A history of `recent` readings of each kind and no thinned tail (`status`, tests).
    pub fn with_capacity(recent: usize, older: usize) -> Self {
        let spacing = Duration::seconds(GPU_SPACING_SECS);
        HostHistory {
            gpu: Tiered::new(recent, older, spacing),
            host: Tiered::new(recent, older, spacing),
        }
    }

    pub fn push_gpu(&mut self, reading: GpuReading) {
        self.gpu.push(reading);
    }

    pub fn push_host(&mut self, reading: HostReading) {
        self.host.push(reading);
    }

    /// Adds whichever readings a probe produced.
    pub fn extend(&mut self, gpu: Option<GpuReading>, host: Option<HostReading>) {
        if let Some(g) = gpu {
            self.push_gpu(g);
        }
        if let Some(h) = host {
            self.push_host(h);
        }
    }

    /// GPU readings, oldest first.
    pub fn gpu(&self) -> impl DoubleEndedIterator<Item = &GpuReading> + Clone {
        self.gpu.iter()
    }

    /// Probe-loop readings, oldest first.
    pub fn host(&self) -> impl DoubleEndedIterator<Item = &HostReading> + Clone {
        self.host.iter()
    }

    pub fn latest_gpu(&self) -> Option<&GpuReading> {
        self.gpu.last()
    }

    pub fn latest_host(&self) -> Option<&HostReading> {
        self.host.last()
    }

    /// The boot mark to compare the latest reading with: the newest reading from another boot
    /// while one is still in the history (so a reboot stays reported for as long), else the
    /// reading just before the latest.
    pub fn previous_boot(&self) -> Option<BootMark> {
        let latest = self.host.last()?;
        let older = self.host.iter().rev().skip(1);
        let other_boot = older.clone().find(
            |r| matches!((&r.sample.boot_id, &latest.sample.boot_id), (Some(a), Some(b)) if a != b),
        );
        other_boot
            .or_else(|| older.clone().next())
            .map(BootMark::of)
    }

    /// GPU readings newer than `now - window`, oldest first.
    pub fn gpu_since(&self, now: DateTime<Utc>, window: Duration) -> Vec<&GpuReading> {
        self.gpu.iter().filter(|r| r.at >= now - window).collect()
    }

    pub fn host_since(&self, now: DateTime<Utc>, window: Duration) -> Vec<&HostReading> {
        self.host.iter().filter(|r| r.at >= now - window).collect()
    }
}

#[cfg(test)]
mod thinning_tests {
    use super::*;

    /// Two hours of history for a fleet must stay small: a reading that leaves the full-rate
    /// tier keeps what the judgements read from older readings and drops the rest.
    #[test]
    fn an_older_host_reading_keeps_the_shape_and_drops_the_detail() {
        let start = DateTime::<Utc>::UNIX_EPOCH;
        let mut h = HostHistory::default();
        for i in 0..=HOST_RECENT as i64 {
            let sample = HostSample {
                log_tail: vec!["x".repeat(4096)],
                gpu_processes: Some(Vec::new()),
                boot_id: Some("boot-1".into()),
                queue: Some(Default::default()),
                ..Default::default()
            };
            h.push_host(HostReading {
                at: start + Duration::seconds(2 * i),
                sample,
            });
        }
        let oldest = h.host().next().expect("a reading");
        assert_eq!(
            oldest.at, start,
            "the first reading moved to the thinned tier"
        );
        assert!(oldest.sample.log_tail.is_empty() && oldest.sample.gpu_processes.is_none());
        assert!(oldest.sample.queue.is_none());
        assert_eq!(oldest.sample.boot_id.as_deref(), Some("boot-1"));
        let latest = h.latest_host().expect("latest");
        assert_eq!(
            latest.sample.log_tail.len(),
            1,
            "the recent tier keeps everything"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_buffers_drop_the_oldest_and_windows_filter_by_time() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let mut h = HostHistory::with_capacity(3, 0);
        for i in 0..5 {
            h.push_gpu(GpuReading {
                at: t0 + Duration::seconds(i),
                gpus: Vec::new(),
            });
        }
        assert_eq!(h.gpu().count(), 3);
        assert_eq!(
            h.gpu().next().map(|r| r.at),
            Some(t0 + Duration::seconds(2))
        );
        let recent = h.gpu_since(t0 + Duration::seconds(4), Duration::seconds(1));
        assert_eq!(recent.len(), 2);
    }
}
