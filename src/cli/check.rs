//! `rigwatch check`: connect to every host and cluster login node in parallel, one line each;
//! then each cluster's own checks (squeue, sacct; a Kubernetes context's rights). Exit 0 only if
//! every host is up and no cluster check failed.

use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

use crate::config::FleetConfig;
use crate::transport::{LinkState, Pool};

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Give up on hosts that have not answered after this many seconds
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = crate::config::typed::seconds)]
    pub timeout: Duration,
}

#[derive(Debug, Serialize)]
struct HostReport<'a> {
    name: &'a str,
    ssh: String,
    #[serde(flatten)]
    link: &'a LinkState,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    all_up: bool,
    hosts: Vec<HostReport<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    clusters: Vec<super::check_clusters::ClusterCheck>,
}

pub async fn run(fleet: &FleetConfig, args: &CheckArgs) -> color_eyre::Result<ExitCode> {
    let timeout = args.timeout;
    // The login nodes are connected alongside the boxes, in one pool and one wait.
    let with_logins = FleetConfig {
        hosts: fleet
            .hosts
            .iter()
            .cloned()
            .chain(fleet.slurm.iter().map(|c| c.login.clone()))
            .collect(),
        ..fleet.clone()
    };
    let pool = Pool::start(&with_logins);
    let states = pool.settle(timeout).await;
    let clusters = super::check_clusters::all(fleet, &pool, &states, timeout).await;
    let states = &states[..fleet.hosts.len().min(states.len())];
    let members = fleet.hosts.len() + clusters.len();
    let all_up =
        members > 0 && states.iter().all(|(_, s)| s.is_usable()) && clusters.iter().all(|c| c.ok());
    let hosts = fleet
        .hosts
        .iter()
        .zip(states)
        .map(|(host, (name, link))| HostReport {
            name,
            ssh: host.target.to_string(),
            link,
        })
        .collect();
    let report = Report {
        all_up,
        hosts,
        clusters,
    };
    if args.json {
        println!("{}", crate::sanitize::json(&report)?);
    } else {
        if !report.hosts.is_empty() {
            print!("{}", table(&report));
        }
        print!("{}", super::check_clusters::table(&report.clusters));
    }
    pool.shutdown().await;
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn table(report: &Report<'_>) -> String {
    let width = super::name_width(report.hosts.iter().map(|h| h.name));
    let mut out = format!("{:width$}  {:15}  {:>8}  DETAIL\n", "HOST", "LINK", "RTT");
    for host in &report.hosts {
        let rtt = host
            .link
            .rtt_ms()
            .filter(|r| r.is_finite())
            .map_or_else(|| "-".to_string(), |r| format!("{r:.1}ms"));
        let detail = match host.link {
            LinkState::Up { banner, auth, .. } => format!("{banner} · {auth}"),
            LinkState::Degraded {
                banner,
                auth,
                reason,
                ..
            } => format!("{reason} · {banner} · {auth}"),
            // settle reports a host still connecting at the timeout as down, with the wait.
            LinkState::Connecting { .. } => String::new(),
            LinkState::Down { reason, .. }
            | LinkState::AuthRefused { reason, .. }
            | LinkState::HostkeyRefused { reason, .. } => reason.clone(),
        };
        out.push_str(&format!(
            "{:width$}  {:15}  {:>8}  {}\n",
            crate::sanitize::line(host.name, 64),
            host.link.word(),
            rtt,
            crate::sanitize::line(&detail, 2000)
        ));
    }
    out
}
