//! The compact `status` table: one line per host, then its signals indented under it.

use std::fmt::Write as _;

use super::status_report::{GpuReport, HostStatus, MountReport, StatusReport};
use crate::cluster::Phase;
use crate::sanitize::line;

fn gpu_cell(g: &GpuReport) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
    format!(
        "{}: {}% {}/{}MHz {}/{}W {}/{}GiB",
        g.index.map_or("?".into(), |i| i.to_string()),
        opt(g.util_pct.map(|u| u.to_string())),
        opt(g.sm_clock_mhz.map(|c| c.to_string())),
        opt(g.sm_clock_max_mhz.map(|c| c.to_string())),
        opt(g.power_w.map(|p| format!("{p:.0}"))),
        opt(g.power_limit_w.map(|p| format!("{p:.0}"))),
        opt(g.mem_used_mib.map(|m| format!("{:.0}", m as f64 / 1024.0))),
        opt(g.mem_total_mib.map(|m| format!("{:.0}", m as f64 / 1024.0))),
    )
}

fn pct(used: Option<u64>, total: Option<u64>) -> Option<f64> {
    match (used, total) {
        (Some(u), Some(t)) if t > 0 => Some(u as f64 * 100.0 / t as f64),
        _ => None,
    }
}

/// The mount closest to full on either dimension.
fn worst_mount(mounts: &[MountReport]) -> Option<&MountReport> {
    scored(mounts)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, m, _, _)| m)
}

/// Each mount with how full it is: the fuller of bytes and inodes, and each (None unknown).
fn scored(
    mounts: &[MountReport],
) -> impl Iterator<Item = (f64, &MountReport, Option<f64>, Option<f64>)> {
    mounts.iter().map(|m| {
        let bytes = pct(
            m.bytes_used,
            m.bytes_used.zip(m.bytes_avail).map(|(u, a)| u + a),
        );
        let inodes = pct(m.inodes_used, m.inodes_total);
        (
            bytes.unwrap_or(0.0).max(inodes.unwrap_or(0.0)),
            m,
            bytes,
            inodes,
        )
    })
}

fn mount_cell(mount: Option<&MountReport>) -> String {
    match mount.and_then(|m| scored(std::slice::from_ref(m)).next()) {
        Some((_, m, bytes, inodes)) => {
            let show = |p: Option<f64>| p.map_or("?".into(), |p| format!("{p:.0}%"));
            format!(
                "{} {} bytes {} inodes",
                line(&m.path, 24),
                show(bytes),
                show(inodes)
            )
        }
        None => "-".into(),
    }
}

pub fn table(report: &StatusReport) -> String {
    let width = super::name_width(report.hosts.iter().map(|h| h.name.as_str()));
    let mut out = format!(
        "{:width$}  {:15}  {:7}  {:36}  DISK (fullest)\n",
        "HOST", "LINK", "RUN", "GPU"
    );
    for host in &report.hosts {
        write_host(&mut out, host, width);
    }
    for cluster in &report.clusters {
        write_cluster(&mut out, cluster);
    }
    out
}

/// A cluster's jobs: one line each, the pending reason in words, a failure with its exit code.
fn write_cluster(out: &mut String, cluster: &crate::cluster::ClusterReading) {
    if cluster.scheduler == crate::cluster::Scheduler::Kaggle {
        let _ = writeln!(
            out,
            "\nkaggle {} · {}",
            line(&cluster.name, 64),
            line(&cluster.via, 200)
        );
    } else {
        let _ = writeln!(out, "\ncluster {}", line(&cluster.name, 64));
    }
    if let Some(q) = &cluster.quota {
        let renews = q
            .refresh_at
            .map(|t| format!(" (renews {})", t.format("%a %Y-%m-%d %H:%M UTC")))
            .unwrap_or_default();
        if q.lower_bound {
            let _ = writeln!(
                out,
                "  weekly GPU quota: at least {:.1} h used of {:.1} h, at most {:.1} h left \
                 (rigwatch's own count of the GPU runs it saw)",
                q.used_hours, q.total_hours, q.remaining_hours
            );
        } else {
            let _ = writeln!(
                out,
                "  weekly GPU quota: {:.1} h used of {:.1} h, {:.1} h left{renews}",
                q.used_hours, q.total_hours, q.remaining_hours
            );
        }
    }
    if let Some(error) = &cluster.error {
        let _ = writeln!(out, "  {}", line(error, 300));
    }
    for job in cluster.jobs.iter().filter(|j| j.phase != Phase::Gone) {
        let left = job
            .walltime
            .as_ref()
            .and_then(|c| c.remaining_secs)
            .map(|s| {
                format!(
                    ", {} left",
                    crate::signals::minutes(chrono::Duration::seconds(s))
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:>10}  {:24}  {}{left}",
            line(&job.id, 20),
            line(&job.name, 24),
            line(&job.summary(), 200)
        );
        for danger in &job.dangers {
            let _ = writeln!(out, "  {:>10}  danger: {}", "", line(danger, 200));
        }
    }
    for id in &cluster.ended_state_unknown {
        let _ = writeln!(
            out,
            "  {:>10}  ended, state unknown: no longer in the queue",
            line(id, 20)
        );
    }
}

fn write_host(out: &mut String, host: &HostStatus, width: usize) {
    let gpus: Vec<String> = host.gpus.iter().map(gpu_cell).collect();
    let gpu = match (gpus.is_empty(), &host.gpu_state) {
        (false, _) => gpus.join(" | "),
        (true, crate::readings::GpuAvailability::NoNvidiaSmi) => "no GPUs (no nvidia-smi)".into(),
        (true, _) => "-".into(),
    };
    let _ = writeln!(
        out,
        "{:width$}  {:15}  {:7}  {:36}  {}",
        line(&host.name, 64),
        host.link.state,
        host.run.word(),
        gpu,
        mount_cell(worst_mount(&host.mounts))
    );
    // When the fullest disk fills, in the words the dashboard's detail uses (one reading is too
    // little to tell, and it says so).
    if let Some(m) = worst_mount(&host.mounts) {
        let _ = writeln!(
            out,
            "{:width$}    disk {}: {}",
            "",
            line(&m.path, 60),
            m.fill.describe()
        );
    }
    if let Some(error) = &host.link.error {
        let _ = writeln!(out, "{:width$}    link: {}", "", line(error, 300));
    }
    if let Some(clock) = host.clocks.first() {
        let left = clock.remaining_secs.map_or(String::new(), |s| {
            format!(
                " in {}",
                crate::signals::minutes(chrono::Duration::seconds(s))
            )
        });
        let _ = writeln!(
            out,
            "{:width$}    clock {}{left}: {}",
            "",
            crate::clocks::Urgency::of(clock).word(),
            line(&clock.message, 300)
        );
    }
    if let Some(cost) = host
        .cost
        .as_ref()
        .filter(|c| c.per_hour.is_some() || c.so_far > 0.0)
    {
        let _ = writeln!(
            out,
            "{:width$}    cost {:.2} {} so far ({:.2} while idle){}",
            "",
            cost.so_far,
            cost.currency,
            cost.idle_so_far,
            cost.per_hour
                .map_or(String::new(), |r| format!(", {r:.2}/h now"))
        );
    }
    for signal in &host.signals {
        let _ = writeln!(
            out,
            "{:width$}    {} {}",
            "",
            signal.severity.word(),
            line(&signal.message, 400)
        );
    }
    for error in &host.errors {
        let _ = writeln!(out, "{:width$}    error: {}", "", line(error, 300));
    }
}
