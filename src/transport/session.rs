//! One authenticated SSH connection to one box, shared by every command and stream for it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use russh::client::{self, Handle};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast, watch};

use super::algorithms::{cipher_order, preferred_host_key_algorithms};
use super::auth::authenticate;
use super::banner::{BannerTap, Duplex};
use super::budget::Budget;
use super::error::TransportError;
use super::handler::ClientHandler;
use super::jumps::Jumps;
use super::known_hosts;
use super::rate::LinkRate;
use super::sftp::{KeptSftp, SFTP_OPEN_TIMEOUT, SftpChannel};
use super::shell::{Helper, SharedHelper};
use crate::config::ssh::ResolvedHost;

/// A per-channel SSH window well above OpenSSH's fixed 2 MiB, so bulk reads are not capped at
/// window / RTT on long links. russh tops the window up only once half of it is used, so about
/// half is reliably in flight: on a 16-core machine whose 256 MiB pull ran at 650–820 MiB/s
/// through the bench's proxy with no delay, 64 MiB held it to ~310 MiB/s at 100 ms (1.12 s a
/// pull; the box's sftp-server waiting on the window) and 256 MiB let it run at 760–860 MiB/s
/// (0.80 s). It is permission, not memory: every channel's data is read as it arrives, and
/// what a pull asks is bounded by its pace (`pull::pace`), not by this.
pub const WINDOW_BYTES: u32 = 256 * 1024 * 1024;

/// Refused channel opens tried again (25, 50, 100 ms apart) before the refusal is reported.
const OPEN_RETRIES: u32 = 3;

#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Replaces the known_hosts files `ssh -G` names, when the fleet config sets one.
    pub known_hosts: Option<PathBuf>,
    pub accept_new: bool,
    /// Replaces the identity files `ssh -G` names.
    pub identity: Option<PathBuf>,
    pub connect_timeout: Duration,
    pub keepalive_interval: Duration,
    pub keepalive_max: u32,
    pub max_sessions: u32,
}

pub struct Session {
    handle: Handle<ClientHandler>,
    pub banner: String,
    pub auth: String,
    lost: watch::Receiver<Option<String>>,
    refusals: broadcast::Sender<russh::ChannelId>,
    slots: Arc<Semaphore>,
    /// The jump host's name and its shared connection, kept alive while this one uses it.
    jump: Option<(String, Arc<Session>)>,
    helper: SharedHelper,
    sftp: KeptSftp,
    link_rate: Arc<LinkRate>,
}

/// How long a lost connection behind a jump host waits to see whether the jump host's own
/// connection went too (both end together when the bastion dies), so the reason names it.
const JUMP_GRACE: Duration = Duration::from_millis(300);

impl Session {
    /// Connects and authenticates within `opts.connect_timeout` in all: the jump hosts, TCP,
    /// the handshake and authentication share it, and a timeout says how long really passed.
    /// A jump host's connection is taken from `jumps` when one is live there, else made and
    /// shared through it.
    pub async fn connect(
        host: &ResolvedHost,
        opts: &ConnectOptions,
        jumps: &Jumps,
    ) -> Result<Session, TransportError> {
        Session::connect_within(host, opts, Budget::new(opts.connect_timeout), jumps).await
    }

    pub(super) async fn connect_within(
        host: &ResolvedHost,
        opts: &ConnectOptions,
        budget: Budget,
        jumps: &Jumps,
    ) -> Result<Session, TransportError> {
        let jump = match &host.proxy_jump {
            Some(jump_host) => {
                let jump_opts = ConnectOptions {
                    identity: None,
                    ..opts.clone()
                };
                let name = format!("jump host {}", jump_host.original);
                let session = jumps
                    .connect(jump_host, &jump_opts, budget)
                    .await
                    .map_err(|e| TransportError::Connect {
                        addr: name.clone(),
                        reason: e.to_string(),
                    })?;
                Some((name, session))
            }
            None => None,
        };
        let addr = format!("{}:{}", host.hostname, host.port);
        let stream: Box<dyn Duplex> = match &jump {
            Some((_, j)) => {
                let open = j.handle.channel_open_direct_tcpip(
                    host.hostname.clone(),
                    u32::from(host.port),
                    "127.0.0.1",
                    0,
                );
                let channel = budget.step("jump forward", open).await?.map_err(|e| {
                    TransportError::Connect {
                        addr: addr.clone(),
                        reason: e.to_string(),
                    }
                })?;
                Box::new(channel.into_stream())
            }
            None => {
                let tcp = budget
                    .step("TCP connect", tokio::net::TcpStream::connect(&addr))
                    .await?
                    .map_err(|e| TransportError::Connect {
                        addr: addr.clone(),
                        reason: lookup_hint(host, e.to_string()),
                    })?;
                let _ = tcp.set_nodelay(true);
                Box::new(tcp)
            }
        };

        let known_files = match &opts.known_hosts {
            Some(path) => vec![path.clone()],
            None => host.known_hosts_files.clone(),
        };
        let known_name = host.known_hosts_name();
        let recorded =
            known_hosts::recorded_algorithms(&known_hosts::read_files(&known_files), &known_name);
        let mut config = client::Config {
            keepalive_interval: Some(opts.keepalive_interval),
            keepalive_max: opts.keepalive_max as usize,
            window_size: WINDOW_BYTES,
            nodelay: true,
            ..Default::default()
        };
        config.preferred.cipher = cipher_order().into();
        let preferred = preferred_host_key_algorithms(&recorded);
        if !preferred.is_empty() {
            config.preferred.key = preferred.into();
        }
        let rejection = Arc::new(Mutex::new(None));
        let (lost_tx, lost) = watch::channel(None);
        let (refusals, _) = broadcast::channel(16);
        let handler = ClientHandler {
            known_name,
            host: host.hostname.clone(),
            port: host.port,
            accept_new_into: opts
                .accept_new
                .then(|| known_files.first().cloned())
                .flatten(),
            hash_new: host.hash_known_hosts,
            known_files,
            rejection: Arc::clone(&rejection),
            lost: lost_tx,
            refusals: refusals.clone(),
        };
        let (tap, banner) = BannerTap::new(stream);
        let handshake = client::connect_stream(Arc::new(config), tap, handler);
        let mut handle = match budget.step("SSH handshake", handshake).await? {
            Err(e) => {
                let refused = rejection.lock().ok().and_then(|mut r| r.take());
                return Err(refused.unwrap_or_else(|| TransportError::Connect {
                    addr,
                    reason: e.to_string(),
                }));
            }
            Ok(handle) => handle,
        };
        let key_files = match &opts.identity {
            Some(path) => vec![path.clone()],
            None => host.identity_files.clone(),
        };
        let identities_only = host.identities_only || opts.identity.is_some();
        let auth = budget
            .step(
                "authentication",
                authenticate(&mut handle, &host.user, &key_files, identities_only),
            )
            .await??;
        let banner = banner
            .lock()
            .ok()
            .and_then(|b| b.clone())
            .unwrap_or_default();
        Ok(Session {
            handle,
            banner,
            auth,
            lost,
            refusals,
            slots: Arc::new(Semaphore::new(opts.max_sessions.max(1) as usize)),
            jump,
            helper: SharedHelper::default(),
            sftp: KeptSftp::default(),
            link_rate: Arc::default(),
        })
    }

    /// The shell on the box this connection's commands share (`shell`), started now if it is
    /// not running; None where the box refuses one.
    pub(super) async fn helper(&self) -> Option<Arc<Helper>> {
        self.helper.get(self).await
    }

    /// The rate the link last delivered a pull at (`rate`), shared by every pull over it.
    pub fn link_rate(&self) -> Arc<LinkRate> {
        Arc::clone(&self.link_rate)
    }

    /// The connection's SFTP channel (`sftp`), opened within `timeout` if none works.
    pub async fn sftp(&self, timeout: Duration) -> Result<Arc<SftpChannel>, TransportError> {
        self.sftp.get(self, timeout).await
    }

    /// Starts the shared shell and opens the SFTP channel now, in the background, so the first
    /// pull or look at the box waits for neither of the box's login shells (conda's block:
    /// 0.15–0.26 s of its CPU each) nor for SFTP's four round trips.
    pub fn warm_for_pulls(self: &Arc<Self>) {
        let session = Arc::clone(self);
        tokio::spawn(async move {
            let _ = tokio::join!(session.helper(), session.sftp(SFTP_OPEN_TIMEOUT));
        });
    }

    /// Why the connection ended, once it has; a lost jump host is named as the cause.
    pub fn lost_reason(&self) -> Option<String> {
        if let Some((name, jump)) = &self.jump {
            if let Some(reason) = jump.lost_reason() {
                return Some(format!("{name}: {reason}"));
            }
        }
        if let Some(reason) = self.lost.borrow().clone() {
            return Some(reason);
        }
        self.handle
            .is_closed()
            .then(|| "connection closed".to_string())
    }

    /// The connection's loss as a watch, for what lives on the connection (an SFTP channel).
    /// Channels whose request the server refuses from now on (see `ClientHandler::refusals`).
    pub(super) fn refusals(&self) -> broadcast::Receiver<russh::ChannelId> {
        self.refusals.subscribe()
    }

    pub(super) fn lost_watch(&self) -> watch::Receiver<Option<String>> {
        self.lost.clone()
    }

    /// Resolves when the connection (or the jump host's under it) is lost, with the reason.
    pub async fn closed(&self) -> String {
        let own = async {
            let mut lost = self.lost.clone();
            match lost.wait_for(Option::is_some).await {
                Ok(reason) => reason.clone().unwrap_or_default(),
                Err(_) => "connection task ended".to_string(),
            }
        };
        let Some((name, jump)) = &self.jump else {
            return own.await;
        };
        let reason = tokio::select! {
            reason = Box::pin(jump.closed()) => return format!("{name}: {reason}"),
            reason = own => reason,
        };
        match tokio::time::timeout(JUMP_GRACE, Box::pin(jump.closed())).await {
            Ok(jump_reason) => format!("{name}: {jump_reason}"),
            Err(_) => reason,
        }
    }

    /// One protocol round trip, no process started on the box.
    pub async fn ping(&self, timeout: Duration) -> Result<Duration, TransportError> {
        let start = Instant::now();
        Budget::new(timeout)
            .step("ping", self.handle.send_ping())
            .await??;
        match self.lost_reason() {
            Some(reason) => Err(TransportError::Disconnected(reason)),
            None => Ok(start.elapsed()),
        }
    }

    /// A free slot, a new channel and `command` started on it: how every command begins. Waiting
    /// for the slot and the channel is bounded by `budget` where one is given.
    pub(super) async fn start_command(
        &self,
        command: &str,
        budget: Option<&Budget>,
    ) -> Result<(OwnedSemaphorePermit, russh::Channel<client::Msg>), TransportError> {
        async fn bounded<T>(
            step: impl std::future::Future<Output = T>,
            budget: Option<&Budget>,
            stage: &'static str,
        ) -> Result<T, TransportError> {
            match budget {
                None => Ok(step.await),
                Some(budget) => budget.step(stage, step).await,
            }
        }
        let slot = Arc::clone(&self.slots).acquire_owned();
        let permit = bounded(slot, budget, "waiting for a free channel")
            .await?
            .map_err(|_| TransportError::Disconnected("session closed".into()))?;
        let channel = bounded(self.open_channel(), budget, "channel open").await??;
        channel.exec(true, command).await?;
        Ok((permit, channel))
    }

    pub(super) fn slots(&self) -> &Arc<Semaphore> {
        &self.slots
    }

    /// Opens a session channel. sshd frees a closed channel's MaxSessions slot a moment after
    /// both CLOSE messages have passed, so an open that follows a close closely can be refused
    /// while nothing is really in use; a refusal is tried again, briefly, before it is reported.
    pub(super) async fn open_channel(&self) -> Result<russh::Channel<client::Msg>, TransportError> {
        let mut wait = Duration::from_millis(25);
        for _ in 0..OPEN_RETRIES {
            match self.handle.channel_open_session().await {
                Err(russh::Error::ChannelOpenFailure(_)) => {
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                other => return Ok(other?),
            }
        }
        Ok(self.handle.channel_open_session().await?)
    }

    pub async fn disconnect(&self) {
        let _ = self
            .handle
            .disconnect(russh::Disconnect::ByApplication, "rigwatch closing", "en")
            .await;
    }
}

/// A name that does not resolve and that no `Host` block of the ssh config renamed is most
/// likely a typo of an alias: said in those words, not only the resolver's.
fn lookup_hint(host: &ResolvedHost, reason: String) -> String {
    let unresolved =
        reason.contains("failed to lookup address") || reason.contains("Name or service not known");
    if unresolved && host.hostname == host.original {
        format!(
            "{reason}; {:?} is not a Host in your ssh config (`ssh -G {}` shows what ssh \
             makes of it) and does not resolve as a name: check the spelling",
            host.hostname, host.original
        )
    } else {
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::lookup_hint;
    use crate::config::ssh::parse_ssh_g;

    #[test]
    fn an_alias_typo_is_said_as_one_and_a_renamed_host_is_not() {
        let failed = "failed to lookup address information: Name or service not known";
        let typo = parse_ssh_g("gpubox-typo", "user root\nhostname gpubox-typo\nport 22\n")
            .expect("ssh -G text");
        let said = lookup_hint(&typo, failed.to_string());
        assert!(
            said.ends_with(
                "\"gpubox-typo\" is not a Host in your ssh config (`ssh -G gpubox-typo` \
                 shows what ssh makes of it) and does not resolve as a name: check the spelling"
            ),
            "{said}"
        );
        // An alias the config renamed: the name it points at is the one that failed.
        let alias = parse_ssh_g("gpubox", "user root\nhostname gpu.example.org\nport 22\n")
            .expect("ssh -G text");
        assert_eq!(lookup_hint(&alias, failed.to_string()), failed);
        assert_eq!(
            lookup_hint(&typo, "Connection refused".into()),
            "Connection refused"
        );
    }
}
