//! `rigwatch status`: every host probed once, in parallel through the pool; a compact table, or
//! with `--json` the document README describes. Exit 0 when every host is up with nothing
//! critical, 1 otherwise.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::WrapErr;

use super::status_report::{HostStatus, StatusReport, gpu_reports, link_report, mount_reports};
use super::status_table::table;
use crate::config::FleetConfig;
use crate::fleet::{BootMark, GpuAvailability, HostHistory};
use crate::monitor::{HostProbe, probe_once};
use crate::signals::{HostFacts, Severity, evaluate};
use crate::transport::Pool;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print one JSON document instead of a table
    #[arg(long)]
    pub json: bool,
    /// Give up on hosts that have not answered after this many seconds
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub timeout: f64,
}

pub async fn run(fleet: &FleetConfig, args: &StatusArgs) -> color_eyre::Result<ExitCode> {
    let timeout =
        Duration::try_from_secs_f64(args.timeout.max(0.1)).unwrap_or(Duration::from_secs(30));
    let pool = Pool::start(fleet);
    let states = pool.settle(timeout).await;
    let probes = futures::future::join_all(fleet.hosts.iter().map(|host| {
        let session = pool.get(&host.name).and_then(|l| l.session());
        async move {
            let session = session?;
            tokio::time::timeout(timeout, probe_once(&session, host))
                .await
                .ok()
        }
    }))
    .await;

    let marks_path = boot_marks_path();
    let mut marks = load_boot_marks(marks_path.as_ref());
    let now = Utc::now();
    let mut hosts = Vec::new();
    for ((host, (_, link)), probe) in fleet.hosts.iter().zip(&states).zip(probes) {
        let mut history = HostHistory::with_capacity(2, 0);
        let mut errors = Vec::new();
        let mut gpu_state = GpuAvailability::Unknown;
        if let Some(HostProbe {
            gpu,
            gpus,
            host: reading,
            errors: probe_errors,
        }) = probe
        {
            gpu_state = gpu;
            errors = probe_errors;
            history.extend(gpus, reading);
        } else if link.is_usable() {
            errors.push(format!(
                "{}: probes did not answer within {}s",
                host.name, args.timeout
            ));
        }
        let previous_boot = marks.get(&host.name).cloned();
        let (run, signals) = evaluate(&HostFacts {
            host,
            link,
            history: &history,
            gpu: &gpu_state,
            previous_boot,
            bills: host.profile != "local",
            thresholds: &fleet.thresholds,
            now,
        });
        let latest = history.latest_host();
        if let Some(reading) = latest {
            marks.insert(host.name.clone(), BootMark::of(reading));
        }
        hosts.push(HostStatus {
            name: host.name.clone(),
            profile: host.profile.clone(),
            link: link_report(link),
            run,
            uptime_secs: latest
                .and_then(|r| r.sample.uptime.as_ref())
                .map(|u| u.up.as_secs_f64()),
            boot_id: latest.and_then(|r| r.sample.boot_id.clone()),
            gpu_state,
            gpus: gpu_reports(&history),
            mounts: latest
                .map(|r| mount_reports(&r.sample.mounts))
                .unwrap_or_default(),
            signals,
            errors,
        });
    }
    pool.shutdown().await;
    if let Some(path) = &marks_path {
        save_boot_marks(path, &marks).wrap_err_with(|| format!("saving {}", path.display()))?;
    }
    let report = StatusReport {
        taken_at: now,
        hosts,
    };
    let healthy = report
        .hosts
        .iter()
        .all(|h| h.link.state == "up" && h.signals.iter().all(|s| s.severity < Severity::Crit));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Where `status` remembers each box's last boot, so a reboot between two runs is noticed.
fn boot_marks_path() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| crate::config::paths::home_dir().map(|h| h.join(".local/state")))
        .map(|d| d.join("rigwatch/boot_marks.json"))
}

fn load_boot_marks(path: Option<&PathBuf>) -> BTreeMap<String, BootMark> {
    path.and_then(|p| std::fs::read(p).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn save_boot_marks(path: &PathBuf, marks: &BTreeMap<String, BootMark>) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(marks).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(&tmp, path)
}
