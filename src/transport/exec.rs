//! One command on a channel of its own: its output kept up to a cap, its input written while
//! its output is read, within one time budget.

use std::time::Duration;

use russh::ChannelMsg;

use super::budget::Budget;
use super::error::TransportError;
use super::session::Session;

#[derive(Debug, Clone, Copy)]
pub struct ExecLimits {
    pub timeout: Duration,
    pub max_output: usize,
}

impl Default for ExecLimits {
    fn default() -> Self {
        ExecLimits {
            timeout: Duration::from_secs(15),
            max_output: 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// None when the command ended without an exit status (killed by a signal).
    pub exit_status: Option<u32>,
    /// Output went past the cap; what is kept is the beginning.
    pub truncated: bool,
}

impl ExecOutput {
    /// How the command ended, in words: "exit 1", or that no status came (a signal ended it).
    pub fn status_words(&self) -> String {
        status_words(self.exit_status)
    }

    /// What it said on stderr, as one safe line.
    pub fn stderr_line(&self, max_chars: usize) -> String {
        crate::sanitize::joined(&String::from_utf8_lossy(&self.stderr), max_chars)
    }
}

/// An exit status in words: "exit 1", or "ended without an exit status (a signal)".
pub fn status_words(status: Option<u32>) -> String {
    status.map_or_else(
        || "ended without an exit status (a signal)".to_string(),
        |code| format!("exit {code}"),
    )
}

impl Session {
    /// Runs one command on its own channel within `limits.timeout` in all (waiting for a slot,
    /// the channel and the output). The channel is always closed, also after a timeout, so an
    /// abandoned command does not hold one of the server's MaxSessions slots.
    pub async fn exec(
        &self,
        command: &str,
        limits: ExecLimits,
    ) -> Result<ExecOutput, TransportError> {
        self.exec_with_input(command, &[], limits).await
    }

    /// As `exec`, with `input` on the command's stdin, then its end: how lists the user or the
    /// box makes long reach a command, never in its command line (which sshd hands to the login
    /// shell as one argument, capped by Linux at 128 KiB).
    pub async fn exec_with_input(
        &self,
        command: &str,
        input: &[u8],
        limits: ExecLimits,
    ) -> Result<ExecOutput, TransportError> {
        let budget = Budget::new(limits.timeout);
        let (permit, channel) = self.start_command(command, Some(&budget)).await?;
        let (mut channel, writing) = channel.split();
        // The input is written while the output is read, never first: a write waits for the
        // box's window, whose adjust arrives behind output that must be read (russh stops
        // reading the connection while one channel's queue is full).
        let write = async {
            if !input.is_empty() {
                writing.data(input).await?;
                writing.eof().await?;
            }
            Ok::<(), russh::Error>(())
        };
        let mut out = ExecOutput {
            stdout: Vec::new(),
            stderr: Vec::new(),
            exit_status: None,
            truncated: false,
        };
        let mut refused = false;
        let read = async {
            while let Some(msg) = channel.wait().await {
                match msg {
                    // The exec request's answer (want_reply): russh does not wait for it.
                    ChannelMsg::Failure => {
                        refused = true;
                        break;
                    }
                    ChannelMsg::Data { data } => keep(
                        &mut out.stdout,
                        &data,
                        limits.max_output,
                        &mut out.truncated,
                    ),
                    ChannelMsg::ExtendedData { data, ext: 1 } => keep(
                        &mut out.stderr,
                        &data,
                        limits.max_output,
                        &mut out.truncated,
                    ),
                    ChannelMsg::ExitStatus { exit_status } => out.exit_status = Some(exit_status),
                    ChannelMsg::Close => break,
                    _ => {}
                }
            }
        };
        let drained = budget
            .step("command", async { tokio::join!(write, read).0 })
            .await;
        let _ = writing.close().await;
        drop(permit);
        if refused {
            return Err(TransportError::CommandRefused);
        }
        // A command that ended with its status stands, whether or not it read all its input.
        if let Err(e) = drained? {
            if out.exit_status.is_none() {
                return Err(e.into());
            }
        }
        if out.exit_status.is_none() {
            if let Some(reason) = self.lost_reason() {
                return Err(TransportError::Disconnected(reason));
            }
        }
        Ok(out)
    }
}

pub(super) fn keep(buf: &mut Vec<u8>, data: &[u8], cap: usize, truncated: &mut bool) {
    let room = cap.saturating_sub(buf.len());
    if data.len() > room {
        *truncated = true;
    }
    buf.extend_from_slice(&data[..data.len().min(room)]);
}
