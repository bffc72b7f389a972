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
    _slot: OwnedSemaphorePermit,
}

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
        raw.set_timeout(timeout.as_secs().max(5));
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
            _slot: slot,
        })
    }
}
