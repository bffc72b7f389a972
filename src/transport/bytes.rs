//! A command whose stdout is bytes to keep, not text to read: a file streamed off a box that has
//! no SFTP, written as it arrives so its size is bounded by the disk, not by memory.

use std::time::Duration;

use russh::ChannelMsg;

use super::error::TransportError;
use super::session::Session;

/// Stderr kept for the message when the command fails.
const STDERR_KEPT: usize = 4096;

/// How a byte stream ended.
#[derive(Debug, Default)]
pub struct BytesEnd {
    pub exit_status: Option<u32>,
    pub stderr: Vec<u8>,
    /// The sink asked to stop (its own error is the caller's to report).
    pub stopped: bool,
}

impl Session {
    /// Runs `command` on its own channel, handing each piece of its stdout to `sink` as it
    /// arrives (`sink` returns false to stop). No limit on the whole, which a checkpoint of tens
    /// of GiB would outgrow: it ends if nothing arrives for `idle`.
    pub async fn exec_bytes(
        &self,
        command: &str,
        idle: Duration,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> Result<BytesEnd, TransportError> {
        let timed = |stage: &'static str| TransportError::Timeout { stage, after: idle };
        // A slot may be held by another file's copy for minutes: no bound on waiting for one
        // (a dead link ends the wait through the session's keepalives).
        let (permit, mut channel) = self.start_command(command, None).await?;
        let mut end = BytesEnd::default();
        let mut refused = false;
        let mut stalled = false;
        loop {
            let Ok(msg) = tokio::time::timeout(idle, channel.wait()).await else {
                stalled = true;
                break;
            };
            match msg {
                Some(ChannelMsg::Failure) => {
                    refused = true;
                    break;
                }
                Some(ChannelMsg::Data { data }) => {
                    if !sink(&data) {
                        end.stopped = true;
                        break;
                    }
                }
                Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                    let room = STDERR_KEPT.saturating_sub(end.stderr.len());
                    end.stderr.extend_from_slice(&data[..data.len().min(room)]);
                }
                Some(ChannelMsg::ExitStatus { exit_status }) => end.exit_status = Some(exit_status),
                Some(ChannelMsg::Close) | None => break,
                Some(_) => {}
            }
        }
        let _ = channel.close().await;
        drop(permit);
        if refused {
            return Err(TransportError::CommandRefused);
        }
        if stalled {
            return Err(timed("waiting for the command's output"));
        }
        if end.exit_status.is_none() && !end.stopped {
            if let Some(reason) = self.lost_reason() {
                return Err(TransportError::Disconnected(reason));
            }
        }
        Ok(end)
    }
}
