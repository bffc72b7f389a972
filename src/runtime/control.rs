//! The control socket: a dashboard or `watch` lends its pooled connections to a `rigwatch pull`
//! of the same fleet file, as OpenSSH's ControlMaster lends its master connection, so the pull
//! pays no SSH handshake and no login (8 round trips, 0.8 s at 100 ms: `tests/pull_rounds.rs`).
//! The serving process runs the pull itself, as its own `p` would (the target's lock, the
//! ledger, the status bar's line), and streams its progress and its end to the asking process,
//! which prints them as its own pull would. Whatever else happens (nothing serving, the host
//! configured otherwise there, its link down, the target busy, another rigwatch build, a
//! server that does not answer) the asking process pulls over a connection of its own, as
//! before: the lock still keeps the two from overlapping.
//!
//! The socket lives in the private state folder (0700), is itself 0600, and a peer that is not
//! this user is refused. Only pulls are served: a pull reads the box and writes home; nothing
//! that destroys or writes on a box goes through here. A pull whose asker goes away (Ctrl-C)
//! runs to its end in the serving process, recorded in the ledger as any other.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

use crate::config::HostConfig;
use crate::pull::{Progress, Pulled, Tally};

/// What a `rigwatch pull` asks for: one host's pull, as that host is configured on its side.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Request {
    host: String,
    /// `digest` of the host's config on the asking side.
    digest: String,
}

/// What the serving side answers, a JSON line each.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub enum Frame {
    /// `Progress::figures`, every 200 ms while the pull runs.
    Progress([u64; 6]),
    /// The pull ended and is in the ledger.
    Pulled(Ended),
    /// The pull started and failed.
    Failed(String),
    /// Not served here: the asker pulls on its own.
    NotHere(String),
}

/// A recorded pull, as `Pulled` without its book's error (the ledger has its files).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Ended {
    id: i64,
    host: String,
    unmatched: Vec<String>,
    local_disk_full: bool,
    files: usize,
    bytes: u64,
    sent: u64,
    outcomes: [usize; 3],
}

impl From<&Pulled> for Ended {
    fn from(p: &Pulled) -> Ended {
        Ended {
            id: p.id,
            host: p.host.clone(),
            unmatched: p.unmatched.clone(),
            local_disk_full: p.local_disk_full,
            files: p.tally.files,
            bytes: p.tally.bytes,
            sent: p.tally.sent,
            outcomes: p.tally.outcomes,
        }
    }
}

impl From<Ended> for Pulled {
    fn from(e: Ended) -> Pulled {
        Pulled {
            id: e.id,
            host: e.host,
            unmatched: e.unmatched,
            local_disk_full: e.local_disk_full,
            tally: Tally {
                files: e.files,
                bytes: e.bytes,
                sent: e.sent,
                outcomes: e.outcomes,
                local_disk_full: e.local_disk_full,
                book_error: None,
            },
        }
    }
}

/// A pull asked for, handed to the runtime: the host, its config's digest on the asking side,
/// and where the answer goes.
pub struct Asked {
    pub host: String,
    pub digest: String,
    pub reply: mpsc::Sender<Frame>,
}

/// A host's config as a pull would use it, with this build's version, and the `PATH` and
/// folder its `verify` commands would run with: two processes agree on it only where they would
/// pull the same way.
pub fn digest(host: &HostConfig) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let here = std::env::current_dir().unwrap_or_default();
    let text = format!("{} {host:?} {path:?} {here:?}", env!("CARGO_PKG_VERSION"));
    crate::pull::local::hex(&Sha256::digest(text.as_bytes()))
}

/// The socket of `fleet`'s serving process: in the state folder, named by the fleet file's
/// path (a process serves the fleet file it loaded, and only that).
pub fn socket_path(state: &Path, fleet: &Path) -> PathBuf {
    let at = std::fs::canonicalize(fleet).unwrap_or_else(|_| fleet.to_path_buf());
    let name = crate::pull::local::hex(&Sha256::digest(at.as_os_str().as_encoded_bytes()));
    state.join("control").join(format!("{}.sock", &name[..16]))
}

/// The serving side's socket while it is held: its accepting task ends and its file is removed
/// (if it is still this one's) when dropped.
pub struct Serving {
    path: PathBuf,
    inode: u64,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        self.task.abort();
        if std::fs::metadata(&self.path).is_ok_and(|m| m.ino() == self.inode) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Starts serving `fleet`'s pulls on its socket, unless another live process already does (or
/// the socket cannot be made: then nothing is served, and a `rigwatch pull` connects itself).
pub fn serve(fleet: &Path) -> Option<(Serving, mpsc::Receiver<Asked>)> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let path = socket_path(&crate::config::paths::state_dir()?, fleet);
    crate::config::paths::private_dir(path.parent()?).ok()?;
    if std::os::unix::net::UnixStream::connect(&path).is_ok() {
        tracing::debug!(path = %path.display(), "control: another process serves this fleet");
        return None;
    }
    // Left by a process that died: nobody answers on it.
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)
        .inspect_err(|e| tracing::debug!(path = %path.display(), "control: not served: {e}"))
        .ok()?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).ok()?;
    let inode = std::fs::metadata(&path).ok()?.ino();
    let (tx, rx) = mpsc::channel(16);
    let task = tokio::spawn(accept(listener, tx));
    Some((Serving { path, inode, task }, rx))
}

async fn accept(listener: UnixListener, tx: mpsc::Sender<Asked>) {
    let me = nix::unistd::geteuid().as_raw();
    while let Ok((stream, _)) = listener.accept().await {
        if stream.peer_cred().is_ok_and(|c| c.uid() == me) {
            tokio::spawn(answer(stream, tx.clone()));
        }
    }
}

/// One asker: its request read (one line, bounded in size and time), handed to the runtime,
/// and every frame the runtime sends written back until the last.
async fn answer(stream: UnixStream, tx: mpsc::Sender<Asked>) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut lines = BufReader::new(read.take(4096));
    let got = tokio::time::timeout(Duration::from_secs(5), lines.read_line(&mut line)).await;
    let Ok(Ok(1..)) = got else { return };
    let Ok(request) = serde_json::from_str::<Request>(&line) else {
        return;
    };
    let (reply, mut frames) = mpsc::channel(8);
    let asked = Asked {
        host: request.host,
        digest: request.digest,
        reply,
    };
    if tx.send(asked).await.is_err() {
        return;
    }
    while let Some(frame) = frames.recv().await {
        let Ok(mut text) = serde_json::to_string(&frame) else {
            return;
        };
        text.push('\n');
        if write.write_all(text.as_bytes()).await.is_err() {
            // The asker went away; the pull goes on (the module's comment).
            return;
        }
    }
}

/// Runs `pulling`, sending `progress`'s figures to `reply` every 200 ms until it ends.
pub async fn reporting<T>(
    pulling: impl Future<Output = T>,
    progress: &Progress,
    reply: &mpsc::Sender<Frame>,
) -> T {
    tokio::pin!(pulling);
    let mut every = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            out = &mut pulling => return out,
            _ = every.tick() => {
                let _ = reply.try_send(Frame::Progress(progress.figures()));
            }
        }
    }
}

/// How a pull asked of a serving process went.
pub enum Served {
    Pulled(Ended),
    Failed(String),
    /// Not served (why, for the debug log): pull on a connection of this process's own.
    No(String),
}

/// Asks the process serving `fleet` (if any) to pull `host`, mirroring its progress into
/// `progress`. Waits for the first answer at most `FIRST_ANSWER`; then as long as the pull runs.
pub async fn ask(fleet: &Path, host: &HostConfig, progress: &Arc<Progress>) -> Served {
    let Some(state) = crate::config::paths::state_dir() else {
        return Served::No("no state folder".into());
    };
    let path = socket_path(&state, fleet);
    let Ok(stream) = UnixStream::connect(&path).await else {
        return Served::No("nothing serves this fleet".into());
    };
    let (read, mut write) = stream.into_split();
    let request = Request {
        host: host.name.clone(),
        digest: digest(host),
    };
    let Ok(mut text) = serde_json::to_string(&request) else {
        return Served::No("the request did not serialize".into());
    };
    text.push('\n');
    if write.write_all(text.as_bytes()).await.is_err() {
        return Served::No("the serving process went away".into());
    }
    let mut lines = BufReader::new(read).lines();
    let mut wait = FIRST_ANSWER;
    loop {
        let line = match tokio::time::timeout(wait, lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(_) => return Served::No("the serving process closed the socket".into()),
            Err(_) => return Served::No("the serving process did not answer".into()),
        };
        wait = BETWEEN_FRAMES;
        match serde_json::from_str::<Frame>(&line) {
            Ok(Frame::Progress(figures)) => progress.mirror(figures),
            Ok(Frame::Pulled(ended)) => return Served::Pulled(ended),
            Ok(Frame::Failed(why)) => return Served::Failed(crate::sanitize::line(&why, 400)),
            Ok(Frame::NotHere(why)) => return Served::No(why),
            Err(e) => return Served::No(format!("an answer did not parse: {e}")),
        }
    }
}

/// How long the asker waits for the serving process's first word (its runtime answers between
/// two readings; the pull's own progress follows every 200 ms).
const FIRST_ANSWER: Duration = Duration::from_secs(5);
/// The longest silence between two frames of a pull that runs (they come every 200 ms): past it
/// the serving process is taken as stuck, and the asker pulls on its own (waiting for the
/// target's lock, which that pull still holds, if it does).
const BETWEEN_FRAMES: Duration = Duration::from_secs(60);
