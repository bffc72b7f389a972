//! `rigwatch roster`: every cell of every queue in the fleet, probed once and reconciled; a
//! table (problems first, resume commands at the bottom) or with `--json` one document. Exit 0
//! normally, 1 when a cell is failed or missing, or a queue could not be read.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use color_eyre::eyre::WrapErr;
use serde::Serialize;

use super::status::probe_fleet;
use crate::config::{FleetConfig, HostConfig};
use crate::monitor::HostProbe;
use crate::monitor::memory::{self, FleetMemory, RememberedQueue};
use crate::monitor::queues::{self, QueueFacts, RosterEntry, presence};
use crate::queue::{CellReport, CellState, CurrentCell, HostSummary, Roster, compact_duration};
use crate::sanitize::line;
use crate::transport::LinkState;

#[derive(Debug, clap::Args)]
pub struct RosterArgs {
    /// Print one JSON document instead of a table
    #[arg(long)]
    pub json: bool,
    /// Give up on hosts that have not answered after this many seconds
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub timeout: f64,
}

/// What earlier runs left for the queues: the hosts memory (queues as last read, when each box
/// was last seen up) and the ledger's verified cells per host.
pub struct Known<'a> {
    pub memory: &'a FleetMemory,
    pub verified: &'a BTreeMap<String, BTreeSet<String>>,
    /// What the providers' CLIs said, per host (empty where none was asked).
    pub providers: &'a [(String, crate::provider::ProviderReport)],
}

/// A configured queue that this probe could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    pub host: String,
    pub file: String,
    pub why: String,
    /// Its cells are shown as last read by an earlier run.
    pub remembered: bool,
}

/// The queues of one probe of the fleet: facts per host (in fleet order; read now, or else as
/// remembered) and their roster.
pub struct FleetQueues {
    pub facts: Vec<Option<QueueFacts>>,
    pub roster: Option<Roster>,
    pub unread: Vec<Unread>,
}

impl FleetQueues {
    /// Keeps the queues read now for the next run; remembered ones are already there.
    pub fn remember(&self, hosts: &[HostConfig], memory: &mut FleetMemory) {
        for (host, facts) in hosts.iter().zip(&self.facts) {
            if let Some(facts) = facts
                && !self.unread.iter().any(|u| u.host == host.name)
            {
                memory.entry(host.name.clone()).or_default().queue =
                    Some(RememberedQueue::of(facts));
            }
        }
    }
}

pub fn reconcile_probes(
    hosts: &[HostConfig],
    states: &[(String, LinkState)],
    probes: &[Option<HostProbe>],
    known: &Known<'_>,
    now: DateTime<Utc>,
) -> FleetQueues {
    let mut unread = Vec::new();
    let facts: Vec<Option<QueueFacts>> = hosts
        .iter()
        .zip(probes)
        .map(|(host, probe)| {
            let config = host.queue.as_ref()?;
            let sample = probe
                .as_ref()
                .and_then(|p| p.host.as_ref())
                .map(|r| &r.sample);
            let read = sample.and_then(|s| queues::facts(config, s, &queues::patterns(config)));
            if read.is_some() {
                return read;
            }
            let remembered = known
                .memory
                .get(&host.name)
                .and_then(|m| m.queue.as_ref())
                .and_then(|q| q.facts(&config.file));
            unread.push(Unread {
                host: host.name.clone(),
                file: config.file.clone(),
                why: match sample {
                    None => "the box did not answer".into(),
                    Some(s) => queues::read_error(s).unwrap_or("not read").to_owned(),
                },
                remembered: remembered.is_some(),
            });
            remembered
        })
        .collect();
    let entries: Vec<RosterEntry<'_>> = hosts
        .iter()
        .zip(states)
        .zip(&facts)
        .filter_map(|((host, (_, link)), facts)| {
            let last_seen_up = known.memory.get(&host.name).and_then(|m| m.last_seen_up);
            let provider = known
                .providers
                .iter()
                .find(|(h, _)| *h == host.name)
                .and_then(|(_, r)| r.state.as_ref())
                .map(|s| &s.state);
            Some(RosterEntry {
                host: &host.name,
                presence: presence(link, &[], last_seen_up, provider, now),
                facts: facts.as_ref()?,
                verified: known.verified.get(&host.name),
            })
        })
        .collect();
    FleetQueues {
        roster: (!entries.is_empty()).then(|| queues::roster(&entries)),
        facts,
        unread,
    }
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
    let ((states, probes), providers) = tokio::join!(
        probe_fleet(fleet, args.timeout),
        crate::monitor::providers::ask_all(fleet)
    );
    let now = Utc::now();
    let memory_path = memory::path();
    let mut memory = memory::load(memory_path.as_deref());
    let verified = super::verified_cells(&fleet.hosts);
    let known = Known {
        memory: &memory,
        verified: &verified,
        providers: &providers,
    };
    let queues = reconcile_probes(&fleet.hosts, &states, &probes, &known, now);
    queues.remember(&fleet.hosts, &mut memory);
    if let Some(path) = &memory_path {
        memory::save(path, &memory).wrap_err_with(|| format!("saving {}", path.display()))?;
    }
    let roster = queues.roster.unwrap_or(Roster {
        cells: Vec::new(),
        hosts: Vec::new(),
    });
    let hosts = roster
        .hosts
        .iter()
        .map(|summary| {
            let facts = fleet
                .hosts
                .iter()
                .position(|h| h.name == summary.host)
                .and_then(|i| queues.facts[i].as_ref());
            HostReport {
                current: facts.and_then(|f| queues::status(summary, f, &[], now).current),
                summary: summary.clone(),
            }
        })
        .collect();
    let report = RosterReport {
        taken_at: now,
        hosts,
        cells: roster.cells,
        unread: queues.unread.iter().map(|u| u.host.clone()).collect(),
        unread_why: queues.unread,
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
