//! One shell on the box for many commands. sshd starts the login user's shell for every exec
//! channel, and on a rented box that shell runs conda's or pyenv's block from `~/.bashrc`
//! (0.1–0.2 s of the box's CPU, and a round trip, each time): a pull that asked for its
//! listing, hashes, tar batches and second listing on channels of their own paid it ten times.
//! Here one channel runs `exec sh`, which reads commands from its stdin as they are written (no
//! round trip between them). Each runs in a subshell with stdin from /dev/null, then prints a
//! line with a per-run nonce on stdout (with the exit status) and on stderr: those lines split
//! the two streams back into one reply per command, in the order they were sent (`framer`).
//! The connection keeps its helper for every pull and check over it (`SharedHelper`), as the
//! probe's long-lived streams pay the shell once per connection.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use memchr::memmem::Finder;
use russh::ChannelMsg;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::budget::Budget;
use super::error::TransportError;
use super::framer::{Framer, Piece};
use super::session::Session;

/// How long starting the helper may take before its commands go to channels of their own.
const START: Duration = Duration::from_secs(20);
/// Replies queued per command: the helper waits for a slow reader, as an exec channel does.
const REPLIES: usize = 16;
/// How long a command stopped by its reader may take to end before the helper is retired.
const STOPPED_GRACE: Duration = Duration::from_secs(2);

/// A running `exec sh` on its own channel, owned by a task; dropping this ends its stdin, and
/// the shell with it.
pub(super) struct Helper {
    requests: mpsc::Sender<Request>,
    marker: String,
    /// A command ran past its clock, or its reader stopped it and it went on past
    /// `STOPPED_GRACE`: it may still be running, and every later command would wait behind it,
    /// so the connection starts a new helper for those.
    retired: AtomicBool,
}

/// A connection's helper, shared by every pull, check and look at the box over it: started by
/// the first command (or `Session::warm_for_pulls` as the connection opens), kept while it lives,
/// and started again once it has ended or was retired. A box that refuses `exec sh` is asked
/// once per connection.
#[derive(Default)]
pub(super) struct SharedHelper {
    state: tokio::sync::Mutex<Started>,
}

#[derive(Default)]
enum Started {
    #[default]
    NotYet,
    Refused,
    Running(Arc<Helper>),
}

impl SharedHelper {
    /// The live helper, started now if there is none; None where the box refused one.
    pub(super) async fn get(&self, session: &Session) -> Option<Arc<Helper>> {
        let mut state = self.state.lock().await;
        match &*state {
            Started::Refused => return None,
            Started::Running(helper) if !helper.ended() => return Some(Arc::clone(helper)),
            Started::Running(_) | Started::NotYet => {}
        }
        // An ended or retired helper is let go first: that ends its shell's stdin, so its
        // channel (one of the connection's MaxSessions slots) closes once its last command
        // has, and the new helper may need that slot.
        *state = Started::NotYet;
        let started = Helper::start(session).await.map(Arc::new);
        *state = match &started {
            Some(helper) => Started::Running(Arc::clone(helper)),
            None => Started::Refused,
        };
        started
    }
}

struct Request {
    script: Vec<u8>,
    replies: mpsc::Sender<Reply>,
}

#[derive(Debug)]
enum Reply {
    /// The command is the one the shell runs now: its clock starts.
    Started,
    Out(Vec<u8>),
    Err(Vec<u8>),
    OutEnd(Option<u32>),
    ErrEnd,
}

/// How a command's wait is bounded once it has started.
#[derive(Debug, Clone, Copy)]
pub(super) enum Clock {
    /// The whole command.
    Total(Duration),
    /// Between two pieces of its stdout.
    Idle(Duration),
}

/// What a command gave back.
#[derive(Debug, Default)]
pub(super) struct Ran {
    pub status: Option<u32>,
    pub stderr: Vec<u8>,
    pub stderr_cut: bool,
    /// `out` asked to stop; the rest of its output is thrown away as it comes.
    pub stopped: bool,
}

impl Ran {
    /// A piece of stderr, kept up to `cap` bytes in all.
    fn keep_stderr(&mut self, data: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.stderr.len());
        self.stderr_cut |= data.len() > room;
        self.stderr.extend_from_slice(&data[..data.len().min(room)]);
    }
}

/// Why a command did not run to its end.
#[derive(Debug)]
pub(super) enum Attempt {
    /// The helper had ended before the command began: nothing ran, so it may go elsewhere.
    Gone,
    Failed(TransportError),
}

impl Helper {
    /// `exec sh` on a new channel of `session`; None where the box refuses it (then every
    /// command gets its own channel).
    pub(super) async fn start(session: &Session) -> Option<Helper> {
        let budget = Budget::new(START);
        let (permit, mut channel) = session.start_command("exec sh", Some(&budget)).await.ok()?;
        // The exec request's answer comes before any output; a refusal means no helper. A
        // server that does not answer in time is taken as started (as the probe's streams do).
        let answer = async {
            loop {
                match channel.wait().await {
                    Some(ChannelMsg::Success) => return true,
                    Some(ChannelMsg::WindowAdjusted { .. }) => {}
                    _ => return false,
                }
            }
        };
        if let Ok(false) = budget.step("starting the shell", answer).await {
            return None;
        }
        let marker = format!("@rwh-{:032x}:", fastrand::u128(..));
        let (requests, mut queue) = mpsc::channel::<Request>(REPLIES);
        let finder = Finder::new(marker.as_bytes()).into_owned();
        let (mut reading, writing) = channel.split();
        // Scripts are written by a task of their own: a write waits for the box's window,
        // and that window's adjust arrives behind the output this task must keep reading
        // (russh stops reading the whole connection while one channel's queue is full).
        let (scripts, mut to_write) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            while let Some(script) = to_write.recv().await {
                if writing.data(&script[..]).await.is_err() {
                    return;
                }
            }
            let _ = writing.eof().await;
            let _ = writing.close().await;
        });
        tokio::spawn(async move {
            let _permit = permit;
            let (mut outs, mut errs) = (VecDeque::new(), VecDeque::new());
            let mut out = Framer::new(finder.clone());
            let mut err = Framer::new(finder);
            let mut scripts = Some(scripts);
            loop {
                tokio::select! {
                    request = queue.recv(), if scripts.is_some() => match request {
                        Some(Request { script, replies }) => {
                            let sent = scripts.as_ref().is_some_and(|s| s.send(script).is_ok());
                            if !sent {
                                break;
                            }
                            if outs.is_empty() {
                                let _ = replies.send(Reply::Started).await;
                            }
                            outs.push_back(replies.clone());
                            errs.push_back(replies);
                        }
                        // No more commands: the writer ends the shell's stdin once it has
                        // written the last one.
                        None => scripts = None,
                    },
                    msg = reading.wait() => match msg {
                        Some(ChannelMsg::Data { data }) => {
                            for piece in out.push(&data) {
                                route(piece, &mut outs, true).await;
                            }
                        }
                        Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                            for piece in err.push(&data) {
                                route(piece, &mut errs, false).await;
                            }
                        }
                        Some(ChannelMsg::Close) | None => break,
                        Some(_) => {}
                    },
                }
            }
        });
        let helper = Helper {
            requests,
            marker,
            retired: AtomicBool::new(false),
        };
        // Whatever the login shell prints before the first command (a banner) is this no-op's.
        let (discard, _) = mpsc::channel(1);
        let script = helper.script(":");
        let hello = Request {
            script,
            replies: discard,
        };
        helper.requests.send(hello).await.ok()?;
        Some(helper)
    }

    pub(super) fn ended(&self) -> bool {
        self.requests.is_closed() || self.retired.load(Ordering::Relaxed)
    }

    /// The text written to the shell for `command`.
    fn script(&self, command: &str) -> Vec<u8> {
        let m = &self.marker;
        format!(
            "( {command}\n) </dev/null; s=$?; printf '{m}%s\\n' \"$s\"; printf '{m}%s\\n' \"$s\" >&2\n"
        )
        .into_bytes()
    }

    /// Runs `command`, its stdout handed to `out` as it comes (false stops), its stderr kept up
    /// to `err_cap`.
    pub(super) async fn run(
        &self,
        command: &str,
        clock: Clock,
        out: &mut (dyn FnMut(&[u8]) -> bool + Send),
        err_cap: usize,
    ) -> Result<Ran, Attempt> {
        let (replies, mut rx) = mpsc::channel(REPLIES);
        let request = Request {
            script: self.script(command),
            replies,
        };
        self.requests
            .send(request)
            .await
            .map_err(|_| Attempt::Gone)?;
        let mut ran = Ran::default();
        let (mut started, mut out_done, mut err_done) = (false, false, false);
        let mut deadline: Option<Instant> = None;
        let (limit, stage) = match clock {
            Clock::Total(d) => (d, "command"),
            Clock::Idle(d) => (d, "waiting for the command's output"),
        };
        while !(out_done && err_done) {
            let next = match deadline {
                None => rx.recv().await,
                Some(at) => match tokio::time::timeout_at(at, rx.recv()).await {
                    Ok(next) => next,
                    Err(_) => {
                        // Still running: every later command would wait behind it.
                        self.retired.store(true, Ordering::Relaxed);
                        if ran.stopped {
                            return Ok(ran);
                        }
                        let after = limit;
                        return Err(Attempt::Failed(TransportError::Timeout { stage, after }));
                    }
                },
            };
            match next {
                None if ran.stopped => {
                    self.retired.store(true, Ordering::Relaxed);
                    return Ok(ran);
                }
                None if started => {
                    let why = "the box's shell ended mid-command".to_string();
                    return Err(Attempt::Failed(TransportError::Disconnected(why)));
                }
                None => return Err(Attempt::Gone),
                Some(Reply::Started) => {
                    started = true;
                    deadline = Some(Instant::now() + limit);
                }
                // Stopped: its output is thrown away until it ends.
                Some(Reply::Out(_)) if ran.stopped => {}
                Some(Reply::Out(data)) => {
                    if let Clock::Idle(idle) = clock {
                        deadline = Some(Instant::now() + idle);
                    }
                    if !out(&data) {
                        // A copy stops at its last listed byte and its command ends at once,
                        // so the helper serves the next; one still running after
                        // `STOPPED_GRACE` (a listing past its cap) retires it.
                        ran.stopped = true;
                        deadline = Some(Instant::now() + STOPPED_GRACE);
                    }
                }
                Some(Reply::Err(data)) => ran.keep_stderr(&data, err_cap),
                Some(Reply::OutEnd(status)) => (ran.status, out_done) = (status, true),
                Some(Reply::ErrEnd) => err_done = true,
            }
        }
        Ok(ran)
    }
}

/// A piece of one stream to the command it belongs to; the end of one starts the next.
async fn route(piece: Piece, queue: &mut VecDeque<mpsc::Sender<Reply>>, stdout: bool) {
    match piece {
        Piece::Data(data) => {
            if let Some(to) = queue.front() {
                let data = if stdout {
                    Reply::Out(data)
                } else {
                    Reply::Err(data)
                };
                let _ = to.send(data).await;
            }
        }
        Piece::End(word) => {
            let Some(to) = queue.pop_front() else { return };
            if !stdout {
                let _ = to.send(Reply::ErrEnd).await;
                return;
            }
            let status = std::str::from_utf8(&word).ok().and_then(|w| w.parse().ok());
            let _ = to.send(Reply::OutEnd(status)).await;
            if let Some(next) = queue.front() {
                let _ = next.send(Reply::Started).await;
            }
        }
    }
}
