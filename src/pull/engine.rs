//! One pull of one host: list (into a spool) and, as the listing comes, a chunk of files at a
//! time (`listed`, `chunk`): decide per file, copy what is missing (many small files at once, a
//! big one with many reads in flight), hash both ends, look at the box again to catch files
//! that changed while they were copied, verify; each chunk's records go to the pull's book (the
//! ledger) as it ends.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::progress::{Progress, Stage};

use chrono::Utc;

use super::book::{Book, Kept};
use super::channel::{LazySftp, Opening};
use super::chunk::{Shared, Tally, pull_chunks};
use super::copy::disk;
use super::listed::Listed;
use super::pace::Budget;
use super::protect::Protected;
use super::remote::{
    Listing, RemoteFile, listing_command, parse_listing, parse_resolved, resolve_commands,
    settle_links,
};
use super::scribe::Scribe;
use super::spool::Spool;
use super::{PullError, names};
use crate::config::PullConfig;
use crate::ledger::{PullRecord, PulledFile};
use crate::transport::{BoxExec, ExecLimits, OneShell, Session};

/// The box's files under the pull paths, with every link judged (see `remote`'s rule). A
/// listing that fails, is cut or ends without a status is an error, never an empty folder.
pub async fn list_remote<B: BoxExec>(
    session: &B,
    host: &str,
    spec: &PullConfig,
) -> Result<Listing, PullError> {
    let limits = ExecLimits {
        timeout: Duration::from_secs(120),
        max_output: 32 * 1024 * 1024,
    };
    let link = |source| PullError::Link {
        host: host.to_string(),
        stage: "listing the pull paths",
        source,
    };
    let out = session
        .exec(&listing_command(&spec.paths), limits)
        .await
        .map_err(link)?;
    if out.exit_status.is_none() || out.truncated {
        return Err(PullError::Listing {
            host: host.to_string(),
            status: out.exit_status,
            stderr: if out.truncated {
                "the listing was cut at 32 MiB: narrow the pull paths".to_string()
            } else {
                crate::sanitize::line(&String::from_utf8_lossy(&out.stderr), 200)
            },
        });
    }
    let mut listing = parse_listing(&spec.paths, &out.stdout, &out.stderr);
    judge_links(session, &mut listing).await;
    Ok(listing)
}

/// Every link the listing met, resolved on the box and judged by the listing's rule (a box that
/// could not resolve them leaves them refused).
pub(super) async fn judge_links<B: BoxExec>(session: &B, listing: &mut Listing) {
    if listing.pending.is_empty() {
        return;
    }
    let limits = ExecLimits {
        timeout: Duration::from_secs(120),
        max_output: 32 * 1024 * 1024,
    };
    let mut resolved = Ok(Vec::new());
    for command in resolve_commands(&listing.pending) {
        let out = session.exec(&command, limits).await;
        if let (Ok(all), Ok(out)) = (&mut resolved, &out) {
            all.extend(parse_resolved(&out.stdout));
        }
        if let Err(e) = out {
            resolved = Err(e.to_string());
            break;
        }
    }
    settle_links(listing, resolved);
}

/// What one pull of one host needs to know.
pub struct PullJob<'a> {
    pub host: &'a str,
    /// The host's instance id now, recorded with the pull.
    pub instance_id: Option<&'a str>,
    pub spec: &'a PullConfig,
    /// The host's last pull: unchanged files are skipped (`pull`; the ledger's pulls look the
    /// last one up a chunk at a time).
    pub previous: Option<&'a PullRecord>,
    /// Local copies this pull must never write over (another host's, or one a teardown relied
    /// on), checked when planning and again right before each rename.
    pub protected: Protected,
}

impl<'a> PullJob<'a> {
    /// A host with no instance id and no other host's files in its way (benches, tests).
    pub fn of(host: &'a str, spec: &'a PullConfig, previous: Option<&'a PullRecord>) -> Self {
        PullJob {
            host,
            instance_id: None,
            spec,
            previous,
            protected: Protected::default(),
        }
    }
}

/// Pulls every file under the job's paths, every record kept in memory (benches, tests).
/// File-level failures (and every listing problem) are in the record; Err is only for a pull
/// that could not start.
pub async fn pull(
    session: &Session,
    job: &PullJob<'_>,
    progress: Arc<Progress>,
) -> Result<PullRecord, PullError> {
    let (head, _, kept) = pull_into(session, job, progress, Kept::new(job.previous)).await?;
    Ok(PullRecord {
        files: kept.files,
        ..head
    })
}

/// As `pull`, each chunk's records handed to `book` as it ends: the record comes back without
/// its files, with what they came to, and the book.
pub(super) async fn pull_into<K: Book + 'static>(
    session: &Session,
    job: &PullJob<'_>,
    progress: Arc<Progress>,
    book: K,
) -> Result<(PullRecord, Tally, K), PullError> {
    // The connection's SFTP channel (kept from an earlier pull, or opened as the host
    // connected; else four round trips to open) and the link's round trip (one ping) are asked
    // for while the box lists, not after: on a 100 ms link that was half a second of every
    // pull. The channel is used only if a file needs it; without it (a box with no SFTP) files
    // go over exec channels.
    let sftp: Opening<'_> = Box::pin(session.sftp(crate::transport::SFTP_OPEN_TIMEOUT));
    // The link's round trip sizes what is first asked of the box (the pooled session is warm,
    // so the ping measures the link, not a login's delayed ACK), with the rate the connection's
    // last pull learned; it is asked for as the box begins to list, and answered before the
    // listing's first files are.
    let link = Some(session.link_rate());
    let budget = async { Budget::new(session.ping(Duration::from_secs(5)).await.ok(), link) };
    // Every command of the pull goes to one shell on the box: sshd starts the login shell (a
    // conda block's 0.15 s) once, not once per command.
    let shell = OneShell::new(session);
    pull_over(&shell, (sftp, budget), job, progress, book).await
}

/// A pull through `session`'s commands, with its SFTP channel being opened (an error where
/// there is none: then every file goes over exec) and its pace being made. The chunks begin as
/// the listing comes (`Listed`), not after it.
pub(super) async fn pull_over<B: BoxExec, K: Book + 'static>(
    session: &B,
    (sftp, budget): (Opening<'_>, impl Future<Output = Budget>),
    job: &PullJob<'_>,
    progress: Arc<Progress>,
    mut book: K,
) -> Result<(PullRecord, Tally, K), PullError> {
    let (host, spec) = (job.host, job.spec);
    let started = Utc::now();
    progress.set_stage(Stage::Listing);
    // The SFTP channel is opened beside the listing unless the host's last pull held no file
    // too big for a tar batch: a pull of small files never needs it, and opening it starts a
    // login shell on the box (sftp-server's; conda's block costs 0.15 s), so such a pull opens
    // it only once a file needs it. (A connection that pulls as it connects has opened it
    // already: then it is ready at once.)
    let beside = book
        .last_largest()
        .is_none_or(|size| size > super::batch::SMALL);
    let sftp = LazySftp::new(sftp);
    let spool = Spool::default();
    let listed = AtomicBool::new(false);
    let parts_held = super::local::parts_held(&spec.dest);
    let previous = book.previous_id();
    let (scribe, done) =
        Scribe::start(book).map_err(|e| PullError::Book(format!("the ledger's thread: {e}")))?;
    let chunked = async {
        let budget = budget.await;
        let shared = Shared {
            session,
            spec,
            protected: &job.protected,
            sftp: &sftp,
            budget: &budget,
            parts_held,
            progress: &progress,
            book: &scribe,
            previous,
            listed: &listed,
        };
        let mut chunks = Listed::new(&spool, job, &progress, &listed);
        let tally = pull_chunks(&shared, &mut chunks).await;
        (tally, chunks.finish())
    };
    let chunked = async {
        if beside {
            alongside(chunked, &mut Box::pin(sftp.get())).await.0
        } else {
            chunked.await
        }
    };
    let (filled, (mut tally, listing)) = tokio::join!(spool.fill(session, host, spec), chunked);
    // A listing that failed is the pull's error even where chunks had begun: their records are
    // in the book, of a pull that never ends (nobody's last pull), as after a crash.
    filled?;
    let mut listing = listing.map_err(|e| disk(&spec.dest, e))?;
    judge_links(session, &mut listing).await;
    // What the listing could not see is in the record too, so the pull says it and the guard
    // refuses on it.
    tally.write(&scribe, unlisted(&listing.problems)).await;
    let book = scribe.finish(done).await?;
    if let Some(e) = tally.book_error.take() {
        return Err(e);
    }
    let head = PullRecord {
        id: 0,
        host: host.to_string(),
        started,
        finished: Utc::now(),
        paths: spec.paths.clone(),
        unmatched: listing.unmatched,
        instance_id: job.instance_id.map(String::from),
        files: Vec::new(),
        local_disk_full: tally.local_disk_full,
    };
    Ok((head, tally, book))
}

/// Each path the listing could not see, as a failed file saying why.
fn unlisted(problems: &[super::remote::Problem]) -> Vec<PulledFile> {
    problems
        .iter()
        .map(|problem| {
            let mut f = failed_file(&RemoteFile::default(), Path::new(""), problem.why());
            f.remote_path = problem.path().to_string();
            f
        })
        .collect()
}

/// Runs `main` to its end while also driving `side`; `side`'s output if it ended first (it is
/// then not polled again).
async fn alongside<M: Future, S: Future + Unpin>(
    main: M,
    side: &mut S,
) -> (M::Output, Option<S::Output>) {
    tokio::pin!(main);
    tokio::select! {
        biased;
        out = &mut main => (out, None),
        done = side => (main.await, Some(done)),
    }
}

pub(super) fn failed_file(file: &RemoteFile, local: &Path, why: String) -> PulledFile {
    PulledFile {
        remote_path: file.path.clone(),
        size: file.size,
        mtime: file.mtime,
        stamp: (!file.stamp.is_empty()).then(|| file.stamp.clone()),
        remote_sha256: None,
        local_path: names::of_path(local),
        local_sha256: None,
        sent: 0,
        verified: false,
        unproven: false,
        local_stat: None,
        settled_since: None,
        verification: String::new(),
        error: (!why.is_empty()).then_some(why),
        at: Utc::now(),
    }
}
