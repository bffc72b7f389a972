//! A pull goes through its planned files a chunk at a time: each chunk is looked at locally,
//! copied, hashed on the box, looked at again on the box and finished before its state is let
//! go, three chunks at once (one finishing on local disk while the others copy). A pull that
//! carried every file through each stage together held every file's copy, hash and second
//! listing until the last one finished: for 100 000 files that was most of its memory, and
//! the local disk idled while the box sent, then the box while the disk wrote.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;

use super::NotCopied;
use super::PullError;
use super::book::{Asked, ask_recorded};
use super::box_hash::{Looked, hashes_then_looks, remote_hashes};
use super::channel::LazySftp;
use super::copy::Copied;
use super::copy::copy_all;
use super::engine::failed_file;
use super::finish::{Landings, finish_all};
use super::listed::{Listed, Next};
use super::local::Start;
use super::names;
use super::pace::Budget;
use super::plan::{Plan, Recorded, Refused, local_starts};
use super::progress::{Progress, Stage};
use super::protect::Protected;
use super::remote::RemoteFile;
use super::restat::restat;
use super::scribe::Scribe;
use super::settled::carry;
use crate::config::PullConfig;
use crate::ledger::PulledFile;
use crate::transport::BoxExec;

/// Files per chunk (about: the listing is read a block at a time): enough that a chunk's
/// commands and syncs are few (one second look at the box each), few enough that the three in
/// hand are a few MB (about 1.2 KB a file while it is copied and finished).
pub(super) const CHUNK_FILES: usize = 2048;
/// Three, not two: two chunks fell into step (both asking the box, then both finishing on
/// local disk while the box idled); with a third, one is nearly always asking. A 100 000-file
/// pull went from 0.45–0.63× rsync's time to 0.61–0.64× (`cargo bench --bench pull`, A/B).
const CHUNKS_AT_ONCE: usize = 3;

/// What every chunk of one pull shares.
pub(super) struct Shared<'a, 's, B> {
    pub session: &'a B,
    pub spec: &'a PullConfig,
    pub protected: &'a Protected,
    pub sftp: &'a LazySftp<'s>,
    /// What the pull keeps asked of the box, over all its chunks' copies (`pace`).
    pub budget: &'a Budget,
    /// Whether the parts folder held anything as the pull began (`local_starts`).
    pub parts_held: bool,
    pub progress: &'a Progress,
    /// Where the records go, and the last pull's come from, on a thread of its own.
    pub book: &'a Scribe,
    /// The last pull's id, which a record carried over by stat names (None: no last pull).
    pub previous: Option<i64>,
    /// Set once the listing is read to its end (`Listed`): until then more files may come.
    pub listed: &'a AtomicBool,
}

/// What a pull's records came to: they themselves are in its book.
#[derive(Debug, Default)]
pub struct Tally {
    pub files: usize,
    pub bytes: u64,
    /// Bytes that crossed the link (unchanged files and resumed parts send none or less).
    pub sent: u64,
    /// Files proven, unproven and failed (`Outcome` as an index).
    pub outcomes: [usize; 3],
    pub local_disk_full: bool,
    /// The first record the book could not give (the pull goes on: its files are on disk
    /// either way; the pull then ends with this error; one it could not take is the
    /// `Scribe`'s).
    pub book_error: Option<PullError>,
}

impl Tally {
    /// `files` counted, and handed to the book.
    pub(super) async fn write(&mut self, book: &Scribe, files: Vec<PulledFile>) {
        for f in &files {
            self.files += 1;
            self.bytes += f.size;
            self.sent += f.sent;
            self.outcomes[f.outcome() as usize] += 1;
        }
        book.write(files).await;
    }
}

/// How long the box must have sent nothing, with no chunk running, before the files read so
/// far go as a chunk of their own (`listed`): long enough that a listing arriving packet by
/// packet is not cut into many small chunks, short beside a slow `find`.
const QUIET: Duration = Duration::from_millis(50);

/// Every planned file pulled, a chunk at a time as the listing is read, its records handed to
/// the book in plan order (each chunk's refused files after its planned ones).
pub(super) async fn pull_chunks<B: BoxExec>(
    shared: &Shared<'_, '_, B>,
    chunks: &mut Listed<'_, '_>,
) -> Tally {
    // One chunk looks at home at a time: the chunks in hand then fall out of step, one asking
    // the box while another reads local disk, instead of all reading local disk while the
    // box idles and all asking the box while local disk idles.
    let looking = tokio::sync::Mutex::new(());
    let mut running = futures::stream::FuturesOrdered::new();
    let mut tally = Tally::default();
    let mut quiet = false;
    // A loop, not a lazy stream: a closure held across the await trips rustc's `Send` check
    // when the pull is spawned.
    loop {
        let mut waiting = false;
        while running.len() < CHUNKS_AT_ONCE {
            match chunks.next(quiet && running.is_empty()) {
                Next::Chunk(plan, refused) => {
                    let asked = ask_recorded(shared.book, &plan);
                    running.push_back(one_chunk(shared, (&looking, asked), plan, refused));
                }
                Next::Wait => {
                    waiting = true;
                    break;
                }
                Next::Done => break,
            }
        }
        if running.is_empty() && !waiting {
            return tally;
        }
        let hush = !quiet && running.is_empty();
        tokio::select! {
            Some((files, full, read)) = running.next(), if !running.is_empty() => {
                let began = std::time::Instant::now();
                let n = files.len();
                tally.write(shared.book, files).await;
                let ms = began.elapsed().as_millis() as u64;
                tracing::debug!(files = n, ms, "pull chunk: records handed over");
                tally.local_disk_full |= full;
                if let (Err(e), None) = (read, &tally.book_error) {
                    tally.book_error = Some(e);
                }
            }
            () = chunks.grew(), if waiting => quiet = false,
            () = tokio::time::sleep(QUIET), if waiting && hush => quiet = true,
        }
    }
}

/// One chunk from its local look to its records.
async fn one_chunk<B: BoxExec>(
    shared: &Shared<'_, '_, B>,
    (looking, asked): (&tokio::sync::Mutex<()>, Asked),
    plan: Plan,
    refused: Refused,
) -> (Vec<PulledFile>, bool, Result<(), PullError>) {
    let (session, spec, progress) = (shared.session, shared.spec, shared.progress);
    let plan = &plan;
    // Where a chunk's time goes, for `RUST_LOG=rigwatch::pull=debug`.
    let began = std::time::Instant::now();
    let ms = || began.elapsed().as_millis() as u64;
    // Files that may not land are done as soon as they are known.
    progress
        .files_copied
        .fetch_add(refused.len(), Ordering::Relaxed);
    progress
        .files_done
        .fetch_add(refused.len(), Ordering::Relaxed);
    let (recorded_hashes, starts_looked, read) = look_at_home(shared, (looking, asked), plan).await;
    let starts: Vec<Start> = starts_looked.iter().map(|l| l.start).collect();
    // The bar's total began as every listed byte: what need not be sent comes off it.
    let not_sent: u64 = plan
        .iter()
        .zip(&starts)
        .map(|((f, _), s)| match s {
            Start::Unchanged => f.size,
            Start::Resume(n) => *n,
            Start::Fresh | Start::New => 0,
        })
        .sum();
    progress.bytes_total.fetch_sub(not_sent, Ordering::Relaxed);
    tracing::debug!(files = plan.len(), ms = ms(), "pull chunk: looked at home");
    let copies = copy_all(
        session,
        &spec.dest,
        plan,
        &starts,
        &spec.verify,
        (shared.sftp, shared.budget),
        progress,
    );
    let settled: Vec<bool> = starts_looked.iter().map(|l| l.settled.is_some()).collect();
    let (copied, hashes, looked) =
        copied_and_hashed(session, plan, &starts, &settled, copies).await;
    tracing::debug!(ms = ms(), "pull chunk: copied and hashed on the box");
    // Every file's copy has ended: what is left is checking.
    if shared.listed.load(Ordering::Relaxed)
        && progress.files_copied.load(Ordering::Relaxed)
            >= progress.files_total.load(Ordering::Relaxed)
    {
        progress.set_stage(Stage::Verifying);
    }
    let relisted = second_looks(session, plan, &settled, &copied, &hashes, &looked).await;
    tracing::debug!(ms = ms(), "pull chunk: looked at the box again");
    let disk_full = copied.iter().any(|c| matches!(c, Err(e) if e.disk_full));
    let landings = Landings {
        dest: &spec.dest,
        verify: &spec.verify,
        protected: shared.protected,
        relisted: &relisted,
        hashes: &hashes,
        progress: &progress.files_done,
    };
    let mut files = finish_all(plan, copied, (recorded_hashes, starts_looked), &landings).await;
    tracing::debug!(ms = ms(), "pull chunk: finished");
    for (file, local, why) in refused {
        files.push(failed_file(&file, &local, why));
    }
    (files, disk_full, read)
}

/// The chunk's look at home, one chunk at a time (`looking`): each file's last record where it
/// names this copy, the hash it recorded, and where the copy here starts from. The third part
/// is whether the book could be read.
async fn look_at_home<B: BoxExec>(
    shared: &Shared<'_, '_, B>,
    (looking, asked): (&tokio::sync::Mutex<()>, Asked),
    plan: &Plan,
) -> (
    Vec<Option<String>>,
    Vec<super::plan::Looked>,
    Result<(), PullError>,
) {
    let spec = shared.spec;
    let home = looking.lock().await;
    let began = std::time::Instant::now();
    let (recorded, read) = super::book::recorded(asked).await;
    let previous = shared.previous;
    let read_ms = began.elapsed().as_millis() as u64;
    let records: Vec<Option<Recorded>> = plan
        .iter()
        .map(|(file, local)| {
            let r = recorded
                .get(file.path.as_str())
                .filter(|r| r.local_path == names::of_path(local))?;
            Some(Recorded {
                size: r.size,
                stamp: r.stamp.clone()?,
                local_sha256: r.local_sha256.clone().unwrap_or_default(),
                carry: carry(r, previous),
            })
        })
        .collect();
    drop(recorded);
    let recorded_hashes: Vec<Option<String>> = records
        .iter()
        .map(|r| r.as_ref().map(|r| r.local_sha256.clone()))
        .collect();
    let starts_looked =
        local_starts(&spec.dest, plan, records, &spec.verify, shared.parts_held).await;
    drop(home);
    tracing::debug!(
        read_ms,
        ms = began.elapsed().as_millis() as u64,
        "pull chunk: the last records read, the copies here looked at"
    );
    (recorded_hashes, starts_looked, read)
}

/// What the box hashes while the copies run: a small fresh file a tar batch carries is not
/// hashed there (its hash is taken here over the bytes received: `batch`); files copied
/// otherwise are hashed beside the copies, and whatever a batch handed back after them. Each
/// hash is followed by the box's second look at its files, in the same command
/// (`second_look_brought` says when that look holds for a copy). A settled file (unchanged by
/// stat on both ends) is not hashed again: its record carries.
async fn copied_and_hashed<B: BoxExec>(
    session: &B,
    plan: &Plan,
    starts: &[Start],
    settled: &[bool],
    copies: impl std::future::Future<Output = Vec<Result<Option<Copied>, NotCopied>>>,
) -> (
    Vec<Result<Option<Copied>, NotCopied>>,
    Result<std::collections::BTreeMap<String, String>, String>,
    Looked,
) {
    let by_tar = |i: &usize| super::batch::eligible(&plan[*i].0, starts[*i]);
    let hashed_beside = (0..plan.len())
        .filter(|i| !by_tar(i) && !settled[*i])
        .map(|i| &plan[i].0);
    let looks = hashes_then_looks(session, hashed_beside);
    let (copied, looks) = tokio::join!(copies, looks);
    let (mut hashes, looked) = match looks {
        Ok((hashes, looked)) => (Ok(hashes), looked),
        Err(e) => (Err(e), Looked::new()),
    };
    let unhashed: Vec<&RemoteFile> = (0..plan.len())
        .filter(|i| by_tar(i) && matches!(&copied[*i], Ok(Some(c)) if c.box_sha256.is_none()))
        .map(|i| &plan[i].0)
        .collect();
    if let (Ok(all), false) = (&mut hashes, unhashed.is_empty()) {
        // Files handed back by a batch, copied otherwise; any it could not hash say the box
        // printed no hash for them.
        if let Ok(more) = remote_hashes(session, unhashed.into_iter()).await {
            all.extend(more);
        }
    }
    (copied, hashes, looked)
}

/// Each file's second look at the box, by path: a tar batch brought its files' along, and
/// each hashing command its own (`second_look_brought`); a settled file needs none (nothing of
/// it was read, and the listing that found it unchanged is its look); the rest are asked for
/// now. A file the box no longer has stays out: the finish reads that as vanished.
async fn second_looks<B: BoxExec>(
    session: &B,
    plan: &Plan,
    settled: &[bool],
    copied: &[Result<Option<Copied>, NotCopied>],
    hashes: &Result<std::collections::BTreeMap<String, String>, String>,
    looked: &Looked,
) -> Result<super::restat::Seen, String> {
    let brought: Vec<bool> = (0..plan.len())
        .map(|i| settled[i] || second_look_brought(&plan[i].0, &copied[i], hashes, looked))
        .collect();
    let files: Vec<&RemoteFile> = (0..plan.len())
        .filter(|&i| !brought[i])
        .map(|i| &plan[i].0)
        .collect();
    let mut relisted = restat(session, &files).await;
    drop(files);
    if let Ok(relisted) = &mut relisted {
        let by_tar = plan.iter().zip(copied).filter_map(|((f, _), c)| {
            let seen = c.as_ref().ok()?.as_ref()?.seen.clone()?;
            Some((f.path.clone(), seen))
        });
        relisted.extend(by_tar);
        let by_hash = (0..plan.len()).filter(|&i| brought[i]).filter_map(|i| {
            let path = plan[i].0.path.as_str();
            Some((path.to_string(), looked.get(path)?.clone()?))
        });
        relisted.extend(by_hash);
    }
    relisted
}

/// Whether the look that followed a file's hash on the box (in the hashing's own command) is
/// its second look, so the chunk need not ask again once the copies end. For a file nothing was
/// copied of, always. For a copy, when its bytes hash as the box's did: the box saw the file
/// unchanged from the listing until after it hashed it, so the bytes it hashed are the listed
/// version, and bytes that hash the same are those bytes, whenever the copy read them. A copy
/// that hashes otherwise is looked at again after it, so a file changed while it was copied is
/// named as changed, not as a mismatch.
fn second_look_brought(
    file: &RemoteFile,
    copied: &Result<Option<Copied>, NotCopied>,
    hashes: &Result<std::collections::BTreeMap<String, String>, String>,
    looked: &Looked,
) -> bool {
    match copied {
        Ok(Some(c)) if c.seen.is_some() => true,
        _ if !looked.contains_key(file.path.as_str()) => false,
        Ok(Some(c)) => hashes
            .as_ref()
            .is_ok_and(|h| h.get(&file.path) == Some(&c.sha256)),
        Ok(None) | Err(_) => true,
    }
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;
