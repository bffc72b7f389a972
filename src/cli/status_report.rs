//! The `status --json` document: a stable shape for scripts, documented in README. Unknown
//! values are `null`, never a made-up 0.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::clocks::{Clock, CostReport};
use crate::fleet::{FleetState, HostState};
use crate::probe::sample::FileStat;
use crate::probe::{GpuProcess, GpuSample};
use crate::queue::QueueStatus;
use crate::readings::{GpuAvailability, HostHistory};
use crate::runtime::once::Judged;
use crate::signals::{FillOutlook, RunState, Signal};
use crate::transport::LinkState;

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub taken_at: DateTime<Utc>,
    /// How long the account's balance lasts at the fleet's burn; null without a `balance` or
    /// while nothing bills. The fleet's, so said once, as the dashboard's header says it.
    pub runway: Option<Runway>,
    pub hosts: Vec<HostStatus>,
    /// Each `[[slurm]]` cluster's watched jobs, read with one squeue through its login node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<crate::cluster::ClusterReading>,
}

#[derive(Debug, Serialize)]
pub struct Runway {
    pub balance: f64,
    pub burn_per_hour: f64,
    pub remaining_secs: i64,
}

impl StatusReport {
    /// The report of a fleet judged from one probe: each host as the runtime judged it.
    pub fn of(judged: &Judged, clusters: Vec<crate::cluster::ClusterReading>) -> StatusReport {
        let (state, now) = (&judged.state, judged.taken_at);
        let mut hosts: Vec<HostStatus> = state
            .hosts
            .iter()
            .zip(&judged.errors)
            .map(|(h, errors)| HostStatus::of(h, state, errors.clone(), now))
            .collect();
        for u in &judged.unread {
            if let Some(status) = hosts.iter_mut().find(|s| s.name == u.host) {
                status.errors.push(format!(
                    "{}: probe section qfile: queue file {} not read: {}{}",
                    u.host,
                    crate::sanitize::line(&u.file, 200),
                    crate::sanitize::line(&u.why, 300),
                    if u.remembered {
                        "; its cells are as last read"
                    } else {
                        ""
                    }
                ));
            }
        }
        StatusReport {
            taken_at: now,
            runway: state
                .balance
                .zip(state.runway_hours())
                .map(|(balance, hours)| Runway {
                    balance,
                    burn_per_hour: state.burn_per_hour(),
                    remaining_secs: (hours * 3600.0).min(1e12) as i64,
                }),
            hosts,
            clusters,
        }
    }
}

impl HostStatus {
    fn of(h: &HostState, state: &FleetState, errors: Vec<String>, now: DateTime<Utc>) -> Self {
        let latest = h.history.latest_host();
        let queue = state.queue_summary(&h.config.name).and_then(|summary| {
            let tracker = h.queue.as_ref()?;
            Some(crate::fleet::queues::status(
                summary,
                tracker.facts.as_ref()?,
                tracker.samples(),
                now,
            ))
        });
        HostStatus {
            name: h.config.name.clone(),
            profile: h.config.profile.clone(),
            link: link_report(&h.link),
            run: h.run.clone(),
            uptime_secs: latest
                .and_then(|r| r.sample.uptime.as_ref())
                .map(|u| u.up.as_secs_f64()),
            boot_id: latest.and_then(|r| r.sample.boot_id.clone()),
            load: latest.and_then(|r| r.sample.load),
            memory: latest.and_then(|r| r.sample.memory),
            cpus: latest.and_then(|r| r.sample.cpus),
            gpu_state: h.gpu.clone(),
            gpus: gpu_reports(&h.history),
            mounts: mount_reports(h),
            log: latest
                .and_then(|r| r.sample.log.as_ref())
                .map(|s| FileReport::of(s, h.config.log.as_deref(), now)),
            log_tail: latest.map_or_else(Vec::new, |r| r.sample.log_tail.clone()),
            checkpoint: latest
                .and_then(|r| r.sample.checkpoint.as_ref())
                .map(|s| FileReport::of(s, None, now)),
            signals: h.signals.clone(),
            clocks: h.clocks.clone(),
            cost: h.cost(state.profile(&h.config.profile)),
            provider: h.provider.clone(),
            queue,
            errors,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct HostStatus {
    pub name: String,
    pub profile: String,
    pub link: LinkReport,
    pub run: RunState,
    pub uptime_secs: Option<f64>,
    pub boot_id: Option<String>,
    /// The box's load average (`/proc/loadavg`): a data loader starving the GPU shows as low
    /// GPU use beside high load.
    pub load: Option<crate::probe::LoadAvg>,
    /// The box's RAM and swap (`/proc/meminfo`).
    pub memory: Option<crate::probe::MemInfo>,
    /// CPUs online (`/sys/devices/system/cpu/online`): the load average's scale, so load 7.9
    /// reads as a full 8-CPU box.
    pub cpus: Option<u32>,
    pub gpu_state: GpuAvailability,
    pub gpus: Vec<GpuReport>,
    pub mounts: Vec<MountReport>,
    /// The run's log (`log`): its size and age; null where none is set or it was not read.
    pub log: Option<FileReport>,
    /// The log's last lines as the box wrote them (escaped in the JSON, never cut).
    pub log_tail: Vec<String>,
    /// The newest file in `ckpt_dir`; null where none is set, read or found.
    pub checkpoint: Option<FileReport>,
    pub signals: Vec<Signal>,
    /// Danger clocks, nearest first.
    pub clocks: Vec<Clock>,
    /// Null until the box has been seen up once.
    pub cost: Option<CostReport>,
    /// What the provider's CLI said (vast.ai, RunPod); null where none is asked.
    pub provider: Option<crate::provider::ProviderReport>,
    /// Null when the host has no queue configured, or its queue could not be read.
    pub queue: Option<QueueStatus>,
    /// Probes that could not be read, each naming the host and the probe.
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct FileReport {
    pub path: Option<String>,
    pub size_bytes: u64,
    pub modified: DateTime<Utc>,
    /// Seconds since it was written, at `taken_at`.
    pub age_secs: i64,
}

impl FileReport {
    pub fn of(stat: &FileStat, path: Option<&str>, now: DateTime<Utc>) -> Self {
        FileReport {
            path: stat.path.clone().or_else(|| path.map(String::from)),
            size_bytes: stat.size_bytes,
            modified: stat.modified,
            age_secs: (now - stat.modified).num_seconds(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct LinkReport {
    pub state: &'static str,
    /// The state as a value, for what acts on it (the exit status); `state` is its word.
    #[serde(skip)]
    pub kind: crate::transport::LinkKind,
    pub since: Option<DateTime<Utc>>,
    pub rtt_ms: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct GpuReport {
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub util_pct: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub sm_clock_max_mhz: Option<u32>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub mem_used_mib: Option<u64>,
    pub mem_total_mib: Option<u64>,
    pub temp_c: Option<u32>,
    pub pstate: Option<String>,
    /// Active clock event reasons by name; null when the driver did not report them.
    pub throttle: Option<Vec<&'static str>>,
    pub processes: Vec<ProcessReport>,
}

#[derive(Debug, Serialize)]
pub struct ProcessReport {
    pub pid: u32,
    pub name: Option<String>,
    pub used_mib: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct MountReport {
    pub path: String,
    pub filesystem: String,
    pub bytes_used: Option<u64>,
    pub bytes_total: Option<u64>,
    pub bytes_avail: Option<u64>,
    pub inodes_used: Option<u64>,
    pub inodes_total: Option<u64>,
    /// When it fills, from the readings this run of rigwatch has (one, for `status`).
    pub fill: FillOutlook,
}

pub fn link_report(state: &LinkState) -> LinkReport {
    let (since, error) = match state {
        LinkState::Connecting { .. } => (None, None),
        LinkState::Up { since, .. } => (Some(*since), None),
        LinkState::Degraded { since, reason, .. } => (Some(*since), Some(reason.clone())),
        LinkState::Down { since, reason, .. }
        | LinkState::AuthRefused { since, reason }
        | LinkState::HostkeyRefused { since, reason } => (Some(*since), Some(reason.clone())),
    };
    LinkReport {
        state: state.word(),
        kind: state.kind(),
        since,
        rtt_ms: state.rtt_ms().filter(|r| r.is_finite()),
        error,
    }
}

pub fn gpu_reports(history: &HostHistory) -> Vec<GpuReport> {
    let processes: Vec<GpuProcess> = history
        .latest_host()
        .and_then(|h| h.sample.gpu_processes.clone())
        .unwrap_or_default();
    let Some(latest) = history.latest_gpu() else {
        return Vec::new();
    };
    let only_one = latest.gpus.len() == 1;
    latest
        .gpus
        .iter()
        .map(|g| gpu_report(g, &processes, only_one))
        .collect()
}

fn gpu_report(g: &GpuSample, processes: &[GpuProcess], only_one: bool) -> GpuReport {
    GpuReport {
        index: g.index,
        uuid: g.uuid.clone(),
        name: g.name.clone(),
        util_pct: g.util_gpu_pct,
        sm_clock_mhz: g.sm_clock_mhz,
        sm_clock_max_mhz: g.sm_clock_max_mhz,
        power_w: g.power_draw_w,
        power_limit_w: g.power_limit_w,
        mem_used_mib: g.mem_used_mib,
        mem_total_mib: g.mem_total_mib,
        temp_c: g.temp_gpu_c,
        pstate: g.pstate.clone(),
        throttle: g
            .event_reasons
            .as_ref()
            .map(|r| r.active().iter().map(|a| a.label()).collect()),
        processes: processes
            .iter()
            // Without a uuid column a process can only be placed on a single-GPU box.
            .filter(|p| match (&p.gpu_uuid, &g.uuid) {
                (Some(pu), Some(gu)) => pu == gu,
                _ => only_one,
            })
            .map(|p| ProcessReport {
                pid: p.pid,
                name: p.name.clone(),
                used_mib: p.used_mib,
            })
            .collect(),
    }
}

/// Each mount of the latest reading, with when it fills as the runtime judged it.
fn mount_reports(h: &HostState) -> Vec<MountReport> {
    let Some(latest) = h.history.latest_host() else {
        return Vec::new();
    };
    latest
        .sample
        .mounts
        .iter()
        .map(|m| MountReport {
            fill: h
                .fill
                .iter()
                .find(|(mount, _)| *mount == m.mount)
                .map(|(_, f)| f.clone())
                .unwrap_or(FillOutlook::TooLittleHistory {
                    span_secs: 0,
                    samples: 0,
                }),
            path: m.mount.clone(),
            filesystem: m.filesystem.clone(),
            bytes_used: m.bytes.as_ref().and_then(|b| b.used_bytes),
            bytes_total: m.bytes.as_ref().and_then(|b| b.total_bytes),
            bytes_avail: m.bytes.as_ref().and_then(|b| b.avail_bytes),
            inodes_used: m.inodes.as_ref().and_then(|i| i.used),
            inodes_total: m.inodes.as_ref().and_then(|i| i.total),
        })
        .collect()
}
