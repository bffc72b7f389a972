//! An SFTP channel on a host's pooled connection, for pulling results home.

use std::time::Duration;

use russh::ChannelMsg;
use russh_sftp::client::RawSftpSession;
use tokio::sync::OwnedSemaphorePermit;

use super::budget::Budget;
use super::error::TransportError;
use super::session::Session;

/// The raw SFTP client, so callers can keep many reads of one file in flight; holds one of the
/// server's MaxSessions slots for as long as it lives.
pub struct SftpChannel {
    pub raw: RawSftpSession,
    /// The largest read the server answers whole, from its `limits@openssh.com` extension
    /// (OpenSSH 8.9+: 255 KiB); None where it does not say (older OpenSSH caps reads at 64 KiB).
    pub max_read: Option<u64>,
    /// The connection's loss, so a copy stops waiting the moment it is gone: russh-sftp ends
    /// its reader with the channel but leaves the reads in flight to their own timeouts.
    lost: tokio::sync::watch::Receiver<Option<String>>,
    _slot: OwnedSemaphorePermit,
}

impl SftpChannel {
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
        let mut channel = budget.step("channel open", self.open_channel()).await??;
        budget
            .step("sftp subsystem", channel.request_subsystem(true, "sftp"))
            .await??;
        // russh sends the request and returns; sshd's answer comes on the channel. A refusal
        // (no `Subsystem sftp` line) is said at once, not after the init's timeout.
        let answer = async {
            loop {
                match channel.wait().await {
                    Some(ChannelMsg::Success) => return Ok(()),
                    Some(ChannelMsg::Failure) | None => {
                        return Err(TransportError::Ssh(NO_SFTP.into()));
                    }
                    Some(_) => {}
                }
            }
        };
        budget.step("sftp subsystem", answer).await??;
        let raw = RawSftpSession::new(channel.into_stream());
        raw.set_timeout(REQUEST_TIMEOUT_SECS);
        let version = budget
            .step("sftp init", raw.init())
            .await?
            .map_err(|e| TransportError::Ssh(format!("{NO_SFTP} ({e})")))?;
        let max_read = if version
            .extensions
            .contains_key(russh_sftp::extensions::LIMITS)
        {
            match budget.step("sftp limits", raw.limits()).await {
                Ok(Ok(limits)) => (limits.max_read_len > 0).then_some(limits.max_read_len),
                _ => None,
            }
        } else {
            None
        };
        Ok(SftpChannel {
            raw,
            max_read,
            lost: self.lost_watch(),
            _slot: slot,
        })
    }
}
