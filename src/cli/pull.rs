//! `rigwatch pull HOST`: the host's results copied home, hashed, verified and recorded in the
//! ledger, with a progress bar on a terminal. Exit 0 when every file is good, 1 otherwise, 75
//! when another action held the host (`--no-wait`, or a teardown or kill of it running).
//! `rigwatch pull CLUSTER --job NAME` on a `[[kubernetes]]` cluster: the same, from the Job's
//! running pod through `kubectl exec`. `rigwatch pull MEMBER --job OWNER/SLUG` on a
//! `[[kaggle]]` member: the kernel's latest commit output, through `kaggle kernels output`.
//! Where a dashboard or `watch` of the same fleet file holds the box's connection, the pull
//! runs there and this process shows it (`runtime::control`): no handshake, no login.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use color_eyre::eyre::eyre;
use humansize::{BINARY, format_size};

use super::one_host;
use crate::cluster::Scheduler;
use crate::config::FleetConfig;
use crate::ledger::locks::{self, Act, Busy, Held};
use crate::ledger::{Ledger, PulledFile};
use crate::pull::kaggle::pull_kernel_and_record;
use crate::pull::setup::{Source, setup};
use crate::pull::{Progress, Pulled, pull_and_record, pull_job_and_record};
use crate::runtime::control::{self, Served};
use crate::target::Target;

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The host, or the cluster, by its name in fleet.toml
    #[arg(add = clap_complete::ArgValueCandidates::new(super::complete::fleet_names))]
    pub host: String,
    /// On a [[kubernetes]] cluster: the Job whose running pod holds the results; on a
    /// [[kaggle]] member: the kernel (owner/slug) whose latest commit's output to bring home
    #[arg(long, value_name = "NAME")]
    pub job: Option<String>,
    /// Seconds to wait for the host's link
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = crate::config::typed::seconds)]
    pub timeout: Duration,
    /// When another pull of the same host runs, exit at once (status 75) instead of waiting
    #[arg(long)]
    pub no_wait: bool,
}

/// The exit status of a pull that did not start because another action held its target: a
/// pull it would not wait for (`--no-wait`), or a teardown or kill (a pull never waits for
/// those). EX_TEMPFAIL: try again later.
pub const BUSY: u8 = 75;

pub async fn run(fleet: &FleetConfig, args: &PullArgs) -> color_eyre::Result<ExitCode> {
    let kube = fleet
        .kubernetes
        .iter()
        .find(|c| c.name == args.host)
        .map(|c| {
            (
                c.name.as_str(),
                Scheduler::Kubernetes,
                "the Job to pull from",
            )
        });
    let kaggle = fleet.kaggle.iter().find(|c| c.name == args.host).map(|c| {
        (
            c.name.as_str(),
            Scheduler::Kaggle,
            "the kernel (owner/slug) whose output to pull",
        )
    });
    let target = match (kube.or(kaggle), args.job.as_deref()) {
        (Some((name, scheduler, _)), Some(job)) => Target::job(name, scheduler, job),
        (Some((name, scheduler, what)), None) => {
            return Err(super::usage(format!(
                "{name} is a {} member: name {what} with --job NAME",
                scheduler.word()
            )));
        }
        (None, Some(_)) => {
            return Err(super::usage(format!(
                "--job is for a [[kubernetes]] or [[kaggle]] member, and {:?} is not one",
                crate::sanitize::line(&args.host, 80)
            )));
        }
        // A name the fleet lacks says which there are.
        (None, None) => Target::Box(one_host::host(fleet, &args.host)?.name.clone()),
    };
    // What the pull takes is decided where the dashboard's `p` decides it.
    let set = setup(fleet, &target).map_err(|no| match no.example() {
        Some(example) => eyre!(
            "{no}, in {}; for example:\n\n{example}",
            fleet.path.display()
        ),
        None => eyre!("{no}"),
    })?;
    if let Some(note) = set.spec.verify.deprecation(&set.key) {
        eprintln!("{}", crate::sanitize::line(&note, 400));
    }
    let progress = Arc::new(Progress::default());
    if let Source::Member(host) = set.source {
        // A dashboard or `watch` of this fleet lends its connection, where one runs.
        let drawing = draw(&progress);
        let served = control::ask(&fleet.path, host, &progress).await;
        drawing.finish();
        match served {
            Served::Pulled(pulled) => {
                return ended(&pulled.into(), &open_ledger()?, &set.spec.dest);
            }
            Served::Failed(why) => return Err(eyre!("{why}")),
            Served::No(why) => tracing::debug!(host = host.name, "pull not served: {why}"),
        }
    }
    let held = match hold(&set.key, &set.what, args.no_wait).await? {
        Ok(held) => held,
        Err(busy) => return Ok(busy),
    };
    let mut ledger = open_ledger()?;
    let result = match set.source {
        Source::Member(host) => {
            let timeout = args.timeout;
            let (pool, session) = one_host::connect(fleet, host, timeout).await?;
            let drawing = draw(&progress);
            let result =
                pull_and_record(&session, host, set.spec, &mut ledger, progress, &held).await;
            drawing.finish();
            pool.shutdown().await;
            result
        }
        Source::Job(cluster, job) => {
            let drawing = draw(&progress);
            let result =
                pull_job_and_record(cluster, job, set.spec, &mut ledger, progress, &held).await;
            drawing.finish();
            result
        }
        Source::Kaggle(member, kernel) => {
            let drawing = draw(&progress);
            let result =
                pull_kernel_and_record(member, kernel, set.spec, &mut ledger, progress, &held)
                    .await;
            drawing.finish();
            result
        }
    };
    ended(&result?, &ledger, &set.spec.dest)
}

fn open_ledger() -> color_eyre::Result<Ledger> {
    let path = crate::ledger::default_path()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME to keep the ledger in"))?;
    Ok(Ledger::open(&path)?)
}

/// The target's lock for this pull (`ledger::locks`): waited for while another pull holds it
/// (said once on stderr), unless `no_wait`; Err(exit status) when it did not start.
async fn hold(key: &str, what: &str, no_wait: bool) -> color_eyre::Result<Result<Held, ExitCode>> {
    let dir = locks::default_dir()
        .ok_or_else(|| eyre!("no home or XDG_STATE_HOME to keep the locks in"))?;
    let mut waiting = |busy: &Busy| eprintln!("{busy}; waiting (Ctrl-C to stop)");
    match locks::take(&dir, key, Act::Pull, what, !no_wait, &mut waiting).await {
        Ok(held) => Ok(Ok(held)),
        Err(e @ Busy::Io { .. }) => Err(eyre!("{e}")),
        Err(busy) => {
            eprintln!("pull of {what} not started: {busy}");
            Ok(Err(ExitCode::from(BUSY)))
        }
    }
}

/// The pull's files, a line each, read back from the ledger one at a time (a 100 000-file
/// pull is never held whole), and what they came to.
fn ended(pulled: &Pulled, ledger: &Ledger, dest: &std::path::Path) -> color_eyre::Result<ExitCode> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let t = &pulled.tally;
    writeln!(
        out,
        "pull #{} of {} into {}: {} files, {}",
        pulled.id,
        pulled.host,
        dest.display(),
        t.files,
        format_size(t.bytes, BINARY)
    )?;
    for p in &pulled.unmatched {
        writeln!(out, "  MISSING  {p}: matched nothing on the box")?;
    }
    let mut written = Ok(());
    ledger.each_file(pulled.id, |f| {
        if written.is_ok() {
            written = writeln!(out, "{}", file_line(&f));
        }
    })?;
    written?;
    write!(out, "{}", last_line(pulled))?;
    out.flush()?;
    Ok(if pulled.all_proven() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The progress bar, drawn while a pull runs.
struct Drawing {
    bar: indicatif::ProgressBar,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drawing {
    fn finish(self) {
        if let Some(task) = self.task {
            task.abort();
        }
        self.bar.finish_and_clear();
    }
}

fn draw(progress: &Arc<Progress>) -> Drawing {
    // indicatif draws only on a terminal (its stderr target hides itself otherwise), keeps its
    // own rate and ETA estimate, and clears the bar when done.
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:10} [{bar:24}] {percent:>3}%  {bytes} / {total_bytes}  {binary_bytes_per_sec}  \
             ETA {eta}  {prefix}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("#>."),
    );
    let task = std::io::stderr().is_terminal().then(|| {
        let (progress, bar) = (Arc::clone(progress), bar.clone());
        tokio::spawn(async move {
            loop {
                show(&progress, &bar);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    });
    Drawing { bar, task }
}

fn show(progress: &Progress, bar: &indicatif::ProgressBar) {
    let stage = progress.stage().word();
    bar.set_length(progress.bytes_total.load(Ordering::Relaxed));
    bar.set_position(progress.bytes_done.load(Ordering::Relaxed));
    bar.set_message(stage);
    bar.set_prefix(match progress.files_left() {
        1 => "1 file left".to_string(),
        n => format!("{n} files left"),
    });
}

fn file_line(f: &PulledFile) -> String {
    let why = f.error.clone().unwrap_or_else(|| f.verification.clone());
    format!(
        "  {:<8} {}  {}  {}",
        f.outcome().word(),
        crate::sanitize::line(&f.remote_path, 200),
        format_size(f.size, BINARY),
        crate::sanitize::line(&why, 200)
    )
}

/// The counts, and what to do next.
fn last_line(pulled: &Pulled) -> String {
    let [proven, unproven, failed] = pulled.tally.outcomes;
    let next = match (unproven, failed, pulled.unmatched.len()) {
        (_, 1.., 0) if pulled.local_disk_full => {
            "the local disk is full: free space and pull again, and the pull will resume where \
             it stopped"
        }
        (0, 0, 0) => "every file is home and loads: the teardown guard will accept this pull",
        (_, 0, 0) => {
            "add a command for the unproven kinds under [host.pull.verify], then pull again"
        }
        (_, _, 0) => "see why each failed above; pull again once the box or the file is fixed",
        _ => "fix the paths that matched nothing in [host.pull], then pull again",
    };
    format!("{proven} proven, {unproven} unproven, {failed} failed: {next}\n")
}
