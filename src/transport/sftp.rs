//! An SFTP channel on a host's pooled connection, for pulling results home.

use std::time::Duration;

use russh_sftp::client::RawSftpSession;
use tokio::sync::{OwnedSemaphorePermit, broadcast};

use super::budget::Budget;
use super::error::TransportError;
use super::session::Session;

/// The raw SFTP client, so callers can keep many reads of one file in flight; holds one of the
/// server's MaxSessions slots for as long as it lives.
pub struct SftpChannel {
    pub raw: RawSftpSession,
    /// Whether the server offers `limits@openssh.com` (OpenSSH 8.9+).
    has_limits: bool,
    max_read: tokio::sync::OnceCell<Option<u64>>,
    /// The connection's loss, so a copy stops waiting the moment it is gone: russh-sftp ends
    /// its reader with the channel but leaves the reads in flight to their own timeouts.
    lost: tokio::sync::watch::Receiver<Option<String>>,
    _slot: OwnedSemaphorePermit,
}

impl SftpChannel {
    /// The largest read the server answers whole, from its `limits@openssh.com` extension
    /// (OpenSSH 8.9+: 255 KiB); None where it does not say (older OpenSSH caps reads at 64 KiB).
    /// Asked once, when first needed: a copy asks it beside its file's open, so its round trip
    /// is not one more before the first read.
    pub async fn max_read(&self) -> Option<u64> {
        if !self.has_limits {
            return None;
        }
        *self
            .max_read
            .get_or_init(|| async {
                match tokio::time::timeout(LIMITS_TIMEOUT, self.raw.limits()).await {
                    Ok(Ok(limits)) => (limits.max_read_len > 0).then_some(limits.max_read_len),
                    _ => None,
                }
            })
            .await
    }

    /// Resolves when the connection under the channel is lost, with the reason.
    pub async fn closed(&self) -> String {
        let mut lost = self.lost.clone();
        match lost.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "connection task ended".to_string(),
        }
    }
}

/// How long one SFTP request may wait for its answer. A read's answer waits behind every read
/// queued before it: on a 56 kbit/s link one 255 KiB read takes ~37 s, and a copy keeps many
/// in flight, so this only bounds a server that stopped answering on a live link; the copy's
/// own idle rule (no answer to any read for a while) and the connection's loss end it sooner.
const REQUEST_TIMEOUT_SECS: u64 = 600;

/// How long the server's limits are waited for before reads fall back to 64 KiB.
const LIMITS_TIMEOUT: Duration = Duration::from_secs(30);

const NO_SFTP: &str =
    "the server has no SFTP subsystem or refused it; check `Subsystem sftp` in its sshd_config";

impl Session {
    pub async fn sftp(&self, timeout: Duration) -> Result<SftpChannel, TransportError> {
        // One budget for the whole opening, as for a command (budget.rs).
        let budget = Budget::new(timeout);
        let slot = budget
            .step(
                "waiting for a free channel",
                self.slots().clone().acquire_owned(),
            )
            .await?
            .map_err(|_| TransportError::Disconnected("session closed".into()))?;
        let channel = budget.step("channel open", self.open_channel()).await??;
        // The subsystem is asked for and its answer not waited for: the init goes out right
        // behind it (one round trip less; sshd hands it to sftp-server once that runs). A
        // refusal (no `Subsystem sftp` line) comes back as the channel's CHANNEL_FAILURE, said
        // at once rather than after the init's timeout.
        let (id, mut refusals) = (channel.id(), self.refusals());
        budget
            .step("sftp subsystem", channel.request_subsystem(true, "sftp"))
            .await??;
        let refused = async {
            loop {
                match refusals.recv().await {
                    Ok(refused) if refused == id => return,
                    Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
                    _ => {}
                }
            }
        };
        let raw = RawSftpSession::new(channel.into_stream());
        raw.set_timeout(REQUEST_TIMEOUT_SECS);
        let init = async {
            tokio::select! {
                version = raw.init() => version.map_err(|e| format!("{NO_SFTP} ({e})")),
                () = refused => Err(NO_SFTP.to_string()),
            }
        };
        let version = budget
            .step("sftp init", init)
            .await?
            .map_err(TransportError::Ssh)?;
        let has_limits = version
            .extensions
            .contains_key(russh_sftp::extensions::LIMITS);
        Ok(SftpChannel {
            raw,
            has_limits,
            max_read: tokio::sync::OnceCell::new(),
            lost: self.lost_watch(),
            _slot: slot,
        })
    }
}
