//! The pool: one supervisor task per host owns that host's connection, re-establishes it with
//! capped, jittered backoff, and publishes its link state. Callers never wait on a dead link.
//!
//! Past 400 lines: the supervisor's loop, its backoff and its link states are one machine per
//! host, read together.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::error::TransportError;
use super::exec::{ExecLimits, ExecOutput};
use super::jumps::Jumps;
use super::link::{LinkState, SLOW_RTT};
use super::session::{ConnectOptions, Session};
use crate::config::ssh::{self, ResolvedHost};
use crate::config::{FleetConfig, HostConfig, LinkTuning};

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(5);
const DEFAULT_KEEPALIVE_MAX: u32 = 3;
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// A connection that stayed up this long resets the backoff.
const STABLE_FOR: Duration = Duration::from_secs(60);
/// First connects are spread out so a bastion's MaxStartups is not hit all at once.
const STAGGER: Duration = Duration::from_millis(10);
/// Pings taken when a link comes up; the quickest is its first round trip.
const FIRST_PINGS: u32 = 3;

pub struct HostLink {
    pub name: String,
    state: watch::Receiver<LinkState>,
    session: watch::Receiver<Option<Arc<Session>>>,
    task: JoinHandle<()>,
}

impl HostLink {
    pub fn state(&self) -> LinkState {
        self.state.borrow().clone()
    }

    pub fn watch_state(&self) -> watch::Receiver<LinkState> {
        self.state.clone()
    }

    /// Follows the host's session across reconnects (None while the link is down).
    pub fn watch_session(&self) -> watch::Receiver<Option<Arc<Session>>> {
        self.session.clone()
    }

    pub fn session(&self) -> Option<Arc<Session>> {
        self.session.borrow().clone()
    }

    /// Runs a command now, or fails at once with the link's state when it is not up.
    pub async fn exec(
        &self,
        command: &str,
        limits: ExecLimits,
    ) -> Result<ExecOutput, TransportError> {
        match self.session() {
            Some(session) => session.exec(command, limits).await,
            None => Err(TransportError::LinkDown(describe(&self.state()))),
        }
    }
}

fn describe(state: &LinkState) -> String {
    match state {
        LinkState::Down { reason, .. }
        | LinkState::AuthRefused { reason, .. }
        | LinkState::HostkeyRefused { reason, .. } => format!("{}: {reason}", state.word()),
        other => other.word().to_string(),
    }
}

pub struct Pool {
    links: Vec<HostLink>,
    /// When the first connects began: what a host still connecting has been given.
    started: Instant,
    helpers: Helpers,
}

/// When a connection's helper shell (`shell`) starts and its SFTP channel (`sftp`) opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helpers {
    /// At the first command that needs it.
    OnDemand,
    /// As the connection opens, for hosts with a pull section.
    Warm,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for link in &self.links {
            link.task.abort();
        }
    }
}

impl Pool {
    /// Starts one supervisor per host; must be called inside a tokio runtime.
    pub fn start(fleet: &FleetConfig) -> Pool {
        Pool::start_with(fleet, Helpers::OnDemand)
    }

    /// As `start`, for a front end that pulls or tears down: each host with a pull section
    /// starts its helper shell and opens its SFTP channel as soon as it connects
    /// (`Session::warm_for_pulls`), so pressing `p` waits for neither of the box's login
    /// shells. Monitoring alone starts neither.
    pub fn start_for_pulls(fleet: &FleetConfig) -> Pool {
        Pool::start_with(fleet, Helpers::Warm)
    }

    /// Whether this pool warms helper shells (a reload starts its successor the same way).
    pub fn helpers(&self) -> Helpers {
        self.helpers
    }

    /// Starts one supervisor per host, whose connection starts its helper shell as `helpers`
    /// says.
    pub fn start_with(fleet: &FleetConfig, helpers: Helpers) -> Pool {
        // One per pool: every host behind a jump host shares one connection to it.
        let jumps = Arc::new(Jumps::default());
        let links = fleet
            .hosts
            .iter()
            .enumerate()
            .map(|(index, host)| {
                let jumps = Arc::clone(&jumps);
                let (state_tx, state) = watch::channel(LinkState::Connecting { attempt: 0 });
                let (session_tx, session) = watch::channel(None);
                let supervisor = Supervisor {
                    warm: helpers == Helpers::Warm && host.pull.is_some(),
                    host: host.clone(),
                    ssh_config: fleet.ssh_config.clone(),
                    known_hosts: fleet.known_hosts.clone(),
                    tuning: fleet.link.clone(),
                    ping_every: fleet.poll,
                    jumps,
                    state_tx,
                    session_tx,
                };
                let delay = STAGGER
                    .saturating_mul(index as u32)
                    .min(Duration::from_secs(2));
                let task = tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    supervisor.run().await;
                });
                HostLink {
                    name: host.name.clone(),
                    state,
                    session,
                    task,
                }
            })
            .collect();
        Pool {
            links,
            started: Instant::now(),
            helpers,
        }
    }

    pub fn links(&self) -> &[HostLink] {
        &self.links
    }

    pub fn get(&self, name: &str) -> Option<&HostLink> {
        self.links.iter().find(|l| l.name == name)
    }

    pub async fn exec(
        &self,
        host: &str,
        command: &str,
        limits: ExecLimits,
    ) -> Result<ExecOutput, TransportError> {
        match self.get(host) {
            Some(link) => link.exec(command, limits).await,
            None => Err(TransportError::LinkDown(format!(
                "no host named {host:?} in the fleet"
            ))),
        }
    }

    /// Waits until every host's first attempt has ended (or `timeout` passes) and returns the
    /// states. Each host has one attempt: its connect timeout is the whole wait for it, not one
    /// try of several. A host still connecting when `timeout` ends is reported down, saying how
    /// long it was given, so no caller shows a bare "connecting" or another wait's figure.
    pub async fn settle(&self, timeout: Duration) -> Vec<(String, LinkState)> {
        let deadline = tokio::time::Instant::now() + timeout;
        let waits = self.links.iter().map(|link| async move {
            let mut rx = link.watch_state();
            let _ = tokio::time::timeout_at(deadline, rx.wait_for(LinkState::is_settled)).await;
        });
        futures::future::join_all(waits).await;
        self.links
            .iter()
            .map(|l| {
                let state = match l.state() {
                    LinkState::Connecting { .. } => LinkState::Down {
                        since: Utc::now(),
                        reason: format!(
                            "no SSH connection within {}: still connecting when the wait ended",
                            super::fmt_duration(self.started.elapsed())
                        ),
                        retry_in_ms: 0,
                    },
                    settled => settled,
                };
                (l.name.clone(), state)
            })
            .collect()
    }

    /// Says goodbye on every open connection so servers free their sessions promptly.
    pub async fn shutdown(self) {
        for link in &self.links {
            link.task.abort();
            if let Some(session) = link.session() {
                let _ =
                    tokio::time::timeout(Duration::from_millis(500), session.disconnect()).await;
            }
        }
    }
}

struct Supervisor {
    /// Start the connection's helper shell as soon as it is up.
    warm: bool,
    host: HostConfig,
    ssh_config: Option<PathBuf>,
    known_hosts: Option<PathBuf>,
    tuning: LinkTuning,
    ping_every: Duration,
    jumps: Arc<Jumps>,
    state_tx: watch::Sender<LinkState>,
    session_tx: watch::Sender<Option<Arc<Session>>>,
}

impl Supervisor {
    async fn run(self) {
        let mut attempt: u32 = 0;
        let mut down_since: Option<DateTime<Utc>> = None;
        loop {
            if down_since.is_none() {
                self.set(LinkState::Connecting { attempt });
            }
            let reason = match self.connect().await {
                Ok(session) => {
                    let connected_at = Instant::now();
                    let reason = self.hold(Arc::new(session)).await;
                    self.session_tx.send_replace(None);
                    if connected_at.elapsed() >= STABLE_FOR {
                        attempt = 0;
                    }
                    down_since = Some(Utc::now());
                    reason
                }
                Err(e) if e.is_host_key() => {
                    // A refused host key is a decision, not a fault: retrying would only hide it.
                    self.set(LinkState::HostkeyRefused {
                        since: Utc::now(),
                        reason: e.to_string(),
                    });
                    return;
                }
                Err(TransportError::AuthRefused { user, reason }) => {
                    let reason = format!("{user}: {reason}");
                    self.set(LinkState::AuthRefused {
                        since: Utc::now(),
                        reason,
                    });
                    tokio::time::sleep(self.tuning.reconnect_max).await;
                    continue;
                }
                Err(e) => {
                    down_since.get_or_insert_with(Utc::now);
                    e.to_string()
                }
            };
            let delay = backoff(attempt, self.tuning.reconnect_max);
            attempt = attempt.saturating_add(1);
            self.set(LinkState::Down {
                since: down_since.unwrap_or_else(Utc::now),
                reason,
                retry_in_ms: delay.as_millis() as u64,
            });
            tokio::time::sleep(delay).await;
        }
    }

    async fn connect(&self) -> Result<Session, TransportError> {
        let resolved: ResolvedHost =
            ssh::resolve(&self.host.target, self.ssh_config.as_deref()).await?;
        let opts = ConnectOptions {
            known_hosts: self.known_hosts.clone(),
            accept_new: self.host.accept_new,
            identity: self.host.identity.clone(),
            connect_timeout: self
                .tuning
                .connect_timeout
                .or(resolved.connect_timeout)
                .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            keepalive_interval: self
                .tuning
                .keepalive_interval
                .or(resolved.keepalive_interval)
                .unwrap_or(DEFAULT_KEEPALIVE),
            keepalive_max: self
                .tuning
                .keepalive_max
                .or(resolved.keepalive_max)
                .unwrap_or(DEFAULT_KEEPALIVE_MAX),
            max_sessions: self.tuning.max_sessions,
        };
        Session::connect(&resolved, &opts, &self.jumps).await
    }

    /// Publishes the session and watches it until it is lost; returns why.
    async fn hold(&self, session: Arc<Session>) -> String {
        let since = Utc::now();
        if self.warm {
            session.warm_for_pulls();
        }
        let ping_timeout = self.ping_every.max(SLOW_RTT);
        // The first answers after login wait on sshd's own start-up traffic (its non-interactive
        // socket is not TCP_NODELAY, so a reply can sit behind a delayed ACK: 40 ms on
        // loopback); the quickest of a few is the link's round trip.
        let mut first_rtt = session.ping(ping_timeout).await;
        for _ in 1..FIRST_PINGS {
            match (&first_rtt, session.ping(ping_timeout).await) {
                (Ok(best), Ok(next)) if next < *best => first_rtt = Ok(next),
                (Ok(_), Ok(_)) => {}
                _ => break,
            }
        }
        // The session first, so whoever sees "up" can use it at once.
        self.session_tx.send_replace(Some(Arc::clone(&session)));
        self.publish_rtt(&session, since, first_rtt);
        let mut tick = tokio::time::interval(self.ping_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                reason = session.closed() => return reason,
                _ = tick.tick() => {
                    let rtt = session.ping(ping_timeout).await;
                    if let Err(TransportError::Disconnected(reason)) = &rtt {
                        return reason.clone();
                    }
                    self.publish_rtt(&session, since, rtt);
                }
            }
        }
    }

    fn publish_rtt(
        &self,
        session: &Session,
        since: DateTime<Utc>,
        rtt: Result<Duration, TransportError>,
    ) {
        let banner = session.banner.clone();
        let auth = session.auth.clone();
        let state = match rtt {
            Ok(rtt) if rtt < SLOW_RTT => LinkState::Up {
                since,
                rtt_ms: ms(rtt),
                banner,
                auth,
            },
            Ok(rtt) => LinkState::Degraded {
                since,
                rtt_ms: ms(rtt),
                banner,
                auth,
                reason: format!("slow: round trip {}", super::fmt_duration(rtt)),
            },
            Err(e) => LinkState::Degraded {
                since,
                rtt_ms: f64::NAN,
                banner,
                auth,
                reason: e.to_string(),
            },
        };
        self.set(state);
    }

    /// Publishes a link state; a change of kind goes to the debug log (RIGWATCH_LOG).
    fn set(&self, state: LinkState) {
        let before = self.state_tx.send_replace(state);
        let now = self.state_tx.borrow();
        if before.word() != now.word() {
            let to = crate::sanitize::line(&describe(&now), 500);
            tracing::info!(host = %self.host.name, "link {} -> {to}", before.word());
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Exponential from 0.5 s, capped, with "equal jitter": half fixed, half random, so a fleet
/// that lost its network together does not reconnect in lockstep, and no retry is instant.
pub fn backoff(attempt: u32, cap: Duration) -> Duration {
    let exp = FIRST_RETRY.saturating_mul(1u32 << attempt.min(16)).min(cap);
    exp / 2 + exp.mul_f64(fastrand::f64() / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let cap = Duration::from_secs(30);
        for attempt in 0..40 {
            let d = backoff(attempt, cap);
            let exp = FIRST_RETRY.saturating_mul(1u32 << attempt.min(16)).min(cap);
            assert!(d >= exp / 2 && d <= exp, "attempt {attempt}: {d:?}");
        }
        let samples: Vec<Duration> = (0..20).map(|_| backoff(10, cap)).collect();
        assert!(samples.iter().any(|d| *d != samples[0]), "jitter varies");
    }
}
