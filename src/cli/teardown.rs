//! `rigwatch teardown HOST`: the same guard as the dashboard's modal, at a terminal. It shows
//! what a destroy means and where the host's queue stands, refuses unless the last pull is
//! verified-current, and goes ahead only when a person types the host's name (twice over if the
//! run still looks alive or queue cells are not done). There is no flag to skip any of it.

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::eyre;
use futures::FutureExt;
use futures::future::{BoxFuture, LocalBoxFuture};
use tokio::signal::unix::{SignalKind, signal};

use super::one_host;
use crate::clocks::Profile;
use crate::clocks::profiles::find;
use crate::config::{FleetConfig, HostConfig};
use crate::fleet::memory;
use crate::ledger::DestroyOutcome;
use crate::ledger::{Ledger, PullRecord};
use crate::monitor::verified::verified_cells;
use crate::monitor::{HostProbe, probe_once};
use crate::queue::DoneRule;
use crate::runtime::once::{Judged, Probed, judge};
use crate::teardown::{
    Dialog, Effect, Ending, Event, Finished, QueueSeen, RunLooks, Stage, TeardownIo, execute,
    io_for, looks_of, queue_note, unfinished,
};
use crate::transport::LinkState;

#[derive(Debug, clap::Args)]
pub struct TeardownArgs {
    /// The host, or the `[[slurm]]` or `[[kubernetes]]` cluster, by its name in fleet.toml
    #[arg(add = clap_complete::ArgValueCandidates::new(super::complete::fleet_names))]
    pub host: String,
    /// On a cluster: the job to end through the same guard (Slurm: `scancel` on its login
    /// node; Kubernetes: `kubectl delete job` with its pods)
    #[arg(long)]
    pub job: Option<String>,
}

pub async fn run(
    fleet: &FleetConfig,
    profiles: &[Profile],
    args: &TeardownArgs,
) -> color_eyre::Result<ExitCode> {
    if let Some(cluster) = fleet.slurm.iter().find(|c| c.name == args.host) {
        return super::teardown_job::run(fleet, profiles, cluster, args.job.as_deref()).await;
    }
    if let Some(cluster) = fleet.kubernetes.iter().find(|c| c.name == args.host) {
        return super::teardown_job::run_kube(fleet, cluster, args.job.as_deref()).await;
    }
    if let Some(member) = fleet.kaggle.iter().find(|c| c.name == args.host) {
        return Err(super::usage(format!(
            "{}: {}",
            member.name,
            crate::cluster::kaggle::NOTHING_TO_TEAR_DOWN
        )));
    }
    if args.job.is_some() {
        return Err(super::usage(format!(
            "--job is for a [[slurm]] or [[kubernetes]] cluster, and {:?} is not one",
            args.host
        )));
    }
    let host = one_host::host(fleet, &args.host)?;
    find(profiles, &host.profile)
        .ok_or_else(|| eyre!("{}: unknown profile {}", host.name, host.profile))?;
    let ledger_path = crate::ledger::default_path()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME holding the ledger"))?;
    let ledger = Ledger::open(&ledger_path)?;
    for line in unfinished(&ledger_path, Some((fleet, profiles))).await {
        println!("WARNING: {line}");
    }
    // For the queue's verified cells; the dialog's own check reads the ledger again.
    let last = ledger.latest_pull(&host.name)?;
    let (pool, session) = one_host::connect(fleet, host, Duration::from_secs(30)).await?;
    let probe = probe_once(&session, host).await;
    let link = pool
        .get(&host.name)
        .map_or(LinkState::Connecting { attempt: 0 }, |l| l.state());
    let target = crate::target::Target::Box(host.name.clone());
    // One probe, judged once, as the dashboard judges each tick: the run and the queue the
    // dialog is told come from the same state.
    let judged = judge_one(fleet, profiles, host, link, probe, last.as_ref());
    let (run, mut queue) = looks_of(&judged.state, &target).unwrap_or((RunLooks::Unknown, None));
    if let (Some(_), Some(u)) = (&host.queue, judged.unread.first()) {
        queue = queue_note(QueueSeen::Unread {
            file: &u.file,
            why: Some(&u.why),
        });
    }
    let fleet = Arc::new(fleet.clone());
    let io = io_for(&target, &fleet, Some(session), profiles, Some(ledger_path))
        .map_err(|why| eyre!(why))?;
    let walked = at_terminal(target, run, queue, io.as_ref()).await;
    pool.shutdown().await;
    Ok(exit_code(walked?))
}

/// `target`'s dialog, opened the one way, walked by the person at this terminal.
pub(super) async fn at_terminal(
    target: crate::target::Target,
    run: RunLooks,
    queue: Option<crate::teardown::QueueNote>,
    io: &dyn TeardownIo,
) -> color_eyre::Result<Option<Finished>> {
    let (mut dialog, opened) = Dialog::open(target, OPENING, run, queue);
    walk(
        (&mut dialog, opened),
        io,
        &mut Terminal,
        &mut std::io::stdout(),
    )
    .await
}

/// 0 confirmed, 4 ran but not confirmed, 1 anything else (refused, failed, cancelled).
pub(super) fn exit_code(walked: Option<Finished>) -> ExitCode {
    ExitCode::from(match walked.map(|f| f.ending) {
        Some(Ending::Ran(DestroyOutcome::Confirmed)) => 0,
        Some(Ending::Ran(DestroyOutcome::Unconfirmed)) => EXIT_UNCONFIRMED,
        Some(Ending::Ran(DestroyOutcome::Failed) | Ending::Refused | Ending::Rehearsed) | None => 1,
    })
}

/// The exit status when the destroy ran without error but the provider did not confirm it.
pub const EXIT_UNCONFIRMED: u8 = 4;

/// The person at the terminal: what they type, and how a running destroy is waited for.
pub(super) trait Person {
    /// Whether a person can type at all (stdin is a terminal).
    fn present(&self) -> bool;
    /// The line typed after `prompt`.
    fn answer(&mut self, prompt: &str, out: &mut dyn Write) -> std::io::Result<String>;
    /// Waits for the destroy, whatever the person does meanwhile.
    fn wait<'a>(
        &'a mut self,
        destroy: BoxFuture<'a, Event>,
        out: &'a mut dyn Write,
    ) -> LocalBoxFuture<'a, std::io::Result<Event>>;
}

pub(super) struct Terminal;

impl Person for Terminal {
    fn present(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    fn answer(&mut self, prompt: &str, out: &mut dyn Write) -> std::io::Result<String> {
        write!(out, "{prompt}")?;
        out.flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        Ok(line)
    }

    /// SIGTERM and SIGHUP are noted and rigwatch exits once the outcome is recorded (the
    /// destroy is bounded by its timeout and the confirm window). A first Ctrl-C says how to
    /// stop waiting; a second stops at once: the command goes on in its own process group, and
    /// its intent stays without an outcome for the next start to report.
    fn wait<'a>(
        &'a mut self,
        destroy: BoxFuture<'a, Event>,
        out: &'a mut dyn Write,
    ) -> LocalBoxFuture<'a, std::io::Result<Event>> {
        async move {
            let mut term = signal(SignalKind::terminate())?;
            let mut hup = signal(SignalKind::hangup())?;
            let mut int = signal(SignalKind::interrupt())?;
            let mut destroy = destroy;
            let mut interrupted = false;
            let waits = "a destroy is running: rigwatch exits once it has ended and its outcome \
                         is recorded";
            loop {
                tokio::select! {
                    event = &mut destroy => return Ok(event),
                    _ = term.recv() => say(out, &format!("SIGTERM: {waits}")),
                    _ = hup.recv() => say(out, &format!("SIGHUP: {waits}")),
                    _ = int.recv() => {
                        if interrupted {
                            say(out, "stopped waiting: the destroy goes on by itself and its \
                                      outcome is not recorded; the next start of rigwatch says \
                                      so; check the provider");
                            std::process::exit(130);
                        }
                        interrupted = true;
                        say(out, "a destroy is running: press Ctrl-C again to stop waiting \
                                  (the command goes on)");
                    }
                }
            }
        }
        .boxed_local()
    }
}

/// A line for the person, once the destroy has started: after a SIGHUP the terminal may be gone,
/// and a failed write must not stop rigwatch before the outcome is recorded.
fn say(out: &mut dyn Write, line: &str) {
    let _ = writeln!(out, "{line}");
}

/// The host after this one probe, judged the way `rigwatch roster` and the dashboard judge it,
/// with the cells the last pull verified. Only this host is probed, so a collision with another
/// box's queue is not seen here.
fn judge_one(
    fleet: &FleetConfig,
    profiles: &[Profile],
    host: &HostConfig,
    link: LinkState,
    probe: HostProbe,
    last: Option<&PullRecord>,
) -> Judged {
    let memory = memory::load(memory::path().as_deref());
    let verified = host
        .queue
        .as_ref()
        .zip(last)
        .map(|(config, p)| verified_cells(p, &config.final_dir, &DoneRule::default()))
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
    judge(
        &this_host,
        profiles,
        &memory,
        verified,
        probed,
        chrono::Utc::now(),
    )
}

/// The CLI's one opening of the dialog.
pub(super) const OPENING: u64 = 1;

/// Walks the dialog at the terminal: its check, the words, the refusal or the typed name (and
/// the second confirmation where one is asked), the final look, the destroy. Some(what the
/// destroy said) once it ran; it is printed whether or not its outcome could be recorded.
pub(super) async fn walk(
    (dialog, opened): (&mut Dialog, Vec<Effect>),
    io: &dyn TeardownIo,
    person: &mut dyn Person,
    out: &mut dyn Write,
) -> color_eyre::Result<Option<Finished>> {
    carry_out(dialog, io, opened, person, out).await?;
    for line in dialog.words().lines() {
        writeln!(out, "{line}")?;
    }
    if let Some(note) = dialog.queue() {
        let warn = if note.looks.needs_second_confirm() {
            "WARNING: "
        } else {
            ""
        };
        writeln!(out, "  {warn}{}", note.line)?;
    }
    if let Stage::Refused(why) = dialog.stage() {
        writeln!(out, "REFUSED: not until:")?;
        for w in why {
            writeln!(out, "  - {w}")?;
        }
        return Ok(None);
    }
    if !person.present() {
        writeln!(
            out,
            "REFUSED: confirming a teardown needs a person at a terminal typing its name; there is \
             no flag for it"
        )?;
        return Ok(None);
    }
    let name = person.answer(
        &format!("{} (anything else cancels): ", dialog.confirm_prompt()),
        out,
    )?;
    dialog.handle(Event::Name(name.trim_end_matches(['\r', '\n']).to_string()));
    let mut effects = dialog.handle(Event::Confirm);
    loop {
        carry_out(dialog, io, effects, person, out).await?;
        match dialog.stage() {
            Stage::Finished(finished) => {
                for line in &finished.output {
                    say(out, line);
                }
                say(out, &finished.last);
                return Ok(Some(finished.clone()));
            }
            Stage::AwaitingSecondConfirm => {
                let prompt = format!(
                    "Careful: {}. Press Enter to {} it anyway, anything else cancels: ",
                    dialog.cautions().join("; "),
                    dialog.target().kind().teardown_verb()
                );
                if !person.answer(&prompt, out)?.trim().is_empty() {
                    dialog.handle(Event::Cancel);
                    writeln!(out, "cancelled")?;
                    return Ok(None);
                }
                effects = dialog.handle(Event::Confirm);
            }
            _ => {
                writeln!(out, "REFUSED:")?;
                for w in dialog.messages() {
                    writeln!(out, "  - {w}")?;
                }
                return Ok(None);
            }
        }
    }
}

/// Runs the dialog's effects through the one executor until it asks for nothing more, saying
/// what the final look costs and what the destroy runs before each starts.
async fn carry_out(
    dialog: &mut Dialog,
    io: &dyn TeardownIo,
    effects: Vec<Effect>,
    person: &mut dyn Person,
    out: &mut dyn Write,
) -> color_eyre::Result<()> {
    let mut pending = VecDeque::from(effects);
    while let Some(effect) = pending.pop_front() {
        let event = match effect {
            Effect::Check { .. } => execute(io, effect).await,
            Effect::FinalCheck { .. } => {
                let words = &dialog.words().final_check;
                if !words.is_empty() {
                    writeln!(out, "{words}…")?;
                }
                let started = std::time::Instant::now();
                let event = execute(io, effect).await;
                let took = started.elapsed().as_secs_f64();
                writeln!(out, "final check: done in {took:.1}s")?;
                event
            }
            Effect::Destroy { .. } => {
                if let Some(command) = &dialog.words().command {
                    say(out, &format!("running: {command}"));
                }
                person.wait(execute(io, effect).boxed(), out).await?
            }
        };
        pending.extend(dialog.handle(event));
    }
    Ok(())
}

#[cfg(test)]
#[path = "teardown_tests.rs"]
mod tests;
