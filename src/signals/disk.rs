//! Storage: bytes AND inodes for every watched mount, whichever is closer to full, and a
//! time-to-full from the recent growth (see `fill`).

use chrono::Duration;

use super::fill::fill_outlook;
use super::{HostFacts, Severity, Signal, SignalKind};
use crate::probe::Mount;

/// Growth is measured over at most this window of history.
pub const GROWTH_WINDOW_MINUTES: i64 = 30;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub used: u64,
    pub total: u64,
}

impl Usage {
    pub fn pct(self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.used as f64 * 100.0 / self.total as f64
        }
    }
}

/// Bytes as df reports them: used out of used + available (root's reserve is not usable).
pub fn bytes_usage(m: &Mount) -> Option<Usage> {
    let b = m.bytes.as_ref()?;
    let used = b.used_bytes?;
    let total = used + b.avail_bytes?;
    (total > 0).then_some(Usage { used, total })
}

pub fn inode_usage(m: &Mount) -> Option<Usage> {
    let i = m.inodes.as_ref()?;
    let (used, total) = (i.used?, i.total?);
    (total > 0).then_some(Usage { used, total })
}

/// Filesystems that cannot fill with the run's data.
fn is_pseudo(m: &Mount) -> bool {
    [
        "tmpfs", "devtmpfs", "overlay", "shm", "proc", "sysfs", "udev", "none",
    ]
    .contains(&m.filesystem.as_str())
        && m.mount != "/"
}

/// A mount's bytes and inode usage, for views.
pub fn disk_usage(m: &Mount) -> (Option<Usage>, Option<Usage>) {
    (bytes_usage(m), inode_usage(m))
}

pub fn disk_signals(f: &HostFacts<'_>) -> Vec<Signal> {
    let mut out = Vec::new();
    let Some(latest) = f.history.latest_host() else {
        return out;
    };
    let history = f
        .history
        .host_since(f.now, Duration::minutes(GROWTH_WINDOW_MINUTES));
    for m in &latest.sample.mounts {
        if f.host.mounts.is_empty() && is_pseudo(m) {
            continue;
        }
        let path = crate::sanitize::line(&m.mount, 80);
        for (kind, usage, what) in [
            (SignalKind::DiskBytes, bytes_usage(m), "bytes"),
            (SignalKind::DiskInodes, inode_usage(m), "inodes"),
        ] {
            let Some(usage) = usage else { continue };
            let pct = usage.pct();
            let severity = if pct >= f.thresholds.disk_crit_pct {
                Severity::Crit
            } else if pct >= f.thresholds.disk_warn_pct {
                Severity::Warn
            } else {
                continue;
            };
            let hint = if kind == SignalKind::DiskInodes {
                "too many small files: pack them (tar) or delete caches; `df -h` will not show this"
            } else {
                "free space or move outputs to a durable volume"
            };
            out.push(Signal::new(
                kind,
                severity,
                format!(
                    "{path}: {what} {pct:.0}% used ({} of {}): {hint}",
                    usage.used, usage.total
                ),
            ));
        }
        let outlook = fill_outlook(&history, &m.mount);
        if let Some((_, left, _)) = outlook.filling() {
            if left < super::run::minutes_f(f.thresholds.full_within_hours * 60.0) {
                out.push(Signal::new(
                    SignalKind::DiskFillingUp,
                    Severity::Crit,
                    format!("{path}: {}", outlook.describe()),
                ));
            }
        }
    }
    out
}
