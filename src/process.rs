//! Running a local command (a destroy, a provider CLI, an alert sink) so that a timeout ends
//! everything it started. Killing only `sh -c` leaves its children running: a slow destroy
//! could still take effect after rigwatch recorded it failed. Each command therefore runs in
//! its own process group, and at its timeout (or when the future is dropped) the whole group
//! is ended: SIGTERM, a short grace, then SIGKILL.
//!
//! Its own group also keeps a terminal's Ctrl-C (sent to rigwatch's group) from reaching it:
//! rigwatch decides what a Ctrl-C means while a destroy runs. Imports nothing else of ours.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

/// How long a timed-out group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub enum Ended {
    /// It exited by itself (`code()` is None when a signal ended it).
    Exited(ExitStatus),
    /// Still running at the timeout: its whole process group was ended.
    TimedOut(Duration),
}

#[derive(Debug)]
pub struct Finished {
    pub ended: Ended,
    /// The first `cap` bytes of each stream (nothing when it timed out).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// A stream printed more than `cap`; the rest was read and dropped.
    pub over_cap: bool,
}

impl Finished {
    /// The exit code; None for a timeout or a signal.
    pub fn code(&self) -> Option<i32> {
        match &self.ended {
            Ended::Exited(status) => status.code(),
            Ended::TimedOut(_) => None,
        }
    }
}

/// Runs `command` in a new process group with `stdin` on its stdin (closed when None), keeps at
/// most `cap` bytes of each output stream, and ends the group if it outlives `timeout`. Err only
/// when it could not start.
pub async fn run(
    command: Command,
    stdin: Option<&[u8]>,
    timeout: Duration,
    cap: usize,
) -> std::io::Result<Finished> {
    let input = stdin.map_or(Input::Closed, Input::Bytes);
    run_with(command, input, timeout, cap).await
}

/// What a command reads on its stdin.
#[derive(Debug)]
pub enum Input<'a> {
    /// Nothing (/dev/null).
    Closed,
    /// These bytes, through a pipe.
    Bytes(&'a [u8]),
    /// This open file: a lock the command must keep held for as long as it (or any process
    /// that keeps its stdin) runs. The file is empty, so reading it gives end-of-file.
    Holding(std::fs::File),
}

/// [`run`], with any [`Input`].
pub async fn run_with(
    mut command: Command,
    input: Input<'_>,
    timeout: Duration,
    cap: usize,
) -> std::io::Result<Finished> {
    let (stdin, into) = match input {
        Input::Closed => (None, Stdio::null()),
        Input::Bytes(bytes) => (Some(bytes), Stdio::piped()),
        Input::Holding(file) => (None, Stdio::from(file)),
    };
    let (mut child, mut group) = spawn_group(&mut command, into)?;
    let (mut input, out, err) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let feed = async {
        if let (Some(pipe), Some(bytes)) = (input.as_mut(), stdin) {
            // A program that does not read its stdin is not an error.
            let _ = pipe.write_all(bytes).await;
        }
        drop(input);
    };
    let work = async {
        let ((), out, err, status) = tokio::join!(
            feed,
            read_capped(out, cap),
            read_capped(err, cap),
            child.wait()
        );
        Ok::<_, std::io::Error>((out?, err?, status?))
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(done) => {
            // It exited: what is left in its group (a daemon it started on purpose) is its own.
            group.0 = None;
            let ((stdout, over_out), (stderr, over_err), status) = done?;
            Ok(Finished {
                ended: Ended::Exited(status),
                stdout,
                stderr,
                over_cap: over_out || over_err,
            })
        }
        Err(_) => {
            group.signal(Signal::SIGTERM);
            let _ = tokio::time::timeout(GRACE, child.wait()).await;
            group.signal(Signal::SIGKILL);
            group.0 = None;
            // Reap the leader; an error means it is already gone, which is what we want.
            child.kill().await.ok();
            Ok(Finished {
                ended: Ended::TimedOut(timeout),
                stdout: Vec::new(),
                stderr: Vec::new(),
                over_cap: false,
            })
        }
    }
}

/// How a streamed command ended.
#[derive(Debug, Default)]
pub struct Streamed {
    /// Its exit code; None when a signal ended it or it was ended here.
    pub code: Option<i32>,
    /// The first `stderr_cap` bytes of its stderr.
    pub stderr: Vec<u8>,
    /// The sink asked to stop; the group was ended.
    pub stopped: bool,
    /// Nothing arrived for `idle`; the group was ended.
    pub stalled: bool,
}

/// Runs `command` in a new process group, handing each piece of its stdout to `sink` as it
/// arrives (false stops it): bytes of any size pass through without being held. No bound on
/// the whole, which a checkpoint of tens of GiB would outgrow: the group is ended when nothing
/// arrives for `idle`, or when the sink stops. Err only when it could not start.
/// Starts `command` as the leader of its own process group, stdout and stderr piped, `stdin` on
/// its stdin, killed if dropped: the group is what a timeout ends.
fn spawn_group(command: &mut Command, stdin: Stdio) -> std::io::Result<(Child, Group)> {
    command
        .process_group(0)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn()?;
    let group = Group(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    );
    Ok((child, group))
}

pub async fn stream(
    mut command: Command,
    idle: Duration,
    stderr_cap: usize,
    sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
) -> std::io::Result<Streamed> {
    let (mut child, mut group) = spawn_group(&mut command, Stdio::null())?;
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let mut end = Streamed::default();
    // Stderr is drained beside stdout, so a chatty child never blocks on a full pipe.
    let stderr = tokio::spawn(read_capped(err, stderr_cap));
    if let Some(mut out) = out {
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            match tokio::time::timeout(idle, out.read(&mut buf)).await {
                Err(_) => {
                    end.stalled = true;
                    break;
                }
                Ok(Ok(0)) => break,
                Ok(Ok(n)) => {
                    if !sink(&buf[..n]) {
                        end.stopped = true;
                        break;
                    }
                }
                Ok(Err(e)) => return Err(e),
            }
        }
    }
    if end.stopped || end.stalled {
        // Dropping the armed group ends everything the command started.
        drop(group);
        child.kill().await.ok();
    } else {
        end.code = match tokio::time::timeout(idle, child.wait()).await {
            Ok(status) => {
                // It exited: what is left in its group is its own, as with `run`.
                group.0 = None;
                status?.code()
            }
            Err(_) => {
                end.stalled = true;
                drop(group);
                child.kill().await.ok();
                None
            }
        };
    }
    end.stderr = match stderr.await {
        Ok(Ok((bytes, _))) => bytes,
        _ => Vec::new(),
    };
    Ok(end)
}

/// Whether process `pid` exists (on this machine): the ledger names the rigwatch that runs a
/// destroy, so a later start can tell a destroy in flight from one whose rigwatch was stopped.
pub fn running(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // Signal 0 only asks; EPERM means it exists but is someone else's.
    !matches!(
        nix::sys::signal::kill(Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// A running command's process group, ended with SIGKILL if dropped while still armed (the
/// future was cancelled, or rigwatch is unwinding).
struct Group(Option<Pid>);

impl Group {
    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.0 {
            // ESRCH: the group is already empty.
            let _ = killpg(pgid, signal);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// Keeps the first `cap` bytes and drains the rest, so a chatty child never blocks on a full
/// pipe while we wait for it; the bool says whether anything was dropped.
async fn read_capped<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    cap: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let Some(pipe) = pipe else {
        return Ok((Vec::new(), false));
    };
    let mut bytes = Vec::new();
    let mut head = pipe.take(cap as u64);
    head.read_to_end(&mut bytes).await?;
    let dropped = tokio::io::copy(&mut head.into_inner(), &mut tokio::io::sink()).await?;
    Ok((bytes, dropped > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    fn alive(pid: i32) -> bool {
        // Signal 0 asks whether the process exists without touching it; a zombie counts as gone.
        nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
    }

    #[tokio::test]
    async fn a_timeout_ends_the_child_of_the_child() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > '{}'; sleep 30", pidfile.display());
        let started = std::time::Instant::now();
        let done = run(sh(&script), None, Duration::from_millis(500), 1024)
            .await
            .expect("starts");
        assert!(matches!(done.ended, Ended::TimedOut(_)), "{done:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .expect("pidfile")
            .trim()
            .parse()
            .expect("pid");
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(pid)
        });
        assert!(gone, "the backgrounded sleep {pid} outlived the timeout");
    }

    #[tokio::test]
    async fn output_exit_stdin_and_cap() {
        let done = run(
            sh("cat; echo oops >&2; exit 3"),
            Some(b"hello"),
            Duration::from_secs(5),
            1024,
        )
        .await
        .expect("starts");
        assert_eq!(done.code(), Some(3));
        assert_eq!(
            (done.stdout.as_slice(), done.stderr.as_slice()),
            (&b"hello"[..], &b"oops\n"[..])
        );
        assert!(!done.over_cap);
        let flood = run(
            sh("head -c 100000 /dev/zero"),
            None,
            Duration::from_secs(5),
            10,
        )
        .await
        .expect("starts");
        assert_eq!((flood.stdout.len(), flood.over_cap), (10, true));
        let missing = run(
            Command::new("/nonexistent/rigwatch-test"),
            None,
            Duration::from_secs(1),
            10,
        )
        .await;
        assert!(missing.is_err());
    }
}
