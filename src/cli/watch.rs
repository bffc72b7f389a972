//! `rigwatch watch`: the dashboard's polling, state, signals and clocks with no terminal, for
//! tmux, systemd or cron. Each alert that starts or clears is one JSON line on stdout and in the
//! events file, and goes to the sinks whose `[[alert]]` rule wants it. SIGHUP reloads the
//! config (a bad one is reported and the old one kept); SIGTERM and Ctrl-C end it with cost
//! and last-seen saved, as they are every minute.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::signal::unix::{SignalKind, signal};

use super::watch_io::{every, publish, until};
use crate::alerts::AlertEvent;
use crate::clocks::Profile;
use crate::config::FleetConfig;
use crate::metrics::Metrics;
use crate::runtime::{Runtime, Sender, Step};
use crate::transport::Pool;

/// The ledger (pulls and teardowns other rigwatch processes record) is read this often.
const LEDGER_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Stop after this many seconds (default: until SIGTERM or Ctrl-C)
    #[arg(long = "for", value_name = "SECS", value_parser = crate::config::typed::seconds)]
    duration: Option<Duration>,
    /// Events file (JSON Lines); default: events.jsonl in the state dir
    #[arg(long, value_name = "PATH")]
    events_file: Option<PathBuf>,
    /// Serve the fleet's figures for Prometheus here (e.g. 127.0.0.1:9464)
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// Watch the built-in demo fleet instead (no config, no network, no sinks)
    #[arg(long)]
    pub demo: bool,
    /// With --demo: the eight demo boxes this many times over
    #[arg(long, default_value_t = 1, value_name = "N", requires = "demo")]
    copies: usize,
    /// Also send a digest of everything firing this often (90s, 30m, 8h): one `digest` event
    #[arg(long, value_name = "EVERY", value_parser = digest_every)]
    digest: Option<Duration>,
}

fn digest_every(text: &str) -> Result<Duration, String> {
    match crate::config::typed::duration(text)? {
        d if d.is_zero() => Err(format!("{text:?}: a digest needs a period above zero")),
        d => Ok(d),
    }
}

/// The demo's alerts wait less, so a first look shows them in seconds.
const DEMO_GROUP_WAIT: i64 = 2;

fn deadline(args: &WatchArgs) -> Option<tokio::time::Instant> {
    args.duration.map(|d| tokio::time::Instant::now() + d)
}

/// `watch --demo`: the demo fleet's replayed readings through the same runtime; events go to
/// stdout (and to --events-file, if given), never to a sink.
pub async fn demo(args: &WatchArgs) -> color_eyre::Result<ExitCode> {
    let runtime = Runtime::demo(
        args.copies,
        chrono::Duration::seconds(DEMO_GROUP_WAIT),
        Utc::now(),
    );
    eprintln!(
        "rigwatch: watching the demo fleet ({} boxes of replayed captures); alerts fire after \
         {DEMO_GROUP_WAIT} s here, 30 s by default",
        runtime.state.hosts.len()
    );
    let out = Outputs {
        events_file: args.events_file.clone(),
        failing: false,
    };
    watch(
        runtime,
        out,
        args,
        &|| Err("the demo has no config to reload".into()),
        &[],
    )
    .await
}

pub async fn run(
    fleet: &FleetConfig,
    profiles: &[Profile],
    args: &WatchArgs,
    reload: &dyn Fn() -> Result<FleetConfig, String>,
) -> color_eyre::Result<ExitCode> {
    let events_file = args
        .events_file
        .clone()
        .or_else(|| crate::config::paths::state_dir().map(|d| d.join("events.jsonl")));
    // Said at start: a watch nobody is told about looks like one that works.
    if fleet.alerts.rules.is_empty() {
        eprintln!(
            "rigwatch: no [[alert]] destination in {}: events go to stdout and {} only; add an \
             [[alert]] (webhook, ntfy, command, alertmanager) to be woken",
            fleet.path.display(),
            events_file
                .as_deref()
                .map_or("nowhere else".to_string(), |p| p.display().to_string())
        );
    }
    let mut runtime = Runtime::live(Pool::start(fleet), fleet, profiles, "rigwatch watch");
    let _server = match args.metrics {
        None => None,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| super::usage(format!("--metrics {addr}: cannot listen: {e}")))?;
            let metrics = Arc::new(Mutex::new(Metrics::default()));
            runtime = runtime.with_metrics(Arc::clone(&metrics));
            Some(AbortOnDrop(tokio::spawn(crate::metrics::serve(
                listener, metrics,
            ))))
        }
    };
    let out = Outputs {
        events_file,
        failing: false,
    };
    watch(runtime, out, args, reload, profiles).await
}

/// Where a tick's events go besides the sinks: stdout, and the events file.
struct Outputs {
    events_file: Option<PathBuf>,
    /// The events file could not be written last time (said once, not every event).
    failing: bool,
}

impl Outputs {
    fn publish(&mut self, event: &AlertEvent) {
        publish(event, self.events_file.as_deref(), &mut self.failing);
    }
}

/// The metrics server lives exactly as long as the watch.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn watch(
    mut runtime: Runtime,
    mut out: Outputs,
    args: &WatchArgs,
    reload: &dyn Fn() -> Result<FleetConfig, String>,
    profiles: &[Profile],
) -> color_eyre::Result<ExitCode> {
    let deadline = deadline(args);
    let mut digest = args
        .digest
        .map(|d| tokio::time::interval_at(tokio::time::Instant::now() + d, d));
    let mut ledger_look = tokio::time::interval(LEDGER_EVERY);
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut told = None;
    loop {
        tokio::select! {
            step = runtime.step() => match step {
                Step::Ticked(events) => {
                    for event in &events {
                        out.publish(event);
                    }
                    let sender = runtime.sender().clone();
                    if told.as_ref() != Some(&sender) {
                        if let Sender::Other(who) = &sender {
                            eprintln!("rigwatch: alerts are sent by {who}; this watch prints them and sends nothing");
                        }
                        told = Some(sender);
                    }
                }
                Step::Notice(why) => eprintln!("rigwatch: {why}"),
                // A watch starts no pulls or teardowns.
                Step::Readings
                | Step::PullBegan { .. }
                | Step::Pulled { .. }
                | Step::Teardown { .. }
                | Step::Killed { .. } => {}
            },
            () = every(digest.as_mut()) => {
                if let Some(event) = runtime.digest(Utc::now()) {
                    out.publish(&event);
                }
            }
            _ = ledger_look.tick() => {
                for event in runtime.ledger_news(Utc::now()) {
                    out.publish(&event);
                }
            }
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            _ = hup.recv() => match reload() {
                Ok(new) => {
                    eprintln!("rigwatch: reloaded {}", new.path.display());
                    runtime.reload(&new, profiles).await;
                }
                Err(e) => eprintln!("rigwatch: config not reloaded, the old one stays: {e}"),
            },
            () = until(deadline) => break,
        }
    }
    let (_, saved) = runtime.shutdown().await;
    if let Err(why) = saved {
        eprintln!("rigwatch: {why}");
    }
    Ok(ExitCode::SUCCESS)
}
