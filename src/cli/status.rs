//! `rigwatch status`: every host probed once, in parallel through the pool; a compact table, or
//! with `--json` the document README describes. Exit 0 when every host is up with nothing
//! critical, 1 otherwise.

use std::process::ExitCode;

use color_eyre::eyre::WrapErr;

use super::status_report::StatusReport;
use super::status_table::table;
use crate::clocks::Profile;
use crate::config::FleetConfig;
use crate::fleet::memory;
use crate::runtime::once::probe_and_judge;
use crate::signals::Severity;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print one JSON document instead of a table
    #[arg(long)]
    pub json: bool,
    /// Give up on hosts that have not answered after this many seconds
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = crate::config::typed::seconds)]
    pub timeout: std::time::Duration,
}

pub async fn run(
    fleet: &FleetConfig,
    profiles: &[Profile],
    args: &StatusArgs,
) -> color_eyre::Result<ExitCode> {
    // A destroy whose rigwatch was stopped while it ran is said on stderr (stdout may be JSON),
    // after asking the provider where one is configured.
    if let Some(ledger) = crate::ledger::default_path() {
        for line in crate::teardown::unfinished(&ledger, Some((fleet, profiles))).await {
            eprintln!("WARNING: {line}");
        }
    }
    let memory_path = memory::path();
    let mut memory = memory::load(memory_path.as_deref());
    let verified = super::verified_cells(&fleet.hosts);
    let timeout = args.timeout;
    let (judged, clusters) = tokio::join!(
        probe_and_judge(fleet, profiles, &memory, verified, timeout.as_secs_f64()),
        crate::runtime::clusters::read(fleet, timeout)
    );
    judged.remember(&mut memory);
    if let Some(path) = &memory_path {
        memory::save(path, &memory).wrap_err_with(|| format!("saving {}", path.display()))?;
    }
    let report = StatusReport::of(&judged, clusters);
    let code = exit_code(&report);
    if args.json {
        println!("{}", crate::sanitize::json(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(ExitCode::from(code))
}

/// For scripts: 0 healthy, 1 something to look at (a warning, or a probe that failed or did not
/// answer: a host nothing was read from is never healthy), 2 something needs action now (a
/// critical signal, or a host that is not up); 3 is a config or usage mistake (cli::run).
fn exit_code(report: &StatusReport) -> u8 {
    // A cluster whose queue was not read, or a watched job gone from it unseen, is a probe
    // that did not tell the whole story.
    let probe_failed = report.hosts.iter().any(|h| !h.errors.is_empty())
        || report
            .clusters
            .iter()
            .any(|c| c.error.is_some() || !c.ended_state_unknown.is_empty());
    let worst = report
        .hosts
        .iter()
        .flat_map(|h| h.signals.iter().map(|s| s.severity))
        .chain(probe_failed.then_some(Severity::Warn))
        .chain(report.clusters.iter().map(|c| c.severity()))
        .max();
    let not_up = report
        .hosts
        .iter()
        .any(|h| h.link.kind != crate::transport::LinkKind::Up);
    if not_up || worst == Some(Severity::Crit) {
        2
    } else if worst == Some(Severity::Warn) {
        1
    } else {
        0
    }
}
