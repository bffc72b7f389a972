//! One pull of one host: list, decide per file, copy what is missing (many small files at once,
//! a big one with many reads in flight), hash both ends, verify, and list again to catch files
//! that changed while they were copied.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use std::time::{Duration, Instant};

use chrono::Utc;

use super::copy::{Opening, copy_all};
use super::finish::{Landings, finish_all};
use super::local::Start;
use super::plan::{Recorded, local_starts, plan_files};
use super::protect::Protected;
use super::remote::{
    HashOutput, Listing, RemoteFile, big_file_hash_command, hash_command, listing_command,
    parse_hashes, parse_listing, parse_resolved, resolve_commands, settle_links,
};
use super::{PullError, names};
use crate::config::PullConfig;
use crate::ledger::{PullRecord, PulledFile};
use crate::transport::{BoxExec, ExecLimits, OneShell, Session};

const HASH_BATCH: usize = 200;
const HASH_BATCHES_AT_ONCE: usize = 4;
const SFTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Files at least this big are hashed one process each, by the box's fastest tool, as many at
/// once as the box has cores: a pull's commands share one shell (`OneShell`), so batches no
/// longer run side by side, and a sha256sum batch would hash a results folder of 10 MiB files on
/// one core. Smaller ones go by tar, whose batch hashes them.
const BIG_HASH: u64 = super::batch::SMALL;

/// Where a pull is: one at a time, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Stage {
    Starting,
    Listing,
    Copying,
    Verifying,
}

impl Stage {
    pub fn word(self) -> &'static str {
        match self {
            Stage::Starting => "starting",
            Stage::Listing => "listing",
            Stage::Copying => "copying",
            Stage::Verifying => "verifying",
        }
    }

    fn of(n: u8) -> Stage {
        [Stage::Starting, Stage::Listing, Stage::Copying]
            .into_iter()
            .find(|s| *s as u8 == n)
            .unwrap_or(Stage::Verifying)
    }
}

/// Shared with whoever draws the progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_done: AtomicU64,
    pub bytes_total: AtomicU64,
    /// Files whose copy has ended (landed, unchanged or failed).
    pub files_copied: AtomicUsize,
    /// Files hashed, compared and verified.
    pub files_done: AtomicUsize,
    pub files_total: AtomicUsize,
    stage: AtomicU8,
    copy_started: Mutex<Option<Instant>>,
}

impl Progress {
    pub fn stage(&self) -> Stage {
        Stage::of(self.stage.load(Ordering::Relaxed))
    }

    fn set_stage(&self, stage: Stage) {
        self.stage.store(stage as u8, Ordering::Relaxed);
        if stage == Stage::Copying {
            if let Ok(mut started) = self.copy_started.lock() {
                *started = Some(Instant::now());
            }
        }
    }

    /// Files not yet copied while copying, then not yet verified.
    pub fn files_left(&self) -> usize {
        let total = self.files_total.load(Ordering::Relaxed);
        let copied = self.files_copied.load(Ordering::Relaxed);
        if copied < total {
            total - copied
        } else {
            total.saturating_sub(self.files_done.load(Ordering::Relaxed))
        }
    }

    /// Bytes per second since copying began, and the time left at that rate, once known.
    pub fn rate_and_eta(&self) -> Option<(f64, Option<Duration>)> {
        let started = (*self.copy_started.lock().ok()?)?;
        let secs = started.elapsed().as_secs_f64();
        let done = self.bytes_done.load(Ordering::Relaxed);
        if secs < 0.5 || done == 0 {
            return None;
        }
        let rate = done as f64 / secs;
        let left = self
            .bytes_total
            .load(Ordering::Relaxed)
            .saturating_sub(done);
        Some((
            rate,
            (left > 0).then(|| Duration::from_secs_f64(left as f64 / rate)),
        ))
    }
}

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
    if !listing.pending.is_empty() {
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
        settle_links(&mut listing, resolved);
    }
    Ok(listing)
}

/// What one pull of one host needs to know.
pub struct PullJob<'a> {
    pub host: &'a str,
    /// The host's instance id now, recorded with the pull.
    pub instance_id: Option<&'a str>,
    pub spec: &'a PullConfig,
    /// The host's last pull: unchanged files are skipped.
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

/// Pulls every file under the job's paths. File-level failures (and every listing problem) are
/// in the record; Err is only for a pull that could not start.
pub async fn pull(
    session: &Session,
    job: &PullJob<'_>,
    progress: Arc<Progress>,
) -> Result<PullRecord, PullError> {
    // The SFTP channel (four round trips to open) and the link's round trip (one ping) are
    // asked for while the box lists, not after: on a 100 ms link that was half a second of
    // every pull. The channel is used only if a file needs it; without it (a box with no
    // SFTP) files go over exec channels.
    let sftp: Opening<'_> = Box::pin(session.sftp(SFTP_TIMEOUT));
    let rtt = async { session.ping(Duration::from_secs(5)).await.ok() };
    // Every command of the pull goes to one shell on the box: sshd starts the login shell (a
    // conda block's 0.15 s) once, not once per command.
    let shell = OneShell::new(session);
    pull_over(&shell, (sftp, rtt), job, progress).await
}

/// A pull through `session`'s commands, with its SFTP channel being opened (an error where
/// there is none: then every file goes over exec) and its round trip being measured.
pub(super) async fn pull_over<B: BoxExec>(
    session: &B,
    (mut sftp, rtt): (Opening<'_>, impl Future<Output = Option<Duration>>),
    job: &PullJob<'_>,
    progress: Arc<Progress>,
) -> Result<PullRecord, PullError> {
    let (host, spec) = (job.host, job.spec);
    let started = Utc::now();
    progress.set_stage(Stage::Listing);
    // The listing does not wait for the channel: a pull of small files never needs it.
    let listed = async { tokio::join!(list_remote(session, host, spec), rtt) };
    let ((listing, rtt), opened) = alongside(listed, &mut sftp).await;
    if let Some(opened) = opened {
        sftp = Box::pin(std::future::ready(opened));
    }
    let mut listing = listing?;
    let (plan, failed) = plan_files(
        std::mem::take(&mut listing.files),
        listing.home.as_deref(),
        job,
    );
    // Any earlier copy that was complete locally counts, even one whose pull failed afterwards
    // (a link that died while hashing): its bytes are here, and this pull hashes both ends again.
    // A copy whose hash disagreed with the box's never does.
    let recorded: HashMap<&str, &PulledFile> = job
        .previous
        .map(|p| {
            p.files
                .iter()
                .filter(|f| {
                    f.local_sha256.is_some()
                        && (f.remote_sha256.is_none() || f.remote_sha256 == f.local_sha256)
                })
                .map(|f| (f.remote_path.as_str(), f))
                .collect()
        })
        .unwrap_or_default();
    let records: Vec<Option<Recorded>> = plan
        .iter()
        .map(|(file, local)| {
            let r = recorded
                .get(file.path.as_str())
                .filter(|r| r.local_path == names::of_path(local))?;
            let stamp = r.stamp.clone()?;
            Some((r.size, stamp, r.local_sha256.clone().unwrap_or_default()))
        })
        .collect();
    let recorded_hashes: Vec<Option<String>> = records
        .iter()
        .map(|r| r.as_ref().map(|r| r.2.clone()))
        .collect();
    let starts = local_starts(&spec.dest, &plan, records).await;
    let to_send: u64 = plan
        .iter()
        .zip(&starts)
        .map(|((f, _), s)| match s {
            Start::Unchanged => 0,
            Start::Resume(n) => f.size - n,
            Start::Fresh => f.size,
        })
        .sum();
    progress.bytes_total.store(to_send, Ordering::Relaxed);
    progress.files_total.store(plan.len(), Ordering::Relaxed);
    progress.set_stage(Stage::Copying);
    // The link's round trip sizes the reads kept in flight (the pooled session is warm, so the
    // ping measures the link, not a login's delayed ACK).
    let rtt = rtt.unwrap_or(Duration::ZERO);
    let copies = copy_all(session, &spec.dest, &plan, &starts, (sftp, rtt), &progress);
    // A small fresh file's box hash comes with its tar batch; the rest are hashed beside the
    // copies, and whatever a batch handed back (or could not hash) after them.
    let by_tar = |i: &usize| super::batch::eligible(&plan[*i].0, starts[*i]);
    let hashed_beside = (0..plan.len()).filter(|i| !by_tar(i)).map(|i| &plan[i].0);
    let hashes = remote_hashes(session, hashed_beside);
    let (copied, mut hashes) = tokio::join!(copies, hashes);
    let unhashed: Vec<&RemoteFile> = (0..plan.len())
        .filter(|i| by_tar(i) && matches!(&copied[*i], Ok(Some(c)) if c.box_sha256.is_none()))
        .map(|i| &plan[i].0)
        .collect();
    if let (Ok(all), false) = (&mut hashes, unhashed.is_empty()) {
        // Files it could not hash say the box printed no hash for them.
        if let Ok(more) = remote_hashes(session, unhashed.into_iter()).await {
            all.extend(more);
        }
    }

    progress.set_stage(Stage::Verifying);
    let relisted = list_remote(session, host, spec)
        .await
        .map_err(|e| format!("could not list the box again after copying: {e}"));
    // Only what the judgement compares is kept of each file seen again.
    let relisted = relisted.map(|now| {
        let by_path: HashMap<String, (u64, String)> = now
            .files
            .into_iter()
            .map(|f| (f.path, (f.size, f.stamp)))
            .collect();
        by_path
    });
    let local_disk_full = copied.iter().any(|c| matches!(c, Err(e) if e.disk_full));
    let landings = Landings {
        dest: &spec.dest,
        verify: &spec.verify,
        protected: &job.protected,
        relisted: &relisted,
        hashes: &hashes,
        progress: &progress.files_done,
    };
    let mut files = finish_all(&plan, copied, recorded_hashes, &landings).await;
    for (file, local, why) in failed {
        files.push(failed_file(&file, &local, why));
    }
    // What the listing could not see is in the record too, so the pull says it and the guard
    // refuses on it.
    for problem in &listing.problems {
        let mut f = failed_file(&RemoteFile::default(), Path::new(""), problem.why());
        f.remote_path = problem.path().to_string();
        files.push(f);
    }
    Ok(PullRecord {
        id: 0,
        host: host.to_string(),
        started,
        finished: Utc::now(),
        paths: spec.paths.clone(),
        unmatched: listing.unmatched,
        instance_id: job.instance_id.map(String::from),
        files,
        local_disk_full,
    })
}

/// SHA-256 of each file as the box sees it; an empty map when the box has no hashing tool or the
/// link failed (each file then fails with that reason).
pub(super) async fn remote_hashes<B: BoxExec>(
    session: &B,
    files: impl Iterator<Item = &RemoteFile>,
) -> Result<BTreeMap<String, String>, String> {
    let (big, rest): (Vec<&RemoteFile>, Vec<&RemoteFile>) = files.partition(|f| f.size >= BIG_HASH);
    // Batches bounded in size as well as count: a command names each file twice at most.
    fn path<'x>(f: &'x &RemoteFile) -> &'x str {
        &f.path
    }
    fn paths_of<'a>(b: &[&'a RemoteFile]) -> Vec<&'a str> {
        b.iter().map(|f| f.path.as_str()).collect()
    }
    let commands = names::batches(&big, path, HASH_BATCH, 2)
        .into_iter()
        .map(|b| big_file_hash_command(&paths_of(b)))
        .chain(
            names::batches(&rest, path, HASH_BATCH, 2)
                .into_iter()
                .map(|b| hash_command(&paths_of(b))),
        );
    let limits = ExecLimits {
        timeout: Duration::from_secs(3600),
        max_output: 4 * 1024 * 1024,
    };
    // Batches run side by side (the big files' batch hashes across the box's cores itself).
    let commands: Vec<String> = commands.collect();
    let mut outs = Vec::with_capacity(commands.len());
    for side_by_side in commands.chunks(HASH_BATCHES_AT_ONCE) {
        let each = side_by_side.iter().map(|c| session.exec(c, limits));
        outs.extend(futures::future::join_all(each).await);
    }
    let mut all = BTreeMap::new();
    for out in outs {
        let out = out.map_err(|e| format!("hashing on the box: {e}"))?;
        match parse_hashes(&out.stdout) {
            HashOutput::NoTool => {
                return Err("the box has neither sha256sum nor shasum".to_string());
            }
            HashOutput::Hashes(h) => all.extend(h),
        }
    }
    Ok(all)
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
        verification: String::new(),
        error: (!why.is_empty()).then_some(why),
        at: Utc::now(),
    }
}
