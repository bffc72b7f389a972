//! `rigwatch check`: connect to every host in parallel, one line each, exit 0 only if all are up.

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
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub timeout: f64,
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
}

pub async fn run(fleet: &FleetConfig, args: &CheckArgs) -> color_eyre::Result<ExitCode> {
    let timeout =
        Duration::try_from_secs_f64(args.timeout.max(0.1)).unwrap_or(Duration::from_secs(30));
    let pool = Pool::start(fleet);
    let states = pool.settle(timeout).await;
    let all_up = !states.is_empty() && states.iter().all(|(_, s)| s.is_usable());
    let hosts = fleet
        .hosts
        .iter()
        .zip(&states)
        .map(|(host, (name, link))| HostReport {
            name,
            ssh: host.target.to_string(),
            link,
        })
        .collect();
    let report = Report { all_up, hosts };
    if args.json {
        println!("{}", crate::sanitize::json(&report)?);
    } else {
        print!("{}", table(&report));
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
