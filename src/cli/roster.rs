//! `rigwatch roster`: every cell of every queue in the fleet, probed once and reconciled; a
//! table (problems first, resume commands at the bottom) or with `--json` one document. Exit 0
//! normally, 1 when a cell is failed or missing, or a queue could not be read.

use std::fmt::Write as _;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use color_eyre::eyre::WrapErr;
use serde::Serialize;

use crate::config::FleetConfig;
use crate::fleet::memory;
use crate::fleet::queues;
use crate::queue::{CellReport, CellState, CurrentCell, HostSummary, Roster, compact_duration};
use crate::runtime::once::{Unread, probe_and_judge};
use crate::sanitize::line;

#[derive(Debug, clap::Args)]
pub struct RosterArgs {
    /// Print one JSON document instead of a table
    #[arg(long)]
    pub json: bool,
    /// Give up on hosts that have not answered after this many seconds
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = crate::config::typed::seconds)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Serialize)]
struct RosterReport {
    taken_at: DateTime<Utc>,
    hosts: Vec<HostReport>,
    cells: Vec<CellReport>,
    /// Hosts whose queue could not be read now: their cells are as last read, or unaccounted
    /// for.
    unread: Vec<String>,
    #[serde(skip)]
    unread_why: Vec<Unread>,
}

#[derive(Debug, Serialize)]
struct HostReport {
    #[serde(flatten)]
    summary: HostSummary,
    current: Option<CurrentCell>,
}

pub async fn run(fleet: &FleetConfig, args: &RosterArgs) -> color_eyre::Result<ExitCode> {
    let memory_path = memory::path();
    let mut memory = memory::load(memory_path.as_deref());
    let verified = super::verified_cells(&fleet.hosts);
    // The roster needs no platform profiles: they only shape clocks and cost.
    let judged = probe_and_judge(fleet, &[], &memory, verified, args.timeout.as_secs_f64()).await;
    judged.remember(&mut memory);
    if let Some(path) = &memory_path {
        memory::save(path, &memory).wrap_err_with(|| format!("saving {}", path.display()))?;
    }
    let now = judged.taken_at;
    let roster = judged.state.roster.clone().unwrap_or(Roster {
        cells: Vec::new(),
        hosts: Vec::new(),
    });
    let hosts = roster
        .hosts
        .iter()
        .map(|summary| HostReport {
            current: judged
                .queue_facts(&summary.host)
                .and_then(|f| queues::status(summary, f, &[], now).current),
            summary: summary.clone(),
        })
        .collect();
    let report = RosterReport {
        taken_at: now,
        hosts,
        cells: roster.cells,
        unread: judged.unread.iter().map(|u| u.host.clone()).collect(),
        unread_why: judged.unread,
    };
    let troubled = !report.unread.is_empty()
        || report
            .cells
            .iter()
            .any(|c| matches!(c.state, CellState::Failed | CellState::Missing));
    if args.json {
        println!("{}", crate::sanitize::json(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(if troubled {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn table(report: &RosterReport) -> String {
    let width = super::name_width(report.cells.iter().map(|c| c.host.as_str()));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:width$}  {:>5}  {:24}  {:9}  DETAIL",
        "HOST", "INDEX", "NAME", "STATE"
    );
    for c in &report.cells {
        let current = report
            .hosts
            .iter()
            .find(|h| h.summary.host == c.host)
            .and_then(|h| h.current.as_ref())
            .filter(|cur| cur.index == c.index);
        let row = format!(
            "{:width$}  {:>5}  {:24}  {:9}  {}",
            line(&c.host, 60),
            c.index,
            line(&c.name, 24),
            state_word(&c.state),
            detail(c, current)
        );
        let _ = writeln!(out, "{}", row.trim_end());
    }
    for u in &report.unread_why {
        let _ = writeln!(
            out,
            "{}: queue file {} not read: {}{}",
            line(&u.host, 60),
            line(&u.file, 200),
            line(&u.why, 300),
            if u.remembered {
                "; its cells are as last read"
            } else {
                "; its cells are unaccounted for"
            }
        );
    }
    for h in &report.hosts {
        if let Some(resume) = &h.summary.resume {
            let _ = writeln!(
                out,
                "resume {} at cell {}: {}",
                line(&h.summary.host, 60),
                resume.cell_index,
                line(&resume.command, 400)
            );
        }
    }
    out
}

pub fn state_word(state: &CellState) -> &'static str {
    match state {
        CellState::Done { .. } => "done",
        CellState::Running => "running",
        CellState::Pending => "pending",
        CellState::Failed => "FAILED",
        CellState::Missing => "MISSING",
        CellState::Colliding { .. } => "COLLIDING",
    }
}

/// What the state rests on, in a few words.
fn detail(c: &CellReport, current: Option<&CurrentCell>) -> String {
    match &c.state {
        CellState::Done { verified: true } => "pulled and verified".into(),
        CellState::Done { .. } => "final copy complete".into(),
        CellState::Running => current.map_or_else(String::new, progress_words),
        CellState::Pending => String::new(),
        CellState::Failed => "no complete final copy, and the queue moved on or stopped".into(),
        CellState::Missing => "box gone; no durable copy".into(),
        CellState::Colliding { with } => {
            let others: Vec<String> = with
                .iter()
                .map(|r| format!("{}:{}:{}", line(&r.host, 60), line(&r.file, 120), r.line))
                .collect();
            format!("same name as {}", others.join(", "))
        }
    }
}

/// `ep 3/50 · step 450/1000 · 46% · ETA 12m`, the parts that are known.
pub fn progress_words(current: &CurrentCell) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &current.progress {
        if let Some((cur, of)) = p.epoch {
            parts.push(format!("ep {cur}/{of}"));
        }
        if let Some((cur, of)) = p.step {
            parts.push(format!("step {cur}/{of}"));
        }
        if let Some(f) = p.fraction {
            parts.push(format!("{:.0}%", f * 100.0));
        }
    }
    if let Some(secs) = current.eta_secs {
        parts.push(format!("ETA {}", compact_duration(secs)));
    }
    parts.join(" · ")
}
