//! `rigwatch ledger [HOST]`: every pull and teardown on record, newest first.

use std::process::ExitCode;

use color_eyre::eyre::eyre;
use humansize::{BINARY, format_size};

use crate::ledger::{KillRecord, Ledger, PullRecord, TeardownRecord};
use crate::sanitize::mask_secrets;
use crate::teardown::unfinished;

#[derive(Debug, clap::Args)]
pub struct LedgerArgs {
    /// Only this host
    #[arg(add = clap_complete::ArgValueCandidates::new(super::complete::fleet_names))]
    pub host: Option<String>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// `fleet`: the names fleet.toml gives its hosts and clusters, when it loads; a host named on
/// the command line that neither it nor the ledger knows is a usage mistake, not "nothing yet".
pub fn run(args: &LedgerArgs, fleet: Option<Vec<String>>) -> color_eyre::Result<ExitCode> {
    let path = crate::ledger::default_path()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME holding a ledger"))?;
    if let Some(host) = &args.host {
        known_host(&path, host, fleet)?;
    }
    // Reading never creates: with no ledger yet there is nothing to show, and no file is made.
    if !path.exists() {
        if args.json {
            let doc = serde_json::json!({ "pulls": [], "teardowns": [], "kills": [] });
            println!("{}", crate::sanitize::json(&doc)?);
        } else {
            println!(
                "no ledger yet at {}: `rigwatch pull HOST` records pulls there, and teardowns after",
                path.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let ledger = Ledger::open(&path)?;
    // A destroy whose rigwatch was stopped while it ran: said first (on stderr beside JSON).
    // Without the fleet there is no provider to ask; the dashboard, `status` and `teardown` ask.
    let interrupted = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(unfinished(&path, None));
    for line in interrupted {
        if args.json {
            eprintln!("WARNING: {line}");
        } else {
            println!("WARNING: {line}");
        }
    }
    let pulls = ledger.pulls(args.host.as_deref())?;
    let kills = ledger.kills(args.host.as_deref())?;
    let mut teardowns = ledger.teardowns(args.host.as_deref())?;
    // Rows written before commands were masked still hold what they held; never shown.
    for t in &mut teardowns {
        t.command = t.command.as_deref().map(mask_secrets);
        t.output = mask_secrets(&t.output);
        t.why = t.why.as_deref().map(mask_secrets);
    }
    if args.json {
        println!("{}", json(&pulls, &teardowns, &kills)?);
        return Ok(ExitCode::SUCCESS);
    }
    if pulls.is_empty() && teardowns.is_empty() && kills.is_empty() {
        println!("the ledger at {} has nothing yet", path.display());
    }
    // One history in time order: a teardown reads after the pull it relied on.
    let mut entries: Vec<(chrono::DateTime<chrono::Utc>, String)> = Vec::new();
    entries.extend(teardowns.iter().map(|t| (t.at, teardown_entry(t))));
    entries.extend(kills.iter().map(|k| (k.at, kill_entry(k))));
    entries.extend(pulls.iter().map(|p| (p.finished, pull_entry(p))));
    entries.sort_by_key(|(at, _)| *at);
    for (_, text) in entries {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `host` is a member of the fleet or a name the ledger holds; else a usage error listing them.
fn known_host(
    path: &std::path::Path,
    host: &str,
    fleet: Option<Vec<String>>,
) -> color_eyre::Result<()> {
    let mut known = fleet.unwrap_or_default();
    if path.exists() {
        let ledger = Ledger::open(path)?;
        known.extend(ledger.pulls(None)?.into_iter().map(|p| p.host));
        known.extend(ledger.teardowns(None)?.into_iter().map(|t| t.host));
        known.extend(ledger.kills(None)?.into_iter().map(|k| k.host));
    }
    known.sort();
    known.dedup();
    if known.iter().any(|k| k == host) {
        return Ok(());
    }
    Err(super::usage(format!(
        "no host named {:?} in fleet.toml or the ledger; there are: {}",
        crate::sanitize::line(host, 80),
        if known.is_empty() {
            "none".to_string()
        } else {
            crate::sanitize::line(&known.join(", "), 400)
        }
    )))
}

/// The ledger as one JSON document; each file carries its outcome in the words the text uses.
fn json(
    pulls: &[PullRecord],
    teardowns: &[TeardownRecord],
    kills: &[KillRecord],
) -> color_eyre::Result<String> {
    let mut pulls_json = serde_json::to_value(pulls)?;
    for (p, pj) in pulls
        .iter()
        .zip(pulls_json.as_array_mut().into_iter().flatten())
    {
        let files = pj.get_mut("files").and_then(|f| f.as_array_mut());
        for (f, fj) in p.files.iter().zip(files.into_iter().flatten()) {
            if let Some(obj) = fj.as_object_mut() {
                let word = f.outcome().word().to_lowercase();
                obj.insert("outcome".into(), serde_json::Value::String(word));
            }
        }
    }
    let doc = serde_json::json!({ "pulls": pulls_json, "teardowns": teardowns, "kills": kills });
    Ok(crate::sanitize::json(&doc)?)
}

/// A teardown's lines: what ran relying on which pull, its outcome, and each later look.
fn teardown_entry(t: &TeardownRecord) -> String {
    let mut outcome = match (t.outcome, &t.why) {
        (Some(o), Some(why)) => format!("{o}: {}", crate::sanitize::words(why, 500)),
        (Some(o), None) => o.to_string(),
        (None, _) => "NO RECORDED OUTCOME".to_string(),
    };
    // Later looks are rows of their own, under the outcome they follow.
    for look in &t.later {
        outcome.push_str(&format!(
            "\n    later, {}: {}: {}",
            look.at.format("%Y-%m-%d %H:%M:%S"),
            look.outcome,
            crate::sanitize::words(&look.why, 500)
        ));
    }
    format!(
        "{}  TEARDOWN {} instance {} relying on pull #{}: {} (exit {}): {outcome}\n",
        t.at.format("%Y-%m-%d %H:%M:%S"),
        t.host,
        t.instance_id.as_deref().unwrap_or("-"),
        t.pull_id,
        crate::sanitize::words(
            t.command
                .as_deref()
                .unwrap_or("destroyed by hand at the provider"),
            500
        ),
        t.exit_status.map_or("-".to_string(), |s| s.to_string())
    )
}

fn kill_entry(k: &KillRecord) -> String {
    format!(
        "{}  KILL {} {}: {}: {}\n",
        k.at.format("%Y-%m-%d %H:%M:%S"),
        k.host,
        crate::sanitize::line(&k.pids, 300),
        crate::sanitize::words(&k.command, 200),
        crate::sanitize::words(k.outcome.as_deref().unwrap_or("NO RECORDED OUTCOME"), 500)
    )
}

/// A pull's line and one line per file: outcome, path, size, hash, where it is, how proven.
fn pull_entry(p: &PullRecord) -> String {
    let good = p.files.iter().filter(|f| f.is_good()).count();
    let mut text = format!(
        "{}  pull #{} {}: {}/{} files good, {}\n",
        p.finished.format("%Y-%m-%d %H:%M:%S"),
        p.id,
        p.host,
        good,
        p.files.len(),
        format_size(p.files.iter().map(|f| f.size).sum::<u64>(), BINARY)
    );
    for f in &p.files {
        text.push_str(&format!(
            "    {:<8} {}  {}  sha256 {}  -> {}  {}\n",
            f.outcome().word(),
            crate::sanitize::line(&f.remote_path, 200),
            format_size(f.size, BINARY),
            f.local_sha256
                .as_deref()
                .map_or("-", |h| &h[..h.len().min(16)]),
            crate::sanitize::line(&f.local_path, 200),
            crate::sanitize::words(f.error.as_deref().unwrap_or(&f.verification), 160)
        ));
    }
    text
}
