//! `rigwatch teardown HOST`: the same guard as the dashboard's modal, at a terminal. It shows
//! what a destroy means, refuses unless the last pull is verified-current, and goes ahead only
//! when a person types the host's name (twice over if the run still looks alive). There is no
//! flag to skip any of it.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use color_eyre::eyre::eyre;

use super::one_host;
use crate::clocks::Profile;
use crate::clocks::profiles::find;
use crate::config::FleetConfig;
use crate::ledger::Ledger;
use crate::monitor::run_state_once;
use crate::pull::{Currentness, check_host};
use crate::teardown::{
    Guard, GuardEvent, GuardOutcome, Method, RunLooks, carry_out, describe, plan,
};

#[derive(Debug, clap::Args)]
pub struct TeardownArgs {
    /// The host, by its name in fleet.toml
    pub host: String,
}

pub async fn run(
    fleet: &FleetConfig,
    profiles: &[Profile],
    args: &TeardownArgs,
) -> color_eyre::Result<ExitCode> {
    let host = one_host::host(fleet, &args.host)?;
    let profile = find(profiles, &host.profile)
        .ok_or_else(|| eyre!("{}: unknown profile {}", host.name, host.profile))?;
    let plan = plan(host, profile);
    let ledger_path = crate::ledger::default_path()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME holding the ledger"))?;
    let ledger = Ledger::open(&ledger_path)?;
    let last = ledger.latest_pull(&host.name)?;
    let (pool, session) = one_host::connect(fleet, host, Duration::from_secs(30)).await?;
    let mut guard = Guard::new(&host.name);
    guard.handle(GuardEvent::Checked(
        check_host(Some(&session), host, last.as_ref()).await,
    ));
    let run = RunLooks::of(&run_state_once(&session, host, &fleet.thresholds).await);
    guard.handle(GuardEvent::RunLooks(run));
    for line in describe(&plan, last.as_ref(), run) {
        println!("{line}");
    }
    let exit = confirm(&mut guard, &plan.method, || {
        check_host(Some(&session), host, last.as_ref())
    })
    .await;
    pool.shutdown().await;
    let Some(pull_id) = exit? else {
        return Ok(ExitCode::from(1));
    };
    if let Method::Command { command } = &plan.method {
        println!("running: {command}");
    }
    let (record, ok) = carry_out(host, &plan.method, pull_id).await;
    ledger.record_teardown(&record)?;
    println!("{}", record.output);
    println!(
        "{}: recorded in {}",
        if ok {
            "done"
        } else {
            "THE DESTROY COMMAND FAILED"
        },
        ledger.path().display()
    );
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Walks the guard with what the person types; Some(pull id) when it fired.
async fn confirm<F, Fut>(
    guard: &mut Guard,
    method: &Method,
    check: F,
) -> color_eyre::Result<Option<i64>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Currentness>,
{
    if let Method::Blocked { why } = method {
        println!("REFUSED: {why}");
        return Ok(None);
    }
    let not_current: Vec<String> = match guard.pull() {
        Some(Currentness::NotCurrent(why)) => why.iter().map(ToString::to_string).collect(),
        _ => Vec::new(),
    };
    if !not_current.is_empty() {
        println!("REFUSED: the last pull is not verified-current:");
        for why in not_current {
            println!("  - {why}");
        }
        return Ok(None);
    }
    if !std::io::stdin().is_terminal() {
        println!(
            "REFUSED: confirming a teardown needs a person at a terminal typing the host's name; \
             there is no flag for it"
        );
        return Ok(None);
    }
    let stdin = std::io::stdin();
    let mut line = String::new();
    print!("Type the host's name to destroy it (anything else cancels): ");
    std::io::stdout().flush()?;
    stdin.lock().read_line(&mut line)?;
    for c in line.trim_end_matches(['\r', '\n']).chars() {
        guard.handle(GuardEvent::Key(c));
    }
    // The box may have changed while the person typed: look once more right before acting.
    guard.handle(GuardEvent::Checked(check().await));
    loop {
        match guard.handle(GuardEvent::Confirm) {
            GuardOutcome::Fire { pull_id } => return Ok(Some(pull_id)),
            GuardOutcome::NeedsSecondConfirm => {
                print!(
                    "The run still looks alive. Press Enter to destroy it anyway, anything else \
                     cancels: "
                );
                std::io::stdout().flush()?;
                line.clear();
                stdin.lock().read_line(&mut line)?;
                if !line.trim().is_empty() {
                    println!("cancelled");
                    return Ok(None);
                }
            }
            GuardOutcome::Refused(why) => {
                println!("REFUSED:");
                for w in why {
                    println!("  - {w}");
                }
                return Ok(None);
            }
            GuardOutcome::Nothing | GuardOutcome::Closed => return Ok(None),
        }
    }
}
