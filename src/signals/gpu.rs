//! GPU signals: zombie VRAM, power caps and throttling, idle boxes that keep billing.

use chrono::Duration;

use super::run::{RunState, minutes_f};
use super::{HostFacts, Severity, Signal, SignalKind, minutes};
use crate::probe::{ClockEventReason, GpuProcess, GpuSample};
use crate::readings::{GpuAvailability, GpuReading};

/// Utilisation at or below this is "doing nothing".
const IDLE_UTIL_PCT: u32 = 2;
/// VRAM above this is "held" (a CUDA context alone takes a few hundred MiB).
const HELD_MIB: u64 = 1024;
/// Power below this fraction of the cap is near idle (the zombie capture: 124 W of 700 W).
const IDLE_POWER_FRACTION: f64 = 0.3;
/// SM clock below this fraction of its max counts as held back.
const SLOW_CLOCK_FRACTION: f64 = 0.9;

fn is_zombie_shaped(g: &GpuSample) -> bool {
    let held = g.mem_used_mib.is_some_and(|m| m >= HELD_MIB);
    let idle = g.util_gpu_pct.is_some_and(|u| u <= IDLE_UTIL_PCT);
    let low_power = match (g.power_draw_w, g.power_limit_w) {
        (Some(draw), Some(limit)) if limit > 0.0 => draw < limit * IDLE_POWER_FRACTION,
        _ => true,
    };
    held && idle && low_power
}

/// A process nvidia-smi lists on GPU `g` (a row without a GPU's UUID could be on any).
fn on_gpu(p: &GpuProcess, g: &GpuSample) -> bool {
    p.gpu_uuid.is_none() || p.gpu_uuid == g.uuid
}

/// The positions of the GPUs in `latest` that hold VRAM and compute nothing.
pub fn zombie_gpus(latest: &[GpuSample]) -> Vec<usize> {
    (0..latest.len())
        .filter(|&i| is_zombie_shaped(&latest[i]))
        .collect()
}

/// The processes holding VRAM on GPUs that hold it and compute nothing in `latest`: what `K`
/// offers to end. Empty where nvidia-smi names none (a container rental lists the host's
/// processes, or none).
pub fn zombie_holders(latest: &[GpuSample], processes: &[GpuProcess]) -> Vec<GpuProcess> {
    let mut out: Vec<GpuProcess> = Vec::new();
    for g in latest.iter().filter(|g| is_zombie_shaped(g)) {
        for p in processes.iter().filter(|p| on_gpu(p, g)) {
            if !out.iter().any(|o| o.pid == p.pid) {
                out.push(p.clone());
            }
        }
    }
    out
}

fn is_idle(g: &GpuSample) -> bool {
    g.util_gpu_pct.is_some_and(|u| u <= IDLE_UTIL_PCT)
}

fn label(g: &GpuSample, position: usize) -> String {
    format!("GPU{}", g.index.map_or(position as u32, |i| i))
}

/// For how long, ending at the latest reading, `holds` was true of GPU `position` in every
/// reading; None when it does not hold now.
fn held_for(
    readings: &[&GpuReading],
    position: usize,
    holds: impl Fn(&GpuSample) -> bool,
) -> Option<Duration> {
    let latest = readings.last()?;
    if !latest.gpus.get(position).is_some_and(&holds) {
        return None;
    }
    let start = readings
        .iter()
        .rev()
        .take_while(|r| r.gpus.get(position).is_some_and(&holds))
        .last()
        .map_or(latest.at, |r| r.at);
    Some(latest.at - start)
}

pub fn gpu_signals(f: &HostFacts<'_>) -> Vec<Signal> {
    let mut out = Vec::new();
    match f.gpu {
        GpuAvailability::NoNvidiaSmi => {
            out.push(Signal::new(
                SignalKind::NoGpu,
                Severity::Info,
                "no GPUs: nvidia-smi is not installed on this box",
            ));
            return out;
        }
        GpuAvailability::Failing(why) => {
            out.push(Signal::new(
                SignalKind::ProbeError,
                Severity::Warn,
                format!("nvidia-smi is failing: {why}"),
            ));
        }
        _ => {}
    }
    let window = minutes_f(f.thresholds.zombie_minutes);
    let readings = f
        .history
        .gpu_since(f.now, window.max(Duration::minutes(1)) * 2);
    let Some(latest) = readings.last() else {
        return out;
    };
    let processes = f
        .history
        .latest_host()
        .and_then(|h| h.sample.gpu_processes.clone())
        .unwrap_or_default();
    for (position, g) in latest.gpus.iter().enumerate() {
        let name = label(g, position);
        if let Some(lasted) = held_for(&readings, position, is_zombie_shaped) {
            let holders: Vec<String> = processes
                .iter()
                .filter(|p| on_gpu(p, g))
                .map(|p| {
                    format!(
                        "pid {} {} ({} MiB)",
                        p.pid,
                        crate::sanitize::line(p.name.as_deref().unwrap_or("?"), 40),
                        p.used_mib.map_or("?".into(), |m| m.to_string())
                    )
                })
                .collect();
            // On container rentals nvidia-smi reports the host's PIDs, or none at all: the GPU's
            // own figures still show the memory held, so say where the holder is instead of
            // guessing one or claiming nothing holds it.
            // A cut list of processes names some holders, or none, and is neither all of them
            // nor proof that the holder is outside: said as not known (unjudged.rs says why).
            let who = if super::unjudged::is_cut(f, "apps") {
                "a holder rigwatch cannot name (the list of processes was cut)".to_string()
            } else if holders.is_empty() {
                "a process outside this container (nvidia-smi lists none here)".to_string()
            } else {
                holders.join(", ")
            };
            let gb = g.mem_used_mib.unwrap_or(0) as f64 / 1024.0;
            let (severity, span) = if lasted >= window {
                (Severity::Crit, format!("for {}", minutes(lasted)))
            } else if readings.len() <= 1 {
                (
                    Severity::Warn,
                    "in one reading; watch to confirm".to_string(),
                )
            } else {
                (Severity::Warn, format!("for {} so far", minutes(lasted)))
            };
            out.push(Signal::new(
                SignalKind::ZombieVram,
                severity,
                format!(
                    "{name}: {who} holds {gb:.1} GiB of VRAM and computes nothing (util {}%, {}) {span}. \
                     If the run is hung or orphaned, kill it and free the GPU",
                    g.util_gpu_pct.unwrap_or(0),
                    power_text(g)
                ),
            ));
        }
        if let Some(signal) = clock_signal(g, &name) {
            out.push(signal);
        }
    }
    out
}

fn power_text(g: &GpuSample) -> String {
    match (g.power_draw_w, g.power_limit_w) {
        (Some(d), Some(l)) => format!("{d:.0}/{l:.0} W"),
        (Some(d), None) => format!("{d:.0} W"),
        _ => "power unknown".into(),
    }
}

fn clock_signal(g: &GpuSample, name: &str) -> Option<Signal> {
    let (clock, max) = (g.sm_clock_mhz?, g.sm_clock_max_mhz?);
    let reasons = g.event_reasons.as_ref()?;
    let active: Vec<ClockEventReason> = reasons
        .active()
        .into_iter()
        .filter(|r| *r != ClockEventReason::GpuIdle)
        .collect();
    if active.is_empty()
        || f64::from(clock) >= f64::from(max) * SLOW_CLOCK_FRACTION
        || is_idle(g) && active.is_empty()
    {
        return None;
    }
    let labels: Vec<&str> = active.iter().map(|r| r.label()).collect();
    let only_power_cap = active.iter().all(|r| *r == ClockEventReason::SwPowerCap);
    let pct = f64::from(clock) * 100.0 / f64::from(max.max(1));
    let text = format!(
        "{name}: SM clock {clock}/{max} MHz ({pct:.0}%) held back by {}; power {}",
        labels.join(", "),
        power_text(g)
    );
    Some(if only_power_cap {
        Signal::new(
            SignalKind::PowerCapped,
            Severity::Info,
            format!(
                "{text}. The card runs at its power cap: expected under full load, but the run is slower than the clock max suggests"
            ),
        )
    } else {
        Signal::new(
            SignalKind::Throttled,
            Severity::Warn,
            format!("{text}. Check cooling and the power supply"),
        )
    })
}

pub fn idle_but_billing(f: &HostFacts<'_>, run: &RunState) -> Option<Signal> {
    if !f.bills
        || matches!(run, RunState::Alive { .. } | RunState::Unknown { .. })
        || !f.link.is_usable()
    {
        return None;
    }
    let window = minutes_f(f.thresholds.idle_minutes);
    let readings = f.history.gpu_since(f.now, window * 2);
    let latest = readings.last()?;
    if latest.gpus.is_empty() {
        return None;
    }
    let lasted = (0..latest.gpus.len())
        .map(|p| held_for(&readings, p, is_idle))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .min()?;
    let severity = if lasted >= window {
        Severity::Crit
    } else {
        Severity::Info
    };
    if severity == Severity::Info && readings.len() > 1 && lasted < window / 2 {
        return None;
    }
    Some(Signal::new(
        SignalKind::IdleButBilling,
        severity,
        format!(
            "no GPU work and no live run for {}{}: the box bills while idle. Pull results and stop it, or start the next job",
            minutes(lasted),
            if readings.len() <= 1 {
                " (one reading)"
            } else {
                ""
            }
        ),
    ))
}

/// Xid errors and OOM kills from the kernel log the probe last read (its last 20 such lines).
pub fn kernel_signals(f: &HostFacts<'_>) -> Vec<Signal> {
    let Some(latest) = f.history.latest_host() else {
        return Vec::new();
    };
    latest
        .sample
        .kernel_events
        .iter()
        .map(|event| match event {
            crate::probe::KernelEvent::Xid { pci, xid, process, message, .. } => Signal::new(
                SignalKind::GpuXid,
                Severity::Crit,
                format!(
                    "GPU fault: Xid {xid} on {} ({}){}: {}. Xid 79/74/48 usually need a reboot or a new box",
                    crate::sanitize::line(pci, 40),
                    crate::sanitize::line(message, 120),
                    process.as_deref().map_or(String::new(), |p| format!(", process {}", crate::sanitize::line(p, 40))),
                    "check the run and `nvidia-smi`"
                ),
            ),
            crate::probe::KernelEvent::OomKill { pid, process, cgroup, .. } => Signal::new(
                SignalKind::OomKill,
                Severity::Warn,
                format!(
                    "the kernel killed pid {pid} ({}) for lack of {} memory: lower the batch size or data-loader workers",
                    crate::sanitize::line(process, 40),
                    if *cgroup { "container" } else { "host" }
                ),
            ),
        })
        .collect()
}
