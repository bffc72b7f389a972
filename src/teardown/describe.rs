//! The words of the teardown dialog, shared by the dashboard's modal and `rigwatch teardown`:
//! what will be destroyed, what survives, the pull it relies on, the money it stops, the command.

use super::guard::RunLooks;
use super::plan::{Method, TeardownPlan};
use crate::ledger::PullRecord;

pub fn describe(plan: &TeardownPlan, last: Option<&PullRecord>, run: RunLooks) -> Vec<String> {
    let mut lines = vec![format!(
        "Destroy {} ({}{})",
        plan.host,
        plan.platform,
        plan.instance_id
            .as_deref()
            .map(|i| format!(", instance {i}"))
            .unwrap_or_default()
    )];
    lines.push(format!(
        "  destroyed: {}{}",
        list(&plan.destroyed),
        if plan.reversible { "" } else { " (no undo)" }
    ));
    lines.push(format!("  survives:  {}", list(&plan.survives)));
    lines.push(format!("  still bills afterwards: {}", plan.still_bills));
    if let Some(rate) = plan.stops_per_hour {
        lines.push(format!(
            "  stops: {rate:.2} {}/h ({:.2} a day)",
            plan.currency,
            rate * 24.0
        ));
    }
    match last {
        None => lines.push("  pull: none on record".to_string()),
        Some(p) => {
            let good = p.files.iter().filter(|f| f.is_good()).count();
            lines.push(format!(
                "  pull #{} at {}: {good}/{} files hashed and verified, {} bytes",
                p.id,
                p.finished.format("%Y-%m-%d %H:%M UTC"),
                p.files.len(),
                p.files.iter().map(|f| f.size).sum::<u64>()
            ));
            for f in p.files.iter().take(8) {
                lines.push(format!(
                    "    {} {}  {} B  sha256 {}  {}",
                    if f.is_good() { "ok " } else { "BAD" },
                    crate::sanitize::line(&f.local_path, 120),
                    f.size,
                    f.local_sha256
                        .as_deref()
                        .map_or("-", |h| &h[..h.len().min(12)]),
                    crate::sanitize::line(f.error.as_deref().unwrap_or(&f.verification), 80)
                ));
            }
            if p.files.len() > 8 {
                lines.push(format!("    … and {} more", p.files.len() - 8));
            }
        }
    }
    if run == RunLooks::Alive {
        lines.push("  WARNING: the run still looks alive on this box".to_string());
    }
    lines.push(match &plan.method {
        Method::Command { command } => format!("  will run: {command}"),
        Method::Manual { steps } => format!("  no API: {steps}"),
        Method::Blocked { why } => format!("  cannot run: {why}"),
    });
    lines
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing named by the profile".to_string()
    } else {
        items.join(", ")
    }
}
