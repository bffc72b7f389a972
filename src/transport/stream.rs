//! Long-lived commands (the GPU stream, the periodic probe): each channel is drained by its own
//! task into a bounded queue of lines, so a slow reader can never freeze the shared connection
//! (russh refills a window when data arrives, not when it is read). Lines beyond the queue are
//! dropped and counted instead of pushing back into the session.

use std::sync::Arc;

use russh::ChannelMsg;
use tokio::sync::mpsc;

use super::error::TransportError;
use super::session::Session;

/// Lines queued per stream before new ones are dropped.
pub const STREAM_QUEUE: usize = 4096;
/// How long a new stream waits for sshd's answer to its exec request.
const EXEC_ANSWER: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a stream that ended without an exit status waits to learn whether the connection
/// went with it.
const LINK_LOSS_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// One line of stdout or stderr (merged, as `2>&1` would), without its newline, cut at the cap.
    Line(String),
    /// The remote command ended. `dropped` counts lines lost to a full queue. `link_lost` says
    /// why, when the stream ended because the connection did (the link's news, not the
    /// command's).
    Ended {
        exit_status: Option<u32>,
        dropped: u64,
        link_lost: Option<String>,
    },
}

/// Bytes for a stream's stdin: the probe loop waits on a line there instead of forking `sleep`.
pub type StreamInput = mpsc::Sender<Vec<u8>>;

impl Session {
    /// Starts `command` on its own channel and returns its lines as they come. Dropping the
    /// receiver closes the channel.
    pub async fn stream(
        self: &Arc<Self>,
        command: &str,
        max_line: usize,
    ) -> Result<mpsc::Receiver<StreamEvent>, TransportError> {
        self.stream_inner(command, max_line, None).await
    }

    /// As `stream`, with a sender for the command's stdin.
    pub async fn stream_with_input(
        self: &Arc<Self>,
        command: &str,
        max_line: usize,
    ) -> Result<(mpsc::Receiver<StreamEvent>, StreamInput), TransportError> {
        let (input, inputs) = mpsc::channel(16);
        let rx = self.stream_inner(command, max_line, Some(inputs)).await?;
        Ok((rx, input))
    }

    async fn stream_inner(
        self: &Arc<Self>,
        command: &str,
        max_line: usize,
        mut inputs: Option<mpsc::Receiver<Vec<u8>>>,
    ) -> Result<mpsc::Receiver<StreamEvent>, TransportError> {
        let (permit, mut channel) = self.start_command(command, None).await?;
        // sshd answers the exec request before the command's output (russh does not wait for
        // it): a refusal (no process slot on the box) is an error here, not a stream that ends
        // with no exit status. Anything else that comes first is kept for the loop; a server
        // that does not answer at all is taken as started.
        let mut first = match tokio::time::timeout(EXEC_ANSWER, channel.wait()).await {
            Ok(Some(ChannelMsg::Failure)) => return Err(TransportError::CommandRefused),
            Ok(Some(ChannelMsg::Success)) | Err(_) => None,
            Ok(other) => Some(other),
        };
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let session = Arc::clone(self);
        let (mut channel, writing) = channel.split();
        let writing = Arc::new(writing);
        // The stdin is written by a task of its own: a write waits for the box's window, whose
        // adjust arrives behind output this loop must keep reading (russh stops reading the
        // whole connection while one channel's queue is full).
        if let Some(mut inputs) = inputs.take() {
            let writing = Arc::clone(&writing);
            tokio::spawn(async move {
                while let Some(bytes) = inputs.recv().await {
                    if writing.data(&bytes[..]).await.is_err() {
                        return;
                    }
                }
            });
        }
        tokio::spawn(async move {
            let _permit = permit;
            let mut splitter = LineSplitter::new(max_line);
            let mut exit_status = None;
            let mut dropped = 0u64;
            loop {
                let msg = if let Some(msg) = first.take() {
                    msg
                } else {
                    tokio::select! {
                        msg = channel.wait() => msg,
                        () = tx.closed() => break,
                    }
                };
                let data = match msg {
                    Some(ChannelMsg::Data { data })
                    | Some(ChannelMsg::ExtendedData { data, .. }) => data,
                    Some(ChannelMsg::ExitStatus { exit_status: s }) => {
                        exit_status = Some(s);
                        continue;
                    }
                    // A refusal that came after the wait for it: the command never started.
                    Some(ChannelMsg::Close | ChannelMsg::Failure) | None => break,
                    Some(_) => continue,
                };
                for line in splitter.push(&data) {
                    if tx.try_send(StreamEvent::Line(line)).is_err() {
                        dropped += 1;
                    }
                }
            }
            if let Some(rest) = splitter.finish() {
                let _ = tx.try_send(StreamEvent::Line(rest));
            }
            let _ = writing.close().await;
            // A command that ends on its own sends its exit status first; without one, the
            // channel usually went with the connection, whose loss is noticed a moment later.
            let link_lost = match exit_status {
                Some(_) => None,
                None => tokio::time::timeout(LINK_LOSS_GRACE, session.closed())
                    .await
                    .ok(),
            };
            let _ = tx
                .send(StreamEvent::Ended {
                    exit_status,
                    dropped,
                    link_lost,
                })
                .await;
        });
        Ok(rx)
    }
}

/// Splits bytes into lines, keeping at most `max_line` bytes of each (the rest of a runaway
/// line is skipped, not buffered).
pub struct LineSplitter {
    current: Vec<u8>,
    max_line: usize,
}

impl LineSplitter {
    pub fn new(max_line: usize) -> Self {
        LineSplitter {
            current: Vec::new(),
            max_line,
        }
    }

    pub fn push(&mut self, data: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        for &b in data {
            if b == b'\n' {
                let line = String::from_utf8_lossy(&self.current);
                lines.push(line.trim_end_matches('\r').to_string());
                self.current.clear();
            } else if self.current.len() < self.max_line {
                self.current.push(b);
            }
        }
        lines
    }

    pub fn finish(&mut self) -> Option<String> {
        if self.current.is_empty() {
            return None;
        }
        let line = String::from_utf8_lossy(&self.current).to_string();
        self.current.clear();
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks_and_runaway_lines_are_cut() {
        let mut s = LineSplitter::new(5);
        assert_eq!(s.push(b"ab"), Vec::<String>::new());
        assert_eq!(s.push(b"c\r\nxyz1234567\n\xffq"), vec!["abc", "xyz12"]);
        assert_eq!(s.finish().as_deref(), Some("\u{fffd}q"));
        assert_eq!(s.finish(), None);
    }
}
