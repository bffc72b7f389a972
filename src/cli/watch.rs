//! `rigwatch watch`: the dashboard's polling, state, signals and clocks with no terminal, for
//! tmux, systemd or cron. Each alert that starts or clears is one JSON line on stdout and in the
//! events file, and goes to the sinks whose `[[alert]]` rule wants it. SIGHUP reloads the
//! config (a bad one is reported and the old one kept); SIGTERM and Ctrl-C end it with cost
//! and last-seen saved, as they are every minute.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::signal::unix::{SignalKind, signal};

use super::watch_io::{dispatch, every, keep_alerts, ledger_news, publish, recv, remember, until};
use crate::alerts::engine::{Engine, Timing};
use crate::alerts::notices::Notices;
use crate::alerts::{conditions, silences};
use crate::clocks::Profile;
use crate::config::FleetConfig;
use crate::metrics::Metrics;
use crate::monitor::FleetState;
use crate::monitor::feed::Feed;
use crate::transport::Pool;

/// How often conditions are judged: fine enough for the group wait, far below the poll cost.
const JUDGE_EVERY: Duration = Duration::from_secs(1);
/// The ledger (pulls and teardowns other rigwatch processes record) is read this often.
const LEDGER_EVERY: Duration = Duration::from_secs(10);
/// Cost so far and last-seen are saved this often, so a crash loses at most this much.
const SAVE_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Stop after this many seconds (default: until SIGTERM or Ctrl-C)
    #[arg(long = "for", value_name = "SECS")]
    duration: Option<f64>,
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
    super::silence::parse_duration(text)
        .and_then(|d| d.to_std().ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text:?} is not a duration like 90s, 30m, 8h or 1d"))
}

fn digest_timer(args: &WatchArgs) -> Option<tokio::time::Interval> {
    args.digest
        .map(|d| tokio::time::interval_at(tokio::time::Instant::now() + d, d))
}

/// The demo's alerts wait less, so a first look shows them in seconds.
const DEMO_GROUP_WAIT: i64 = 2;

/// `watch --demo`: the demo fleet's replayed readings through the same state and alert engine;
/// events go to stdout (and to --events-file, if given), never to a sink.
pub async fn demo(args: &WatchArgs) -> color_eyre::Result<ExitCode> {
    let deadline = deadline(args);
    let (mut demo, mut state) =
        crate::demo::Demo::start_sized(Utc::now(), args.copies.clamp(1, 100));
    let mut engine = Engine::new(Timing {
        group_wait: chrono::Duration::seconds(DEMO_GROUP_WAIT),
        ..Timing::default()
    });
    eprintln!(
        "rigwatch: watching the demo fleet ({} boxes of replayed captures); alerts fire after \
         {DEMO_GROUP_WAIT} s here, 30 s by default",
        state.hosts.len()
    );
    let mut judge = tokio::time::interval(JUDGE_EVERY);
    let mut poll = tokio::time::interval(crate::ui::DEMO_POLL);
    let mut term = signal(SignalKind::terminate())?;
    let mut file_failing = false;
    let mut digest = digest_timer(args);
    let mut notices = Notices::default();
    loop {
        tokio::select! {
            _ = poll.tick() => demo.advance(&mut state, Utc::now()),
            () = every(digest.as_mut()) => {
                if let Some(event) = engine.digest(Utc::now()) {
                    publish(&event, args.events_file.as_deref(), &mut file_failing);
                }
            }
            _ = judge.tick() => {
                let now = Utc::now();
                state.tick(now);
                let seen = conditions(&state, now);
                let notices = notices.from_state(&state, now);
                for event in engine.step(&seen, now).into_iter().chain(notices) {
                    let event = event.placed(state.hosts.iter().map(|h| &h.config));
                    publish(&event, args.events_file.as_deref(), &mut file_failing);
                }
            }
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            () = until(deadline) => break,
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn deadline(args: &WatchArgs) -> Option<tokio::time::Instant> {
    args.duration
        .filter(|d| d.is_finite() && *d >= 0.0)
        .map(|d| tokio::time::Instant::now() + Duration::from_secs_f64(d))
}

enum Ended {
    Stop,
    Reload,
}

pub async fn run(
    fleet: &FleetConfig,
    profiles: &[Profile],
    args: &WatchArgs,
    reload: &dyn Fn() -> Result<FleetConfig, String>,
) -> color_eyre::Result<ExitCode> {
    let deadline = deadline(args);
    let events_file = args
        .events_file
        .clone()
        .or_else(|| crate::config::paths::state_dir().map(|d| d.join("events.jsonl")));
    let mut fleet = fleet.clone();
    let mut engine = Engine::new(Timing::of(&fleet.alerts));
    if let Some(path) = crate::config::paths::state_dir().map(|d| d.join("alerts.json")) {
        engine.load(&path);
    }
    let mut notices = Notices::default();
    let metrics = Arc::new(Mutex::new(Metrics::default()));
    let _server = match args.metrics {
        None => None,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| super::usage(format!("--metrics {addr}: cannot listen: {e}")))?;
            Some(AbortOnDrop(tokio::spawn(crate::metrics::serve(
                listener,
                Arc::clone(&metrics),
            ))))
        }
    };
    let out = Outputs {
        events_file: events_file.as_deref(),
        metrics: &metrics,
        args,
    };
    loop {
        match watch_once(&fleet, profiles, &mut engine, &mut notices, &out, deadline).await? {
            Ended::Stop => return Ok(ExitCode::SUCCESS),
            Ended::Reload => match reload() {
                Ok(new) => {
                    eprintln!("rigwatch: reloaded {}", new.path.display());
                    fleet = new;
                    // Alert states carry over: a reload is not a reason to fire again.
                    engine.retime(Timing::of(&fleet.alerts));
                }
                Err(e) => eprintln!("rigwatch: config not reloaded, the old one stays: {e}"),
            },
        }
    }
}

/// Where a tick's results go besides the sinks.
struct Outputs<'a> {
    events_file: Option<&'a Path>,
    metrics: &'a Mutex<Metrics>,
    args: &'a WatchArgs,
}

/// The metrics server lives exactly as long as the watch.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn watch_once(
    fleet: &FleetConfig,
    profiles: &[Profile],
    engine: &mut Engine,
    notices: &mut Notices,
    out: &Outputs<'_>,
    deadline: Option<tokio::time::Instant>,
) -> color_eyre::Result<Ended> {
    let mut feed = Feed::start(Pool::start(fleet), fleet);
    let (mut updates, mut links) = (feed.updates.take(), feed.links.take());
    let mut state = FleetState::new(fleet.hosts.clone(), fleet.thresholds.clone())
        .with_profiles(profiles.to_vec(), fleet.balance)
        .with_poll(fleet.poll);
    let memory_path = crate::monitor::memory::path();
    let mut memory = crate::monitor::memory::load(memory_path.as_deref());
    state.recall(&memory);
    let silence_path = silences::path();
    let mut digest = digest_timer(out.args);
    let mut ledger_look = tokio::time::interval(LEDGER_EVERY);
    let mut judge = tokio::time::interval(JUDGE_EVERY);
    let mut save = tokio::time::interval(SAVE_EVERY);
    save.tick().await;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut file_failing = false;
    let ended = loop {
        tokio::select! {
            Some(update) = recv(updates.as_mut()) => {
                state.observe(&update.host, update.observation, Utc::now());
            }
            Some((host, link)) = recv(links.as_mut()) => state.set_link(&host, link, Utc::now()),
            _ = judge.tick() => {
                let now = Utc::now();
                state.tick(now);
                if let Ok(m) = out.metrics.lock() {
                    m.set_from(&state, now);
                }
                let seen = conditions(&state, now);
                let silenced = silence_path
                    .as_deref()
                    .map(|p| silences::load(p, now))
                    .unwrap_or_default();
                let happened = notices.from_state(&state, now);
                for event in engine.step(&seen, now).into_iter().chain(happened) {
                    let mut event = event.placed(&fleet.hosts);
                    event.data.silenced = silenced.contains_key(&event.host);
                    publish(&event, out.events_file, &mut file_failing);
                    if !event.data.silenced {
                        dispatch(fleet, &event);
                    }
                }
            }
            () = every(digest.as_mut()) => {
                if let Some(event) = engine.digest(Utc::now()).map(|e| e.placed(&fleet.hosts)) {
                    publish(&event, out.events_file, &mut file_failing);
                    dispatch(fleet, &event);
                }
            }
            _ = ledger_look.tick() => {
                for event in ledger_news(notices, Utc::now()) {
                    let event = event.placed(&fleet.hosts);
                    publish(&event, out.events_file, &mut file_failing);
                    dispatch(fleet, &event);
                }
            }
            _ = save.tick() => {
                remember(&state, &mut memory, memory_path.as_deref());
                keep_alerts(engine);
            }
            _ = term.recv() => break Ended::Stop,
            _ = tokio::signal::ctrl_c() => break Ended::Stop,
            _ = hup.recv() => break Ended::Reload,
            () = until(deadline) => break Ended::Stop,
        }
    };
    remember(&state, &mut memory, memory_path.as_deref());
    keep_alerts(engine);
    feed.shutdown().await;
    Ok(ended)
}
