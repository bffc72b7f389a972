//! `rigwatch profiles [show NAME]`: the platform facts rigwatch works from, in plain words.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::clocks::Profile;
use crate::clocks::profiles::find;

#[derive(Debug, clap::Args)]
pub struct ProfilesArgs {
    #[command(subcommand)]
    pub command: Option<ProfilesCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum ProfilesCommand {
    /// Explain one profile: stop, destroy, what survives and bills, timers, commands
    Show { name: String },
}

pub fn run(profiles: &[Profile], args: &ProfilesArgs) -> ExitCode {
    match &args.command {
        None => {
            print!("{}", table(profiles));
            ExitCode::SUCCESS
        }
        Some(ProfilesCommand::Show { name }) => match find(profiles, name) {
            Some(p) => {
                print!("{}", explain(p));
                ExitCode::SUCCESS
            }
            None => {
                let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
                eprintln!(
                    "rigwatch: no profile named {name:?}; there are: {}",
                    names.join(", ")
                );
                ExitCode::from(2)
            }
        },
    }
}

fn stop_word(p: &Profile) -> String {
    match (&p.stop.verb, p.stop.exists, p.stop.reversible) {
        (_, false, _) => "no stop state".into(),
        (Some(verb), true, Some(true)) => format!("{verb} (reversible)"),
        (Some(verb), true, _) => format!("{verb} (not reversible)"),
        (None, true, _) => "stop".into(),
    }
}

fn timers(p: &Profile) -> Vec<String> {
    let t = &p.timers;
    let mut out = Vec::new();
    if let Some(d) = t.auto_release_days_after_stop {
        out.push(format!("released {d} days after stop"));
    }
    if let Some(m) = t.idle_timeout_minutes {
        out.push(format!("idle timeout {m} min"));
    }
    if let Some(h) = t.max_session_hours {
        out.push(format!("session max {h} h"));
    }
    if let Some(h) = t.weekly_gpu_hours {
        out.push(format!("{h} GPU-hours a week"));
    }
    if t.walltime == Some(true) {
        out.push("walltime".into());
    }
    if t.lifetime_end == Some(true) {
        out.push("auto-stop at the host's lifetime end (date from the provider's CLI)".into());
    }
    out
}

pub fn table(profiles: &[Profile]) -> String {
    let mut out = format!(
        "{:12}  {:26}  {:40}  TIMERS\n",
        "PROFILE", "STOP", "BILLS WHILE STOPPED"
    );
    for p in profiles {
        let bills = if p.stop.exists {
            p.stop.bills.clone().unwrap_or_else(|| "?".into())
        } else {
            "-".into()
        };
        let bills = crate::sanitize::fit(&bills, 40);
        let stop = crate::sanitize::fit(&stop_word(p), 26);
        let timers = timers(p);
        let _ = writeln!(
            out,
            "{:12}  {:26}  {:40}  {}",
            p.name,
            stop,
            bills,
            if timers.is_empty() {
                "-".into()
            } else {
                timers.join(", ")
            }
        );
    }
    out
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing listed".into()
    } else {
        items.join("; ")
    }
}

pub fn explain(p: &Profile) -> String {
    let mut out = format!("{} ({}): {}\n\n", p.title, p.name, p.summary);
    if p.stop.exists {
        let _ = writeln!(
            out,
            "Stop ({}): {}. Survives: {}. Lost: {}.\n  While stopped it still bills: {}.",
            p.stop.verb.as_deref().unwrap_or("stop"),
            if p.stop.reversible == Some(true) {
                "reversible, the box can be started again"
            } else {
                "NOT reversible"
            },
            list(&p.stop.survives),
            list(&p.stop.lost),
            p.stop.bills.as_deref().unwrap_or("not documented")
        );
    } else {
        let _ = writeln!(
            out,
            "Stop: none on this platform; {}.",
            p.stop
                .bills
                .as_deref()
                .unwrap_or("the box runs until destroyed")
        );
    }
    let _ = writeln!(
        out,
        "Destroy ({}): {}. Survives: {}. Lost: {}.\n  After destroy it still bills: {}.",
        p.destroy.verb,
        if p.destroy.reversible {
            "reversible"
        } else {
            "NOT reversible"
        },
        list(&p.destroy.survives),
        list(&p.destroy.lost),
        p.destroy.bills
    );
    if !p.durable_paths.is_empty() {
        let _ = writeln!(out, "Durable paths: {}", p.durable_paths.join(", "));
    }
    let timers = timers(p);
    let _ = writeln!(
        out,
        "Timers: {}",
        if timers.is_empty() {
            "none documented".into()
        } else {
            timers.join("; ")
        }
    );
    for cap in &p.inode_caps {
        let _ = writeln!(
            out,
            "Inode cap: {} holds at most {} files",
            cap.path, cap.inodes
        );
    }
    for (what, cmd) in [
        ("list", &p.commands.list),
        ("stop", &p.commands.stop),
        ("destroy", &p.commands.destroy),
    ] {
        if let Some(cmd) = cmd {
            let _ = writeln!(out, "Command to {what}: {cmd}");
        }
    }
    if !p.warnings.is_empty() {
        out.push_str("Warnings:\n");
        for w in &p.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}
