//! Live monitoring of one host: one long-lived command on its pooled connection, the probe loop
//! with the box's two nvidia-smi loops beside it (the GPUs each period, who holds VRAM each slow
//! period; `probe::loops`), so the box starts one login shell for all of it. The loops' lines
//! come tagged on the probe's channel and are told apart here (`demux`). The box restarts an
//! nvidia-smi that ends; the whole command is started again when it ends, and on the new session
//! after a reconnect. Readings go out over a channel; nothing here blocks the UI or the
//! connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::apps_feed::AppsFeed;
use super::commands::{live_command, new_nonce};
use super::demux::{Demux, Routed};
use super::gpu_feed::{FieldRejected, GpuFeed};
use super::readers::ProbeReader;
use crate::config::HostConfig;
use crate::probe::frame::marker;
use crate::probe::loops::{LoopLine, loop_line};
use crate::probe::{GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY};
use crate::readings::{Observation, Update};
use crate::transport::{Session, StreamEvent};

/// Longest line kept from a stream; the probe caps its sections on the box as well.
const MAX_LINE: usize = 64 * 1024;
/// Wait before restarting a command that ended on its own.
const RESTART_AFTER: Duration = Duration::from_secs(2);

/// Starts the monitoring of `host`; it follows `sessions` across reconnects until aborted.
pub fn spawn(
    host: HostConfig,
    sessions: watch::Receiver<Option<Arc<Session>>>,
    period: Duration,
    tx: mpsc::Sender<Update>,
) -> Vec<JoinHandle<()>> {
    // A driver that rejected a field is asked with the legacy list from then on.
    let legacy = Arc::new(AtomicBool::new(false));
    vec![tokio::spawn(follow(sessions, move |session| {
        watch_box(session, host.clone(), period, legacy.clone(), tx.clone())
    }))]
}

/// Runs `stream` on each session in turn: restarted when it ends, cancelled when the session goes.
async fn follow<F, Fut>(mut sessions: watch::Receiver<Option<Arc<Session>>>, stream: F)
where
    F: Fn(Arc<Session>) -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    loop {
        let current = sessions.borrow_and_update().clone();
        let Some(session) = current else {
            if sessions.changed().await.is_err() {
                return;
            }
            continue;
        };
        let wait = tokio::select! {
            wait = stream(session) => wait,
            changed = sessions.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            changed = sessions.changed() => if changed.is_err() { return },
        }
    }
}

async fn send(tx: &mpsc::Sender<Update>, host: &str, observation: Observation) {
    let _ = tx
        .send(Update {
            host: host.to_string(),
            observation,
        })
        .await;
}

/// Runs the command until it ends; returns how long to wait before starting it again.
async fn watch_box(
    session: Arc<Session>,
    host: HostConfig,
    period: Duration,
    legacy: Arc<AtomicBool>,
    tx: mpsc::Sender<Update>,
) -> Duration {
    let nonce = new_nonce();
    let fields = if legacy.load(Ordering::Relaxed) {
        GPU_QUERY_FIELDS_LEGACY
    } else {
        GPU_QUERY_FIELDS
    };
    let command = live_command(&host, &nonce, period, fields);
    let Some((mut rx, ticks)) = start(&session, &host.name, command, &tx).await else {
        return RESTART_AFTER;
    };
    let marker = marker(&nonce);
    let mut demux = Demux::new(&marker);
    let mut lines = Lines {
        host: &host.name,
        marker: &marker,
        tx: &tx,
        probe: ProbeReader::new(&nonce),
        gpu: GpuFeed::new(fields),
        apps: AppsFeed::default(),
        done: format!("{marker} done"),
        cycle_ended: false,
    };
    // The loop waits for a line on its stdin after each cycle: the next one is sent a period
    // after the cycle began, so a slow cycle delays the next instead of piling them up.
    let mut began = Instant::now();
    let mut next: Option<Instant> = None;
    let far = || Instant::now() + Duration::from_secs(3600);
    loop {
        let quiet = lines.apps.quiet_at();
        let event = tokio::select! {
            event = rx.recv() => event,
            () = tokio::time::sleep_until(next.unwrap_or_else(far)), if next.is_some() => {
                next = None;
                began = Instant::now();
                let _ = ticks.send(b"\n".to_vec()).await;
                continue;
            }
            () = tokio::time::sleep_until(quiet.unwrap_or_else(far)), if quiet.is_some() => {
                lines.apps.close();
                continue;
            }
        };
        let Some(event) = event else { break };
        match event {
            StreamEvent::Line(line) => {
                for routed in demux.push(line) {
                    if lines.route(routed).await.is_err() {
                        // Asked again at once with the legacy fields, on a new command.
                        legacy.store(true, Ordering::Relaxed);
                        return Duration::ZERO;
                    }
                }
                if std::mem::take(&mut lines.cycle_ended) {
                    next = Some(began + period);
                }
            }
            // The link's own state tells of a lost connection; the command follows the pool
            // onto the next one.
            StreamEvent::Ended {
                link_lost: Some(why),
                ..
            } => {
                tracing::debug!(host = %host.name, "probe loop ended with the link: {why}");
                return RESTART_AFTER;
            }
            StreamEvent::Ended { exit_status, .. } => {
                if let Some(rest) = demux.finish() {
                    let _ = lines.route(Routed::Probe(rest)).await;
                }
                lines.ended(exit_status).await;
                return RESTART_AFTER;
            }
        }
    }
    RESTART_AFTER
}

/// Starts the command, its host's paths and mounts first on its stdin (the script reads them
/// before its first cycle); None, said as a probe error, where it could not start.
async fn start(
    session: &Arc<Session>,
    host: &str,
    command: super::commands::ProbeCommand,
    tx: &mpsc::Sender<Update>,
) -> Option<(mpsc::Receiver<StreamEvent>, crate::transport::StreamInput)> {
    match session.stream_with_input(&command.line, MAX_LINE).await {
        Ok((rx, ticks)) => {
            let _ = ticks.send(command.input).await;
            Some((rx, ticks))
        }
        Err(e) => {
            let why = format!("{host}: probe loop: {e}");
            send(tx, host, Observation::ProbeError(why)).await;
            None
        }
    }
}

/// Where the command's lines go once told apart.
struct Lines<'a> {
    host: &'a str,
    marker: &'a str,
    tx: &'a mpsc::Sender<Update>,
    probe: ProbeReader,
    gpu: GpuFeed,
    apps: AppsFeed,
    /// The probe's line that ends a cycle.
    done: String,
    /// That line came: the next cycle is due a period after this one began.
    cycle_ended: bool,
}

impl Lines<'_> {
    async fn route(&mut self, routed: Routed) -> Result<(), FieldRejected> {
        match routed {
            Routed::Gpu(line) => match loop_line(self.marker, &line) {
                LoopLine::Ended(status) => {
                    let availability = self.gpu.ended(status);
                    self.say(Observation::GpuAvailability(availability)).await;
                }
                LoopLine::Output(line) => {
                    for observation in self.gpu.line(self.host, line, Utc::now())? {
                        self.say(observation).await;
                    }
                }
            },
            Routed::Apps(line) => match loop_line(self.marker, &line) {
                LoopLine::Ended(status) => self.apps.ended(status),
                LoopLine::Output(line) => self.apps.line(line, Instant::now()),
            },
            Routed::Probe(line) => {
                self.cycle_ended |= line == self.done;
                match self.probe.push(&line, Utc::now()) {
                    Ok(Some(mut reading)) => {
                        self.apps.apply(&mut reading.sample);
                        self.say(Observation::Host(Box::new(reading))).await;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        let why = format!("{}: probe loop: {e}", self.host);
                        self.say(Observation::ProbeError(why)).await;
                    }
                }
            }
        }
        Ok(())
    }

    /// The command ended on its own (not with the link): said, as it is started again.
    async fn ended(&self, exit_status: Option<u32>) {
        tracing::warn!(host = %self.host, "probe loop ended (exit {exit_status:?})");
        let why = format!(
            "{}: probe loop ended (exit {}); restarting",
            self.host,
            exit_status.map_or("unknown".into(), |s| s.to_string())
        );
        self.say(Observation::ProbeError(why)).await;
    }

    async fn say(&self, observation: Observation) {
        send(self.tx, self.host, observation).await;
    }
}
