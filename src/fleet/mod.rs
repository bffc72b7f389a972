//! Fleet state: per-host ring buffers of what the probes saw, each reading stamped with the
//! local time it arrived. Pure data; the monitor and `status` fill it, signals and views read it.

use std::collections::VecDeque;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

mod observation;

pub use observation::{Observation, Update};

use crate::probe::GpuSample;
use crate::probe::sample::HostSample;

/// Readings kept per host: an hour at a 2 s period, so the 30-minute idle window fits twice.
pub const HISTORY_LEN: usize = 1800;

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

#[derive(Debug, Clone)]
pub struct HostHistory {
    gpu: VecDeque<GpuReading>,
    host: VecDeque<HostReading>,
    capacity: usize,
}

impl Default for HostHistory {
    fn default() -> Self {
        HostHistory::with_capacity(HISTORY_LEN)
    }
}

impl HostHistory {
    pub fn with_capacity(capacity: usize) -> Self {
        HostHistory {
            gpu: VecDeque::new(),
            host: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub fn push_gpu(&mut self, reading: GpuReading) {
        if self.gpu.len() == self.capacity {
            self.gpu.pop_front();
        }
        self.gpu.push_back(reading);
    }

    pub fn push_host(&mut self, reading: HostReading) {
        if self.host.len() == self.capacity {
            self.host.pop_front();
        }
        self.host.push_back(reading);
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

    pub fn gpu(&self) -> &VecDeque<GpuReading> {
        &self.gpu
    }

    pub fn host(&self) -> &VecDeque<HostReading> {
        &self.host
    }

    pub fn latest_gpu(&self) -> Option<&GpuReading> {
        self.gpu.back()
    }

    pub fn latest_host(&self) -> Option<&HostReading> {
        self.host.back()
    }

    /// The boot mark to compare the latest reading with: the newest reading from another boot
    /// while one is still in the history (so a reboot stays reported for as long), else the
    /// reading just before the latest.
    pub fn previous_boot(&self) -> Option<BootMark> {
        let latest = self.host.back()?;
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
mod tests {
    use super::*;

    #[test]
    fn ring_buffers_drop_the_oldest_and_windows_filter_by_time() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let mut h = HostHistory::with_capacity(3);
        for i in 0..5 {
            h.push_gpu(GpuReading {
                at: t0 + Duration::seconds(i),
                gpus: Vec::new(),
            });
        }
        assert_eq!(h.gpu().len(), 3);
        assert_eq!(h.gpu()[0].at, t0 + Duration::seconds(2));
        let recent = h.gpu_since(t0 + Duration::seconds(4), Duration::seconds(1));
        assert_eq!(recent.len(), 2);
    }
}
