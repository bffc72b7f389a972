//! Live monitoring of one host: three long-lived streams on its pooled connection — the GPU
//! stream (`nvidia-smi --query-gpu ... -lms`), the compute-apps stream (who holds VRAM, at the
//! slow sections' pace) and the periodic probe loop — each restarted when it ends, and re-opened
//! on the new session after a reconnect. Readings go out over a channel; nothing here blocks the
//! UI or the connection.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::apps_stream::{self, SharedApps};
use super::commands::{NOT_FOUND, gpu_stream_command, new_nonce, probe_command};
use super::readers::{GpuBatcher, ProbeReader};
use crate::config::HostConfig;
use crate::probe::script::SLOW_EVERY;
use crate::probe::{GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY, parse_query_failure};
use crate::readings::{GpuAvailability, GpuReading, Observation, Update};
use crate::transport::{Session, StreamEvent};

/// Longest line kept from a stream; the probe caps its sections on the box as well.
const MAX_LINE: usize = 64 * 1024;
/// Wait before restarting a stream that ended on its own.
const RESTART_AFTER: Duration = Duration::from_secs(2);
/// A box without nvidia-smi is asked again this rarely (drivers do get installed).
const NO_GPU_RECHECK: Duration = Duration::from_secs(300);

/// Starts the streams for `host`; they follow `sessions` across reconnects until aborted.
pub fn spawn(
    host: HostConfig,
    sessions: watch::Receiver<Option<Arc<Session>>>,
    period: Duration,
    tx: mpsc::Sender<Update>,
) -> Vec<JoinHandle<()>> {
    let gpu = tokio::spawn(follow(sessions.clone(), {
        let (name, tx) = (host.name.clone(), tx.clone());
        move |session| gpu_stream(session, name.clone(), period, tx.clone())
    }));
    let seen = SharedApps::default();
    let apps = tokio::spawn(follow(sessions.clone(), {
        let (name, tx, seen) = (host.name.clone(), tx.clone(), seen.clone());
        let every = period * SLOW_EVERY;
        move |session| apps_stream::run(session, name.clone(), every, seen.clone(), tx.clone())
    }));
    let probe = tokio::spawn(follow(sessions, move |session| {
        probe_stream(session, host.clone(), period, seen.clone(), tx.clone())
    }));
    vec![gpu, apps, probe]
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

/// Runs the GPU stream until it ends; returns how long to wait before starting it again.
async fn gpu_stream(
    session: Arc<Session>,
    host: String,
    period: Duration,
    tx: mpsc::Sender<Update>,
) -> Duration {
    let mut fields: &[&str] = GPU_QUERY_FIELDS;
    loop {
        let mut rx = match session
            .stream(&gpu_stream_command(fields, period), MAX_LINE)
            .await
        {
            Ok(rx) => rx,
            Err(e) => {
                send(
                    &tx,
                    &host,
                    Observation::ProbeError(format!("{host}: GPU stream: {e}")),
                )
                .await;
                return RESTART_AFTER;
            }
        };
        let mut batcher = GpuBatcher::new(fields);
        let mut announced = false;
        let mut tail = String::new();
        while let Some(event) = rx.recv().await {
            match event {
                StreamEvent::Line(line) => {
                    if parse_query_failure(&line).is_some() && fields != GPU_QUERY_FIELDS_LEGACY {
                        fields = GPU_QUERY_FIELDS_LEGACY;
                        break;
                    }
                    match batcher.push(&line) {
                        Ok(Some(gpus)) => {
                            if !announced {
                                send(
                                    &tx,
                                    &host,
                                    Observation::GpuAvailability(GpuAvailability::Present),
                                )
                                .await;
                                announced = true;
                            }
                            send(
                                &tx,
                                &host,
                                Observation::Gpu(GpuReading {
                                    at: Utc::now(),
                                    gpus,
                                }),
                            )
                            .await;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tail = line.clone();
                            send(
                                &tx,
                                &host,
                                Observation::ProbeError(format!("{host}: GPU stream: {e}")),
                            )
                            .await;
                        }
                    }
                }
                StreamEvent::Ended {
                    link_lost: Some(_), ..
                } => return RESTART_AFTER,
                StreamEvent::Ended { exit_status, .. } => {
                    let (availability, wait) = match exit_status {
                        Some(NOT_FOUND) => (GpuAvailability::NoNvidiaSmi, NO_GPU_RECHECK),
                        status => (
                            GpuAvailability::Failing(format!(
                                "nvidia-smi stream ended (exit {}){}",
                                status.map_or("unknown".into(), |s| s.to_string()),
                                if tail.is_empty() {
                                    String::new()
                                } else {
                                    format!(": {}", crate::sanitize::line(&tail, 160))
                                }
                            )),
                            RESTART_AFTER,
                        ),
                    };
                    send(&tx, &host, Observation::GpuAvailability(availability)).await;
                    return wait;
                }
            }
        }
        if fields != GPU_QUERY_FIELDS_LEGACY {
            return RESTART_AFTER;
        }
    }
}

/// Runs the periodic probe loop until it ends; returns how long to wait before restarting it.
async fn probe_stream(
    session: Arc<Session>,
    host: HostConfig,
    period: Duration,
    apps: SharedApps,
    tx: mpsc::Sender<Update>,
) -> Duration {
    let nonce = new_nonce();
    let command = probe_command(&host, &nonce, Some(period));
    let (mut rx, ticks) = match session.stream_with_input(&command.line, MAX_LINE).await {
        Ok(both) => {
            // The host's paths and mounts first: the script reads them before its first cycle.
            let _ = both.1.send(command.input).await;
            both
        }
        Err(e) => {
            send(
                &tx,
                &host.name,
                Observation::ProbeError(format!("{}: probe loop: {e}", host.name)),
            )
            .await;
            return RESTART_AFTER;
        }
    };
    let mut reader = ProbeReader::new(&nonce);
    // The loop waits for a line on its stdin after each cycle: the next one is sent a period
    // after the cycle began, so a slow cycle delays the next instead of piling them up.
    let done = format!("{} done", crate::probe::frame::marker(&nonce));
    let mut began = Instant::now();
    let mut next: Option<Instant> = None;
    loop {
        let due = next.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        let event = tokio::select! {
            event = rx.recv() => event,
            () = tokio::time::sleep_until(due), if next.is_some() => {
                next = None;
                began = Instant::now();
                let _ = ticks.send(b"\n".to_vec()).await;
                continue;
            }
        };
        let Some(event) = event else { break };
        if matches!(&event, StreamEvent::Line(line) if *line == done) {
            next = Some(began + period);
        }
        match event {
            StreamEvent::Line(line) => match reader.push(&line, Utc::now()) {
                Ok(Some(mut reading)) => {
                    apps_stream::apply(&apps, &mut reading.sample);
                    send(&tx, &host.name, Observation::Host(Box::new(reading))).await;
                }
                Ok(None) => {}
                Err(e) => {
                    send(
                        &tx,
                        &host.name,
                        Observation::ProbeError(format!("{}: probe loop: {e}", host.name)),
                    )
                    .await
                }
            },
            // The link's own state tells of a lost connection; the streams follow the pool
            // onto the next one.
            StreamEvent::Ended {
                link_lost: Some(why),
                ..
            } => {
                tracing::debug!(host = %host.name, "probe loop ended with the link: {why}");
                return RESTART_AFTER;
            }
            StreamEvent::Ended { exit_status, .. } => {
                tracing::warn!(host = %host.name, "probe loop ended (exit {exit_status:?})");
                let why = format!(
                    "{}: probe loop ended (exit {}); restarting",
                    host.name,
                    exit_status.map_or("unknown".into(), |s| s.to_string())
                );
                send(&tx, &host.name, Observation::ProbeError(why)).await;
                return RESTART_AFTER;
            }
        }
    }
    RESTART_AFTER
}
