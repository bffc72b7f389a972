//! Why a link or a command failed, typed so callers can tell a refused host key (never retried)
//! from a network fault (retried) from a busy server (wait for a slot).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::ssh::ResolveError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum TransportError {
    #[error("{0}")]
    Resolve(String),
    #[error("connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// `after` is the time that really passed since the wait began (budget.rs), for every step
    /// that shared it: the figure a user compares with the timeout they set.
    #[error("{stage} timed out after {}", crate::transport::fmt_duration(*after))]
    Timeout {
        stage: &'static str,
        after: Duration,
    },
    #[error(
        "host key for {name} is not in known_hosts ({fingerprint}); refusing to connect. \
         Check the fingerprint with your provider, then add it with \
         `ssh-keyscan -p {port} {host} >> {file}`, or set accept_new = true for this host \
         to trust it on first use"
    )]
    HostKeyUnknown {
        name: String,
        host: String,
        port: u16,
        fingerprint: String,
        file: String,
    },
    #[error(
        "HOST KEY CHANGED for {name}: the server now presents {fingerprint}, which does not \
         match {}:{line}. This may be an attack or a rebuilt box; rigwatch will not connect. \
         If the box was rebuilt, remove the old entry with `ssh-keygen -f '{}' -R '{name}'`",
        file.display(),
        file.display()
    )]
    HostKeyChanged {
        name: String,
        fingerprint: String,
        file: PathBuf,
        line: usize,
    },
    #[error("host key for {name} ({fingerprint}) is marked @revoked at {}:{line}", file.display())]
    HostKeyRevoked {
        name: String,
        fingerprint: String,
        file: PathBuf,
        line: usize,
    },
    #[error("authentication refused for {user}: {reason}")]
    AuthRefused { user: String, reason: String },
    #[error("the server refused a new channel: all its sessions (MaxSessions) are in use")]
    SlotsExhausted,
    /// sshd answered the exec request with a failure: it could not fork the command (the box is
    /// out of processes or memory), though the connection itself is fine.
    #[error("the box could not start the command (sshd refused it: out of processes or memory?)")]
    CommandRefused,
    #[error("link is down: {0}")]
    LinkDown(String),
    #[error("connection lost: {0}")]
    Disconnected(String),
    #[error("ssh: {0}")]
    Ssh(String),
    /// The server refused the `sftp` subsystem (no `Subsystem sftp` line): a connection's
    /// server keeps the configuration it started with, so it refuses again on that connection.
    #[error("ssh: the server has no SFTP subsystem; check `Subsystem sftp` in its sshd_config")]
    SftpRefused,
    /// kubectl could not run a command in a pod (its own words, sanitized, one line).
    #[error("{0}")]
    Kubectl(String),
}

impl TransportError {
    /// A refused host key must never be retried as if it were a network fault.
    pub fn is_host_key(&self) -> bool {
        matches!(
            self,
            Self::HostKeyUnknown { .. } | Self::HostKeyChanged { .. } | Self::HostKeyRevoked { .. }
        )
    }
}

impl From<russh::Error> for TransportError {
    fn from(e: russh::Error) -> Self {
        match e {
            russh::Error::ChannelOpenFailure(_) => TransportError::SlotsExhausted,
            russh::Error::Disconnect | russh::Error::SendError | russh::Error::HUP => {
                TransportError::Disconnected(e.to_string())
            }
            russh::Error::KeepaliveTimeout => {
                TransportError::Disconnected("no answer to keepalives".into())
            }
            russh::Error::IO(io) => TransportError::Disconnected(io.to_string()),
            other => TransportError::Ssh(other.to_string()),
        }
    }
}

impl From<ResolveError> for TransportError {
    fn from(e: ResolveError) -> Self {
        TransportError::Resolve(e.to_string())
    }
}
