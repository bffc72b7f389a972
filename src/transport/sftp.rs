//! An SFTP channel on a host's pooled connection, for pulling results home. The connection
//! keeps one (`KeptSftp`) for every pull over it, as it keeps its helper shell: opening one
//! costs the box a login shell (sshd runs sftp-server through it: conda's block, 0.15–0.26 s
//! of CPU) and four round trips, which were the start of every big file's copy.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use russh_sftp::client::RawSftpSession;
use russh_sftp::client::error::Error as SftpError;
use russh_sftp::protocol::{FileAttributes, OpenFlags, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, broadcast};

use super::budget::Budget;
use super::error::TransportError;
use super::handles::Handles;
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
    /// A copy found it broken (`retire`): the connection opens another for the next pull.
    retired: AtomicBool,
    /// Whether its stream has ended (its sftp-server exited, the channel closed): the
    /// connection opens another for the next pull, and copies on it stop (`closed`).
    gone: tokio::sync::watch::Receiver<bool>,
    /// Its handles as opened and closed here, so the next open's can be known (`handles`).
    handles: std::sync::Mutex<Handles>,
    _slot: OwnedSemaphorePermit,
}

impl SftpChannel {
    /// Marks the channel as not to be handed out again: a request on it failed other than with
    /// the server's answer (a timeout, a closed stream), or its reads stopped being answered,
    /// so its sftp-server may still be busy with them. Those using it keep it till they end.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
    }

    fn usable(&self) -> bool {
        !self.retired.load(Ordering::Relaxed)
            && !*self.gone.borrow()
            && self.lost.borrow().is_none()
    }

    /// The largest read the server answers whole, from its `limits@openssh.com` extension
    /// (OpenSSH 8.9+: 255 KiB); None where it does not say (older OpenSSH caps reads at 64 KiB).
    /// Asked once, as the channel opens (`KeptSftp::get`) and never waited for there: a copy
    /// that finds it unanswered asks it beside its file's open, so its round trip is not one
    /// more before the first read.
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

    /// The server's largest read where it is known already (`max_read`), without asking.
    pub fn known_max_read(&self) -> Option<u64> {
        self.max_read.get().copied().flatten()
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, Handles> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens `name` to read, the request sent before this returns: its answer (the handle),
    /// and the handle it will name where that is known now (`handles`: an OpenSSH server with
    /// no file open on the channel), so reads can be sent with it before the answer. A read
    /// sent with a guess the answer does not name read no file, and is asked again.
    pub fn open_read<'a>(
        &'a self,
        name: &str,
    ) -> (
        impl Future<Output = Result<String, SftpError>> + Send + 'a,
        Option<String>,
    ) {
        let mut open = Box::pin(self.raw.open(
            name.to_string(),
            OpenFlags::READ,
            FileAttributes::default(),
        ));
        let mut unanswered = Unanswered {
            channel: self,
            answered: false,
        };
        let (guess, sent) = {
            let mut handles = self.handles();
            let guess = handles.guess().filter(|_| self.has_limits);
            handles.opening();
            (guess, send_now(&mut open))
        };
        let answered = async move {
            let result = match sent {
                Some(result) => result,
                None => open.await,
            };
            unanswered.answered(result.as_ref().ok().map(|h| h.handle.as_str()));
            result.map(|h| h.handle)
        };
        (answered, guess)
    }

    /// Closes `handle`: the request is sent at the first poll, in the order of every other
    /// open and close (the order the server frees and gives its slots).
    pub async fn close(&self, handle: String) {
        let mut close = Box::pin(self.raw.close(handle.clone()));
        let sent = {
            let mut handles = self.handles();
            handles.closing(&handle);
            send_now(&mut close)
        };
        let result = match sent {
            Some(result) => result,
            None => close.await,
        };
        let ok = matches!(result, Ok(s) if s.status_code == StatusCode::Ok);
        self.handles().closed(ok);
    }

    /// Resolves when the channel can answer nothing more, saying why: the connection under it
    /// was lost, or its stream ended (the box's sftp-server exited: killed, out of memory),
    /// where russh-sftp would leave the requests in flight to their timeouts.
    pub async fn closed(&self) -> String {
        let (mut lost, mut gone) = (self.lost.clone(), self.gone.clone());
        tokio::select! {
            reason = lost.wait_for(Option::is_some) => match reason {
                Ok(reason) => format!("connection lost: {}", reason.clone().unwrap_or_default()),
                Err(_) => "connection lost: connection task ended".to_string(),
            },
            _ = gone.wait_for(|ended| *ended) => {
                "the box's sftp-server ended (its channel closed)".to_string()
            }
        }
    }
}

/// Polls `request` once: russh-sftp sends a request at its first poll, so it is sent now.
fn send_now<F: Future + Unpin>(request: &mut F) -> Option<F::Output> {
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    match Pin::new(request).poll(&mut cx) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// An open sent and not yet answered: one whose copy was dropped first leaves its handle (if
/// any) unknown, so the channel's table is no longer known.
struct Unanswered<'a> {
    channel: &'a SftpChannel,
    answered: bool,
}

impl Unanswered<'_> {
    fn answered(&mut self, handle: Option<&str>) {
        self.channel.handles().opened(handle);
        self.answered = true;
    }
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.channel.handles().given_up();
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

/// A connection's SFTP channel, shared by every pull over it: opened by the first that needs it
/// (or `Session::warm_for_pulls` as the connection opens), kept while it works, and opened again
/// once it ended or was retired. A server that refused the subsystem is not asked again on the
/// connection (it keeps the configuration it started with): asking cost each pull from a box
/// without SFTP a round trip before its first piece. One whose sftp-server could not start
/// (not installed: the subsystem is granted, its command fails, a login shell each time) is
/// asked again at each pull, as it may be installed since.
#[derive(Default)]
pub(super) struct KeptSftp {
    kept: tokio::sync::Mutex<Option<Arc<SftpChannel>>>,
    refused: AtomicBool,
}

impl KeptSftp {
    /// The kept channel, opened now (within `timeout`) if there is none that works. Callers
    /// that ask while it opens wait for that one rather than open a second.
    pub(super) async fn get(
        &self,
        session: &Session,
        timeout: Duration,
    ) -> Result<Arc<SftpChannel>, TransportError> {
        let mut kept = self.kept.lock().await;
        if let Some(channel) = kept.as_ref().filter(|c| c.usable()) {
            return Ok(Arc::clone(channel));
        }
        // An ended channel is let go first: once its last user ends it frees its MaxSessions
        // slot, which the new one may need.
        *kept = None;
        if self.refused.load(Ordering::Relaxed) {
            return Err(TransportError::SftpRefused);
        }
        let opened = match session.open_sftp(timeout).await {
            Ok(opened) => Arc::new(opened),
            Err(e) => {
                let refused = matches!(e, TransportError::SftpRefused);
                self.refused.store(refused, Ordering::Relaxed);
                return Err(e);
            }
        };
        *kept = Some(Arc::clone(&opened));
        // The server's read size is asked now, not at the first copy: that copy's first reads
        // go with its open (`open_read`), sized by it where it is known by then.
        let asking = Arc::clone(&opened);
        tokio::spawn(async move { asking.max_read().await });
        Ok(opened)
    }
}

/// The channel's stream, noting when it ends: russh-sftp's reader stops quietly at the end of
/// its stream, and a kept channel must not be handed to the next pull after that.
struct Watched<S> {
    inner: S,
    /// Set once the stream has ended: the channel's opening waits on it beside the init, and
    /// its copies beside their reads (`SftpChannel::closed`).
    gone: Arc<tokio::sync::watch::Sender<bool>>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let (asked, before) = (buf.remaining(), buf.filled().len());
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(read) = &polled {
            if read.is_err() || (asked > 0 && buf.filled().len() == before) {
                self.gone.send_replace(true);
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Err(_)) = &polled {
            self.gone.send_replace(true);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// How long opening an SFTP channel may take, whoever asks (a pull, or the warm-up as a pull
/// host connects).
pub const SFTP_OPEN_TIMEOUT: Duration = Duration::from_secs(30);

impl Session {
    pub(super) async fn open_sftp(&self, timeout: Duration) -> Result<SftpChannel, TransportError> {
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
        let gone = Arc::new(tokio::sync::watch::Sender::new(false));
        let mut ending = gone.subscribe();
        let stream = Watched {
            inner: channel.into_stream(),
            gone: Arc::clone(&gone),
        };
        let raw = RawSftpSession::new(stream);
        raw.set_timeout(REQUEST_TIMEOUT_SECS);
        let init = async {
            tokio::select! {
                version = raw.init() => version
                    .map_err(|e| TransportError::Ssh(format!("{NO_SFTP} ({e})"))),
                () = refused => Err(TransportError::SftpRefused),
                // Granted, but its program ended before answering (not installed): russh-sftp
                // would leave the init to its timeout, a minute of every pull from such a box.
                _ = ending.wait_for(|ended| *ended) => Err(TransportError::Ssh(format!(
                    "{NO_SFTP} (it ended before answering: is its sftp-server installed?)"
                ))),
            }
        };
        let version = budget.step("sftp init", init).await??;
        let has_limits = version
            .extensions
            .contains_key(russh_sftp::extensions::LIMITS);
        Ok(SftpChannel {
            raw,
            has_limits,
            max_read: tokio::sync::OnceCell::new(),
            lost: self.lost_watch(),
            retired: AtomicBool::new(false),
            gone: gone.subscribe(),
            handles: std::sync::Mutex::default(),
            _slot: slot,
        })
    }
}
