//! The words of the teardown dialog, shared by the dashboard's modal and `rigwatch teardown`:
//! what will be destroyed, what survives, the pull it relies on, the money it stops, the command.

use super::facts::RunLooks;
use super::plan::{Method, TeardownPlan};
use crate::config::FinalCheck;
use crate::ledger::PullRecord;
use crate::target::Target;

/// The dialog's words in three parts: what the destroy means (`head`), every file of the pull
/// it relies on, failing ones first (`files`, which a small screen scrolls), and what will run
/// (`action`, which is always shown). Everything that came from a box is sanitized here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Description {
    pub head: Vec<String>,
    pub files: Vec<String>,
    pub action: String,
    /// What the check after the last confirmation does and how long it may take, said before
    /// it starts (empty without a pull).
    pub final_check: String,
    /// The destroy command as it will be said to run (secrets masked); None when no command runs.
    pub command: Option<String>,
}

/// The final check's cost in words: it re-hashes every proven file on the box, with the box's
/// own tools (whose word it takes: said, so no one reads more into the check than it proves),
/// or, strict, streams every byte home at the rate the last pull measured.
pub fn final_check_line(last: &PullRecord, check: FinalCheck) -> String {
    let cost = crate::pull::final_check_cost(last);
    let size = humansize::format_size(cost.bytes, humansize::BINARY);
    match check {
        FinalCheck::OnBox => format!(
            "final check, after you confirm: {} files ({size}) re-hashed by the box's own \
             sha256sum/openssl, compared with the pull: ~{:.1}s ({:.1}s without openssl)",
            cost.files,
            cost.likely.as_secs_f64(),
            cost.at_most.as_secs_f64()
        ),
        FinalCheck::Strict => format!(
            "final check (strict), after you confirm: {} files ({size}) streamed home and hashed \
             here, no hashing tool of the box trusted; {}",
            cost.files,
            match last_rate(last) {
                Some(rate) => format!(
                    "about {:.1}s at the {}/s the last pull measured",
                    cost.bytes as f64 / rate,
                    humansize::format_size(rate as u64, humansize::BINARY)
                ),
                None => "how long depends on the link: no rate measured yet".to_string(),
            }
        ),
    }
}

/// Bytes a second the last pull moved over the link, where it moved enough to tell.
fn last_rate(last: &PullRecord) -> Option<f64> {
    let sent: u64 = last.files.iter().map(|f| f.sent).sum();
    let took = (last.finished - last.started).to_std().ok()?.as_secs_f64();
    (sent >= 1 << 20 && took > 0.0).then(|| sent as f64 / took)
}

impl Description {
    /// Every line, for a terminal that scrolls by itself (the CLI).
    pub fn lines(&self) -> Vec<String> {
        let mut lines = self.head.clone();
        lines.extend(self.files.iter().cloned());
        lines.push(self.action.clone());
        lines
    }
}

pub fn describe(
    plan: &TeardownPlan,
    last: Option<&PullRecord>,
    run: RunLooks,
    check: FinalCheck,
) -> Description {
    let clean = |s: &str, n| crate::sanitize::line(s, n);
    let mut head = vec![match &plan.target {
        Target::Box(host) => format!(
            "Destroy {host} ({}{})",
            plan.platform,
            plan.instance_id
                .as_deref()
                .map(|i| format!(", instance {}", clean(i, 80)))
                .unwrap_or_default()
        ),
        // "Cancel Slurm job 4242 on hpc", "Delete Kubernetes Job train on gke".
        job => {
            let verb = job.kind().teardown_verb();
            let mut verb_cap = verb[..1].to_uppercase();
            verb_cap.push_str(&verb[1..]);
            format!("{verb_cap} {}", clean(&job.to_string(), 200))
        }
    }];
    head.push(format!(
        "  destroyed: {}{}",
        list(&plan.destroyed),
        if plan.reversible { "" } else { " (no undo)" }
    ));
    head.push(format!("  survives:  {}", list(&plan.survives)));
    head.push(format!("  still bills afterwards: {}", plan.still_bills));
    if let Some(rate) = plan.stops_per_hour {
        head.push(format!(
            "  stops: {rate:.2} {}/h ({:.2} a day)",
            plan.currency,
            rate * 24.0
        ));
    }
    if run == RunLooks::Alive {
        head.push(format!("  WARNING: {}", plan.target.kind().still_alive()));
    }
    let mut files = Vec::new();
    let final_check = last.map(|l| final_check_line(l, check)).unwrap_or_default();
    match last {
        None => head.push("  pull: none on record".to_string()),
        Some(p) => {
            let good = p.files.iter().filter(|f| f.is_good()).count();
            head.push(format!(
                "  pull #{} at {}: {good}/{} files hashed and verified, {} bytes",
                p.id,
                p.finished.format("%Y-%m-%d %H:%M UTC"),
                p.files.len(),
                p.files.iter().map(|f| f.size).sum::<u64>()
            ));
            head.push(format!("  {final_check}"));
            let mut sorted: Vec<_> = p.files.iter().collect();
            sorted.sort_by_key(|f| (f.is_good(), f.remote_path.clone()));
            files = sorted
                .into_iter()
                .map(|f| {
                    format!(
                        "    {:<8} {}  {} B  sha256 {}  {}",
                        f.outcome().word(),
                        clean(
                            if f.local_path.is_empty() {
                                &f.remote_path
                            } else {
                                &f.local_path
                            },
                            120
                        ),
                        f.size,
                        f.local_sha256
                            .as_deref()
                            .map_or("-".to_string(), |h| clean(&h[..h.len().min(12)], 12)),
                        clean(f.error.as_deref().unwrap_or(&f.verification), 120)
                    )
                })
                .collect();
        }
    }
    let command = match &plan.method {
        Method::Command { command } | Method::OnHost { command } => {
            Some(crate::sanitize::mask_secrets(&clean(command, 300)))
        }
        Method::Manual { .. } | Method::Blocked { .. } => None,
    };
    let action = match &plan.method {
        Method::Command { .. } => format!("  will run: {}", command.as_deref().unwrap_or_default()),
        Method::OnHost { .. } => format!(
            "  will run on {}: {}",
            clean(&plan.host, 64),
            command.as_deref().unwrap_or_default()
        ),
        Method::Manual { steps } => format!("  no API: {steps}"),
        Method::Blocked { why } => format!("  cannot run: {why}"),
    };
    Description {
        head,
        files,
        action,
        final_check,
        command,
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing named by the profile".to_string()
    } else {
        items.join(", ")
    }
}
