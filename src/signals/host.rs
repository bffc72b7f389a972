//! The box itself under the GPUs: every CPU busy (a data loader that cannot keep up starves the
//! GPUs while nvidia-smi still looks fine) and RAM nearly gone (the page cache is gone, then the
//! kernel's OOM killer picks a process, often the run). Read off the newest host reading; the
//! load is the 5-minute average, so a burst is not a warning.

use super::{HostFacts, Severity, Signal, SignalKind};

/// RAM in use from which it is a warning: past it the page cache is gone and a loader stalls.
pub const RAM_WARN_PCT: f64 = 90.0;

pub(super) fn host_signals(facts: &HostFacts<'_>) -> Vec<Signal> {
    let mut out = Vec::new();
    let Some(latest) = facts.history.latest_host() else {
        return out;
    };
    let sample = &latest.sample;
    if let (Some(load), Some(cpus)) = (&sample.load, sample.cpus.filter(|n| *n > 0))
        && load.five >= f64::from(cpus)
    {
        out.push(Signal::new(
            SignalKind::CpuBound,
            Severity::Warn,
            format!(
                "load {:.1} over 5 min on {cpus} CPUs: every CPU is busy, so data loading may be \
                 starving the GPUs; use fewer data-loader workers or a box with more CPUs",
                load.five
            ),
        ));
    }
    if let Some(m) = &sample.memory
        && let Some(free) = m.available_bytes
        && m.total_bytes > 0
    {
        let used = m.total_bytes.saturating_sub(free);
        let pct = 100.0 * used as f64 / m.total_bytes as f64;
        if pct >= RAM_WARN_PCT {
            let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
            out.push(Signal::new(
                SignalKind::RamLow,
                Severity::Warn,
                format!(
                    "RAM {pct:.0}% used ({:.1}/{:.1} GiB): the page cache is gone and the kernel \
                     may kill the run for memory; lower data-loader workers or prefetch",
                    gib(used),
                    gib(m.total_bytes)
                ),
            ));
        }
    }
    out
}
