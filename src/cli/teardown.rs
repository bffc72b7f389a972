//! `rigwatch teardown HOST`: the same guard as the dashboard's modal, at a terminal. It shows
//! what a destroy means and where the host's queue stands, refuses unless the last pull is
//! verified-current, and goes ahead only when a person types the host's name (twice over if the
//! run still looks alive or queue cells are not done). There is no flag to skip any of it.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use color_eyre::eyre::eyre;
use tokio::signal::unix::{SignalKind, signal};

use super::one_host;
use crate::clocks::Profile;
use crate::clocks::profiles::find;
use crate::config::{FleetConfig, HostConfig};
use crate::fleet::memory;
use crate::ledger::DestroyOutcome;
use crate::ledger::{Ledger, PullRecord};
use crate::monitor::verified::verified_cells;
use crate::monitor::{HostProbe, probe_once, run_state_of};
use crate::pull::{Currentness, Depth, check_host};
use crate::queue::DoneRule;
use crate::runtime::once::{Probed, judge};
use crate::sanitize::mask_secrets;
use crate::teardown::{
    Confirming, DestroyReport, Guard, GuardEvent, GuardOutcome, Method, QueueLooks, QueueNote,
    RunLooks, describe, destroy, final_check_line, plan, plan_looks, queue_note, unfinished,
};
use crate::transport::LinkState;

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
    let plan = plan(host, profile, &fleet.providers);
    let ledger_path = crate::ledger::default_path()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME holding the ledger"))?;
    let ledger = Ledger::open(&ledger_path)?;
    for line in unfinished(&ledger_path, Some((fleet, profiles))).await {
        println!("WARNING: {line}");
    }
    let last = ledger.latest_pull(&host.name)?;
    let (pool, session) = one_host::connect(fleet, host, Duration::from_secs(30)).await?;
    let mut guard = Guard::new(&host.name, OPENING);
    guard.handle(GuardEvent::Plan(
        plan_looks(&plan, host, profile, fleet).await,
    ));
    guard.handle(GuardEvent::Checked {
        opening: OPENING,
        currentness: check_host(Some(&session), host, last.as_ref(), Depth::Stat).await,
    });
    let probe = probe_once(&session, host).await;
    let now = chrono::Utc::now();
    let run = RunLooks::of(&run_state_of(&probe, host, &fleet.thresholds, now));
    guard.handle(GuardEvent::RunLooks(run));
    for line in describe(&plan, last.as_ref(), run).lines() {
        println!("{line}");
    }
    let link = pool
        .get(&host.name)
        .map_or(LinkState::Connecting { attempt: 0 }, |l| l.state());
    if let Some(note) = queue_of(fleet, host, link, probe, last.as_ref(), now) {
        guard.handle(GuardEvent::Queue(note.looks));
        if note.looks.needs_second_confirm() {
            println!("  WARNING: {}", note.line);
        } else {
            println!("  {}", note.line);
        }
    }
    let exit = confirm(&mut guard, || async {
        if let Some(last) = &last {
            println!("{}…", final_check_line(last));
        }
        let started = std::time::Instant::now();
        let judged = check_host(Some(&session), host, last.as_ref(), Depth::Content).await;
        println!(
            "final check: done in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        judged
    })
    .await;
    pool.shutdown().await;
    let Some(pull_id) = exit? else {
        return Ok(ExitCode::from(1));
    };
    if let Method::Command { command } = &plan.method {
        println!("running: {}", mask_secrets(command));
    }
    let confirming = Confirming::for_host(profile, fleet);
    let report = wait_for(destroy(
        host,
        &plan.method,
        pull_id,
        &ledger_path,
        &confirming,
    ))
    .await?;
    for line in &report.output {
        say(line);
    }
    say(&report.last_line());
    Ok(ExitCode::from(match report.word() {
        Some(DestroyOutcome::Confirmed) => 0,
        Some(DestroyOutcome::Unconfirmed) => EXIT_UNCONFIRMED,
        Some(DestroyOutcome::Failed) | None => 1,
    }))
}

/// The exit status when the destroy ran without error but the provider did not confirm it.
pub const EXIT_UNCONFIRMED: u8 = 4;

/// Waits for the destroy whatever arrives meanwhile. SIGTERM and SIGHUP are noted and rigwatch
/// exits once the outcome is recorded (the destroy is bounded by its timeout and the confirm
/// window). A first Ctrl-C says how to stop waiting; a second stops at once: the command goes
/// on in its own process group, and its intent stays without an outcome for the next start to
/// report.
async fn wait_for(
    destroy: impl std::future::Future<Output = DestroyReport>,
) -> std::io::Result<DestroyReport> {
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::pin!(destroy);
    let mut interrupted = false;
    let waits =
        "a destroy is running: rigwatch exits once it has ended and its outcome is recorded";
    loop {
        tokio::select! {
            report = &mut destroy => return Ok(report),
            _ = term.recv() => say(&format!("SIGTERM: {waits}")),
            _ = hup.recv() => say(&format!("SIGHUP: {waits}")),
            _ = int.recv() => {
                if interrupted {
                    say("stopped waiting: the destroy goes on by itself and its outcome is not \
                         recorded; the next start of rigwatch says so; check the provider");
                    std::process::exit(130);
                }
                interrupted = true;
                say("a destroy is running: press Ctrl-C again to stop waiting (the command goes on)");
            }
        }
    }
}

/// A line for the person, once the destroy has started: after a SIGHUP the terminal may be gone,
/// and a failed write must not stop rigwatch before the outcome is recorded.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// Where the host's queue stands, from this probe reconciled the way `rigwatch roster` does it,
/// with the cells the last pull verified. Only this host is probed, so a collision with another
/// box's queue is not seen here.
fn queue_of(
    fleet: &FleetConfig,
    host: &HostConfig,
    link: LinkState,
    probe: HostProbe,
    last: Option<&PullRecord>,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<QueueNote> {
    let config = host.queue.as_ref()?;
    let memory = memory::load(memory::path().as_deref());
    let verified = last
        .map(|p| verified_cells(p, &config.final_dir, &DoneRule::default()))
        .map(|cells| [(host.name.clone(), cells)].into())
        .unwrap_or_default();
    let this_host = FleetConfig {
        hosts: vec![host.clone()],
        ..fleet.clone()
    };
    let probed = Probed {
        links: vec![(host.name.clone(), link)],
        probes: vec![Some(probe)],
        providers: Vec::new(),
        timeout_secs: 30.0,
    };
    let judged = judge(&this_host, &[], &memory, verified, probed, now);
    if let Some(u) = judged.unread.first() {
        return Some(QueueNote {
            looks: QueueLooks::Unread,
            line: format!(
                "queue: {} not read ({}), so none of its cells is accounted for",
                crate::sanitize::line(&u.file, 200),
                crate::sanitize::line(&u.why, 300)
            ),
        });
    }
    queue_note(true, judged.state.queue_summary(&host.name))
}

/// The CLI's one opening of the dialog.
const OPENING: u64 = 1;

/// Walks the guard with what the person types; Some(pull id) when it fired. `check` takes the
/// fresh look the guard asks for after the last confirmation.
async fn confirm<F, Fut>(guard: &mut Guard, check: F) -> color_eyre::Result<Option<i64>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Currentness>,
{
    let blockers = guard.blockers();
    if !blockers.is_empty() {
        println!("REFUSED: not until:");
        for why in blockers {
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
    let mut outcome = guard.handle(GuardEvent::Confirm);
    loop {
        outcome = match outcome {
            GuardOutcome::Fire { pull_id } => return Ok(Some(pull_id)),
            GuardOutcome::NeedsSecondConfirm => {
                print!(
                    "Careful: {}. Press Enter to destroy it anyway, anything else cancels: ",
                    guard.cautions().join("; ")
                );
                std::io::stdout().flush()?;
                line.clear();
                stdin.lock().read_line(&mut line)?;
                if !line.trim().is_empty() {
                    println!("cancelled");
                    return Ok(None);
                }
                guard.handle(GuardEvent::Confirm)
            }
            // The box may have changed while the person typed or read: one more look, after
            // the last confirmation, right before acting.
            GuardOutcome::TakeFinalCheck => guard.handle(GuardEvent::FinalChecked {
                opening: OPENING,
                currentness: check().await,
            }),
            GuardOutcome::Refused(why) => {
                println!("REFUSED:");
                for w in why {
                    println!("  - {w}");
                }
                return Ok(None);
            }
            GuardOutcome::Nothing | GuardOutcome::Closed => return Ok(None),
        };
    }
}
