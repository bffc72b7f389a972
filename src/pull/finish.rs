//! Each planned file of a chunk finished: judged against the box's second look at it, its
//! hashes compared, and a fresh copy proven and given its final name (`promote`); then the
//! renames made durable, once per folder (or, for many folders, once per filesystem:
//! `durable`). Copies only the built-in check applies to (most small files) are checked and
//! renamed where they wait, many to a blocking task; the rest (the user's commands, a protected
//! name, a copy that does not load) sixteen at a time, each in a staging folder of its own.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use futures::StreamExt;

use super::NotCopied;
use super::check::{Verification, verify};
use super::copy::{Copied, disk};
use super::durable;
use super::local::parts_dir;
use super::plan::Looked;
use super::promote::{Promoted, failed, in_place, staged};
use super::protect::Protected;
use super::remote::RemoteFile;
use crate::config::fleet::VerifyCommands;
use crate::ledger::PulledFile;

mod judge;

use judge::{Earlier, judge};

/// What every planned file's landing shares.
pub(super) struct Landings<'a> {
    pub dest: &'a Path,
    pub verify: &'a VerifyCommands,
    pub protected: &'a Protected,
    /// The box's second look at the chunk's files, by path, or why there is none.
    pub relisted: &'a Result<HashMap<String, (u64, String)>, String>,
    pub hashes: &'a Result<BTreeMap<String, String>, String>,
    pub progress: &'a AtomicUsize,
}

/// Files finished at once on the staged path: each is a dozen small filesystem steps and its
/// check, which one at a time cost ~0.7 ms a file (0.36 s of a 500-file pull).
const FINISHING_AT_ONCE: usize = 16;

/// Copies checked and renamed in place per blocking task, two tasks at once. A task per file
/// was a hand-over to a blocking thread and back for each: on a 10 000-file pull the chunk's
/// finish took 113 µs a file, about what rsync spends on a whole file.
const IN_PLACE_PER_TASK: usize = 256;

/// One staging folder per finishing slot, made once for the chunk and named for this process
/// and pull (two pulls into one dest never share one): a folder made and removed per file was
/// two inodes each, on a busy ext4 ~1 ms apiece.
struct Staging {
    root: PathBuf,
}

impl Staging {
    fn new(dest: &Path) -> Staging {
        static PULLS: AtomicU64 = AtomicU64::new(0);
        let n = PULLS.fetch_add(1, Ordering::Relaxed);
        let name = format!("staging-{}-{n}", std::process::id());
        Staging {
            root: parts_dir(dest).join(name),
        }
    }

    fn slot(&self, slot: usize) -> PathBuf {
        self.root.join(slot.to_string())
    }

    /// The folders go; anything still in one (a rename that failed) stays where it is.
    async fn remove(self) {
        for slot in 0..FINISHING_AT_ONCE {
            let _ = tokio::fs::remove_dir(self.slot(slot)).await;
        }
        let _ = tokio::fs::remove_dir(&self.root).await;
    }
}

/// What is left to do for a file once its record is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Torn or of another version: its `.part` is thrown away, never resumed or promoted.
    Discard,
    /// A fresh copy only the built-in check applies to: checked and renamed where it waits.
    InPlace,
    /// A fresh copy staged under its own name and checked there (the user's commands, a
    /// protected name, or a copy that did not load in place).
    Staged,
    /// Unchanged since the last pull, checked again by the user's commands.
    Verify,
    /// A fresh copy its batch proved, unnamed (`place`): linked at its name.
    Placed,
}

/// Each planned file's record, in plan order: judged against the box's second look, its hashes
/// compared, and a fresh copy proven and put in place.
pub(super) async fn finish_all(
    plan: &[(RemoteFile, PathBuf)],
    copied: Vec<Result<Option<Copied>, NotCopied>>,
    (recorded_hashes, looked): (Vec<Option<String>>, Vec<Looked>),
    all: &Landings<'_>,
) -> Vec<PulledFile> {
    let began = std::time::Instant::now();
    let mut read_as = Vec::with_capacity(looked.len());
    let mut looked = looked.into_iter();
    let mut records = Vec::with_capacity(plan.len());
    // Copies to check and rename in place, to link at their names, and every other step left.
    let (mut simple, mut to_link, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for (((file, local), outcome), recorded) in plan.iter().zip(copied).zip(recorded_hashes) {
        let (checked, settled) = match looked.next() {
            Some(l) => {
                read_as.push(l.read_as);
                (l.checked, l.settled)
            }
            None => (None, None),
        };
        let earlier = Earlier {
            recorded,
            checked,
            settled,
        };
        let (outcome, proven) = match outcome {
            Ok(Some(mut copy)) => {
                let proven = copy.unnamed.take();
                (Ok(Some(copy)), proven)
            }
            other => (other, None),
        };
        let placed = proven.as_ref().map(|p| &p.verification);
        let (record, step) = judge(file, local, outcome, placed, earlier, all);
        match step {
            Some(Step::InPlace) => simple.push(records.len()),
            Some(Step::Placed) => {
                to_link.extend(proven.map(|p| (records.len(), p.unnamed)));
                all.progress.fetch_add(1, Ordering::Relaxed);
            }
            Some(step) => rest.push((records.len(), step)),
            None => {
                all.progress.fetch_add(1, Ordering::Relaxed);
            }
        }
        records.push(record);
    }
    let mut renamed = link_placed(plan, &mut records, to_link).await;
    rest.extend(promote_in_place(plan, &mut records, &simple, &mut renamed, all).await);
    finish_the_rest(plan, &mut records, rest, &mut renamed, all).await;
    let promoted_at = std::time::Instant::now();
    sync_renamed(plan, renamed, &mut records).await;
    // Where a chunk's finish goes, for `RUST_LOG=rigwatch::pull=debug`.
    tracing::debug!(
        files = records.len(),
        promoted_ms = promoted_at.duration_since(began).as_millis() as u64,
        synced_ms = promoted_at.elapsed().as_millis() as u64,
        "pull: chunk finished on local disk"
    );
    super::settled::identify(plan, records, &read_as).await
}

/// The folders of the files renamed in place made durable. A rename is durable once its
/// folder is: a crash right after must not bring back the earlier version under the name the
/// ledger is about to record as this one. Once per folder, not per file (a sweep's results are
/// a folder per cell: 10 000 files were 10 000 journal commits), and for many folders
/// (`durable`) once per filesystem. A file whose folder could not be synced is not verified.
async fn sync_renamed(
    plan: &[(RemoteFile, PathBuf)],
    renamed: Vec<usize>,
    records: &mut [PulledFile],
) {
    // A chunk of files unchanged since the last pull renames nothing: no blocking task to wait
    // a turn for.
    if renamed.is_empty() {
        return;
    }
    let mut renamed_in: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    for i in renamed {
        if let Some(folder) = plan[i].1.parent() {
            renamed_in.entry(folder.to_path_buf()).or_default().push(i);
        }
    }
    let (folders, which): (Vec<PathBuf>, Vec<Vec<usize>>) = renamed_in.into_iter().unzip();
    let synced = tokio::task::spawn_blocking(move || {
        let folders_alone = durable::Batch {
            ours: 0,
            pull_files: 0,
        };
        let failed = durable::sync_paths(&folders, folders_alone);
        failed
            .into_iter()
            .map(|(i, path, e)| (i, disk(&path, e).to_string()))
            .collect::<Vec<_>>()
    })
    .await;
    for (folder, why) in synced.unwrap_or_default() {
        for &i in &which[folder] {
            records[i].verified = false;
            records[i].error = Some(why.clone());
        }
    }
}

/// A record's verdict once its copy was checked (and, if fresh, put in place or not).
fn settle(record: &mut PulledFile, verification: Verification, error: Option<String>) {
    record.verified = verification.passed && error.is_none();
    record.unproven = verification.unchecked && error.is_none();
    record.verification = verification.how;
    record.error = error;
}

/// The copies their batches proved, linked at their names now their records are judged
/// (`place::link`), in one blocking task; the indices of those linked, whose folders are to be
/// made durable. One whose name was taken since the pull looked is not linked (nothing is
/// replaced), and its record says so.
async fn link_placed(
    plan: &[(RemoteFile, PathBuf)],
    records: &mut [PulledFile],
    to_link: Vec<(usize, super::place::Unnamed)>,
) -> Vec<usize> {
    if to_link.is_empty() {
        return Vec::new();
    }
    let which: Vec<usize> = to_link.iter().map(|(i, _)| *i).collect();
    let linking = tokio::task::spawn_blocking(move || {
        to_link
            .into_iter()
            .map(|(i, unnamed)| (i, super::place::link(unnamed)))
            .collect::<Vec<_>>()
    });
    let done = linking.await.unwrap_or_else(|e| {
        let why = format!("a link's task failed: {e}");
        which
            .iter()
            .map(|&i| (i, Err(std::io::Error::other(why.clone()))))
            .collect()
    });
    let mut linked = Vec::with_capacity(done.len());
    for (i, result) in done {
        match result {
            Ok(()) => linked.push(i),
            Err(e) => {
                records[i].verified = false;
                records[i].error = Some(format!("{}; pull again", disk(&plan[i].1, e)));
            }
        }
    }
    linked
}

/// The fresh copies at `which` checked and renamed where they wait (`promote::in_place`),
/// `IN_PLACE_PER_TASK` to a blocking task; each put in place is added to `renamed`. Those that
/// did not load are handed back, to be staged and checked under their real names.
async fn promote_in_place(
    plan: &[(RemoteFile, PathBuf)],
    records: &mut [PulledFile],
    which: &[usize],
    renamed: &mut Vec<usize>,
    all: &Landings<'_>,
) -> Vec<(usize, Step)> {
    // A loop, not a lazy stream: a closure held across the await trips rustc's `Send` check
    // when the pull is spawned.
    let mut tasks = futures::stream::FuturesUnordered::new();
    let mut some = which.chunks(IN_PLACE_PER_TASK);
    let mut not_loaded = Vec::new();
    loop {
        while tasks.len() < 2 {
            let Some(some) = some.next() else { break };
            tasks.push(in_place_task(all.dest, plan, some));
        }
        let Some(done) = tasks.next().await else {
            break;
        };
        for (i, placed) in done {
            match placed {
                Ok(Some(verification)) => {
                    settle(&mut records[i], verification, None);
                    renamed.push(i);
                }
                Ok(None) => {
                    not_loaded.push((i, Step::Staged));
                    continue;
                }
                Err(e) => {
                    let Promoted {
                        verification,
                        error,
                    } = failed(e);
                    settle(&mut records[i], verification, error);
                }
            }
            all.progress.fetch_add(1, Ordering::Relaxed);
        }
    }
    not_loaded
}

/// One blocking task checking and renaming `which` in place, each file's result by index (a
/// task that panicked fails its files, their parts kept).
async fn in_place_task(
    dest: &Path,
    plan: &[(RemoteFile, PathBuf)],
    which: &[usize],
) -> Vec<(usize, Result<Option<Verification>, String>)> {
    let jobs: Vec<(usize, PathBuf, u32)> = which
        .iter()
        .map(|&i| (i, plan[i].1.clone(), plan[i].0.mode))
        .collect();
    let dest = dest.to_path_buf();
    let done = tokio::task::spawn_blocking(move || {
        jobs.into_iter()
            .map(|(i, local, mode)| (i, in_place(&dest, &local, mode)))
            .collect()
    })
    .await;
    done.unwrap_or_else(|e| {
        let why = format!("a promote's task failed: {e}");
        which.iter().map(|&i| (i, Err(why.clone()))).collect()
    })
}

/// Every other step, `FINISHING_AT_ONCE` at a time, each staged file in a staging folder of its
/// own; each fresh copy put in place and proven is added to `renamed`.
async fn finish_the_rest(
    plan: &[(RemoteFile, PathBuf)],
    records: &mut [PulledFile],
    rest: Vec<(usize, Step)>,
    renamed: &mut Vec<usize>,
    all: &Landings<'_>,
) {
    if rest.is_empty() {
        return;
    }
    let staging = Staging::new(all.dest);
    let mut free: Vec<usize> = (0..FINISHING_AT_ONCE).rev().collect();
    let mut running = futures::stream::FuturesUnordered::new();
    let mut rest = rest.into_iter();
    loop {
        while let Some(&slot) = free.last() {
            let Some((i, step)) = rest.next() else { break };
            free.pop();
            let (file, local) = (&plan[i].0, plan[i].1.as_path());
            let slot_folder = staging.slot(slot);
            running.push(async move {
                let done = match step {
                    Step::Discard => {
                        super::local::discard_part(all.dest, local).await;
                        None
                    }
                    Step::Verify => Some((verify(local, all.verify).await, None)),
                    // Linked by `link_placed`: never queued here.
                    Step::Placed => None,
                    Step::InPlace | Step::Staged => {
                        let p = staged(
                            all.dest,
                            local,
                            file,
                            all.verify,
                            all.protected,
                            &slot_folder,
                        )
                        .await;
                        Some((p.verification, p.error))
                    }
                };
                (slot, i, step, done)
            });
        }
        let Some((slot, i, step, done)) = running.next().await else {
            break;
        };
        free.push(slot);
        if let Some((verification, error)) = done {
            settle(&mut records[i], verification, error);
            if step != Step::Verify && records[i].verified {
                renamed.push(i);
            }
        }
        all.progress.fetch_add(1, Ordering::Relaxed);
    }
    staging.remove().await;
}
