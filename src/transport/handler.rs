//! The russh client handler: checks the host key against known_hosts and reports a lost link.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use russh::client::{self, DisconnectReason};
use russh::keys::{HashAlg, PublicKeyOrCertificate};
use tokio::sync::{broadcast, watch};

use super::error::TransportError;
use super::known_hosts::{self, Verdict, WireKey};

pub struct ClientHandler {
    pub known_name: String,
    pub host: String,
    pub port: u16,
    pub known_files: Vec<PathBuf>,
    /// Where to record an unknown key when the user allowed trust on first use.
    pub accept_new_into: Option<PathBuf>,
    /// Whether an entry added there is hashed (`HashKnownHosts yes`).
    pub hash_new: bool,
    pub rejection: Arc<Mutex<Option<TransportError>>>,
    pub lost: watch::Sender<Option<String>>,
    /// Each channel whose request the server refused (`CHANNEL_FAILURE`), for a caller that
    /// sent the request and went on without waiting for its answer (`Session::sftp`).
    pub refusals: broadcast::Sender<russh::ChannelId>,
}

impl ClientHandler {
    fn reject(&self, error: TransportError) -> Result<bool, russh::Error> {
        if let Ok(mut slot) = self.rejection.lock() {
            *slot = Some(error);
        }
        Ok(false)
    }
}

impl client::Handler for ClientHandler {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        presented: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let PublicKeyOrCertificate::PublicKey { key, .. } = presented else {
            return self.reject(TransportError::Ssh(
                "the server presented a host certificate; rigwatch checks plain host keys only"
                    .into(),
            ));
        };
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let Ok(blob) = key.to_bytes() else {
            return self.reject(TransportError::Ssh(
                "the server's host key cannot be encoded".into(),
            ));
        };
        let algorithm = key.algorithm();
        let wire = WireKey {
            algorithm: algorithm.as_str(),
            blob: &blob,
        };
        let files = known_hosts::read_files(&self.known_files);
        let name = self.known_name.clone();
        match known_hosts::check_texts(&files, &name, &wire) {
            Verdict::Known { .. } => Ok(true),
            Verdict::Changed { file, line } => self.reject(TransportError::HostKeyChanged {
                name,
                fingerprint,
                file,
                line,
            }),
            Verdict::Revoked { file, line } => self.reject(TransportError::HostKeyRevoked {
                name,
                fingerprint,
                file,
                line,
            }),
            Verdict::Unknown => match &self.accept_new_into {
                Some(path) => {
                    let recorded =
                        key.to_openssh()
                            .map_err(std::io::Error::other)
                            .and_then(|openssh| {
                                known_hosts::append(path, &name, &openssh, self.hash_new)
                            });
                    match recorded {
                        Ok(()) => Ok(true),
                        Err(e) => self.reject(TransportError::Ssh(format!(
                            "accept_new: cannot record the host key in {}: {e}",
                            path.display()
                        ))),
                    }
                }
                None => {
                    let file = self
                        .known_files
                        .first()
                        .map_or_else(|| "~/.ssh/known_hosts".into(), |p| p.display().to_string());
                    self.reject(TransportError::HostKeyUnknown {
                        name,
                        host: self.host.clone(),
                        port: self.port,
                        fingerprint,
                        file,
                    })
                }
            },
        }
    }

    async fn channel_failure(
        &mut self,
        channel: russh::ChannelId,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        // No one listening is fine: most requests' answers are awaited on their channel.
        let _ = self.refusals.send(channel);
        Ok(())
    }

    async fn disconnected(
        &mut self,
        reason: DisconnectReason<Self::Error>,
    ) -> Result<(), Self::Error> {
        let text = match &reason {
            DisconnectReason::ReceivedDisconnect(info) => {
                format!(
                    "server closed the connection: {}",
                    crate::sanitize::line(&info.message, 200)
                )
            }
            DisconnectReason::Error(russh::Error::KeepaliveTimeout) => {
                "no answer to keepalives: peer frozen or unreachable".to_string()
            }
            DisconnectReason::Error(e) => e.to_string(),
        };
        self.lost.send_replace(Some(text));
        match reason {
            DisconnectReason::ReceivedDisconnect(_) => Ok(()),
            DisconnectReason::Error(e) => Err(e),
        }
    }
}
