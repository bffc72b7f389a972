//! Small files travel as tar streams, not one SFTP round trip each: on a 30 ms link 500 eval
//! files cost ~4 round trips apiece over SFTP (open, read, read to EOF, close), seconds in all,
//! while one `tar -cf -` per batch on an exec channel costs one. The same exec looks at the
//! files again once tar has read them. The box does not hash them (DESIGN.md rule 4): each
//! entry's hash, taken here over the bytes received, is the one recorded; the second look says
//! those bytes are the listed version, and the teardown's re-hash on the box checks them
//! against the record. (The box's own `sha256sum` over every small file was 28 % of its CPU in
//! a 100 000-file pull, and a fresh pull went from 0.83× rsync's speed to 0.93–0.98× without
//! it.) A file nothing was at the name
//! of, that the box's second look saw as listed, goes into an unnamed copy that is checked and
//! made durable with its batch, to be linked at its name once the pull has judged its record
//! (`place`); any other into its `.part`, made durable with the batch's others before any counts
//! as copied, to take its final name only once the pull has proven it (`promote`).
//! Files tar cannot carry as plain entries (a link at the end of a path, a file that changed
//! size), and every file of a batch that fails as a whole (no tar on the box, a dropped link, a
//! stream cut short), are handed back to the SFTP path, so this is only ever a faster way, never
//! a lossier one. A batch lands whole or not at all on the box's side of the link, so a cut link
//! re-sends at most the batches in flight, never a file already copied whole.
//!
//! Just past 400 lines: the batch's command, its stream and its landing together, each the
//! other's contract.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use sha2::{Digest, Sha256};

use super::NotCopied;
use super::copy::{Copied, disk};
use super::durable;
use super::local::{Start, part_paths, parts_dir};
use super::names::{Bounds, arg_batches, as_args, unescape};
use super::pace::{Budget, Lease};
use super::place;
use super::remote::RemoteFile;
use super::restat::{SECOND_LOOK, Seen, parse_restat, restat_args_unclocked, split_second_look};
use super::tar_stream;
use crate::transport::{BoxExec, ExecLimits};

/// Files up to this size go by tar; above it, SFTP's many reads in flight win.
pub const SMALL: u64 = 1 << 20;
/// A batch's bounds: its stream is held in memory once, its command line stays far below the
/// box's ARG_MAX, and so do the names as the hashing, tar and find get them (Linux lets them
/// take a quarter of the stack limit: 2 MiB on most boxes; on a box whose limit is under
/// 1 MiB a full batch is refused, and its files go by SFTP). Each batch starts a few
/// processes on the box (the hashing, its timeout, tar, find) and syncs the local disk once:
/// 1 024 files a batch took the box's CPU for 10 000 small files from 0.70 s to 0.38 s against
/// 256 a batch, and 2 048 (the shared folder written once) a 100 000-file pull's by a further
/// third.
const BATCH_FILES: usize = 2048;
const BATCH_BYTES: u64 = 16 << 20;
/// A batch's bytes are also bounded by the room the pull's pace leaves (`pull::pace`: a stream
/// the link cannot carry at once waits at the box), but never below this: each batch costs a
/// tar and a sync, worth it only for a few files at least.
const BATCH_BYTES_LEAST: u64 = 2 << 20;
/// sshd hands a command to the login shell as one argument, which Linux caps at 128 KiB.
const BATCH_COMMAND: usize = 96 * 1024;
const BATCHES_AT_ONCE: usize = 4;

/// One batch unpacks at a time in this process, whichever pull it is of. Unpacking is creating
/// files in the parts folder, and each create holds that folder's lock: eight batches at once
/// (two chunks of four) spun on it, and the 10 000-file pull cost the client 22 000–35 000 s of
/// CPU per GiB against 17 000 one at a time, in no more wall time (`cargo bench --bench pull`,
/// A/B). Their syncs and transfers still overlap.
static UNPACKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A file of a batch by its plan index: copied, failed, or `None`, handed back to the SFTP path.
type Landing = (usize, Option<Result<Copied, NotCopied>>);

/// Whether a planned file goes by tar: to be copied whole (a resumed `.part` keeps SFTP's
/// byte-exact resume), small, and named from the root so `tar -C /` finds it.
pub fn eligible(file: &RemoteFile, start: Start) -> bool {
    matches!(start, Start::Fresh | Start::New) && file.size <= SMALL && file.path.starts_with('/')
}

/// One result per index in `small`: `None` hands the file back to the SFTP path. `placeable`
/// says, by plan index, which may skip the `.part` for an unnamed copy, linked at its name once
/// proven (`place`): nothing is at their names, and only the built-in check applies.
pub async fn copy_small<B: BoxExec>(
    session: &B,
    dest: &Path,
    plan: &[(RemoteFile, PathBuf)],
    small: &[usize],
    placeable: &[bool],
    budget: &Budget,
    progress: &super::Progress,
) -> Vec<Landing> {
    let mut rest = small;
    let mut running = futures::stream::FuturesUnordered::new();
    let mut landed = Vec::new();
    loop {
        // Each batch is made as the pace has room for it, sized to that room.
        while !rest.is_empty() && running.len() < BATCHES_AT_ONCE {
            let bytes = budget.room().clamp(BATCH_BYTES_LEAST, BATCH_BYTES);
            let batch = next_batch(plan, rest, bytes);
            let asked = asked_bytes(plan, batch);
            let Some(lease) = budget.ask_beside(asked, running.len(), 0).await else {
                break;
            };
            rest = &rest[batch.len()..];
            let batch = batch.to_vec();
            running.push(one_batch(
                session, dest, plan, batch, placeable, lease, progress,
            ));
        }
        match running.next().await {
            Some(batch) => landed.extend(batch),
            None => return landed,
        }
    }
}

/// The first batch of `rest`, of at most `bytes` (and one file, whatever its size).
fn next_batch<'a>(plan: &'a [(RemoteFile, PathBuf)], rest: &'a [usize], bytes: u64) -> &'a [usize] {
    let bounds = Bounds {
        files: BATCH_FILES,
        bytes,
        text: BATCH_COMMAND - BATCH_TEXT,
    };
    let name = |i: &usize| plan[*i].0.path.as_str();
    let size = |i: &usize| plan[*i].0.size;
    arg_batches(rest, name, size, bounds)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// What a batch asks of the box against the pace: its files' bytes. Not the headers: a
/// batch of 2 048 tiny files is 2 MiB of them, and the box's tar makes them at its per-file
/// pace (opening each), far slower than a link carries; counted, they held a 100 000-file
/// pull to two batches at once (1.51× rsync's time at 30 ms against 1.81×).
fn asked_bytes(plan: &[(RemoteFile, PathBuf)], batch: &[usize]) -> u64 {
    batch.iter().map(|&i| plan[i].0.size).sum()
}

/// The most a batch's stream may be before it is cut: every entry adds a header and padding, a
/// long name a header and its blocks; tar pads the whole to its 10 KiB record.
fn stream_limit(plan: &[(RemoteFile, PathBuf)], batch: &[usize]) -> u64 {
    asked_bytes(plan, batch) + batch.len() as u64 * 8192 + 64 * 1024
}

/// A batch command's own text around its files' words (the hashing tools' choice, timeouts,
/// tar, the second look), with room to spare.
const BATCH_TEXT: usize = 4 * 1024;

async fn one_batch<B: BoxExec>(
    session: &B,
    dest: &Path,
    plan: &[(RemoteFile, PathBuf)],
    batch: Vec<usize>,
    placeable: &[bool],
    lease: Lease<'_>,
    progress: &super::Progress,
) -> Vec<Landing> {
    let command = batch_command(plan, &batch, lease.rtt());
    let room = stream_limit(plan, &batch);
    let limits = ExecLimits {
        timeout: Duration::from_secs(600),
        max_output: usize::try_from(room).unwrap_or(usize::MAX),
    };
    let handed_back = |batch: &[usize]| batch.iter().map(|&i| (i, None)).collect();
    let began = std::time::Instant::now();
    let out = match session.exec(&command, limits).await {
        Ok(out) => out,
        Err(_) => return handed_back(&batch),
    };
    lease.arrived(std::time::Instant::now());
    // GNU tar exits 1 when a file changed as it was read: the stream is whole and the hashes
    // decide for each file; 2 and above (or a cut stream) mean the batch goes by SFTP.
    if out.truncated || !matches!(out.exit_status, Some(0 | 1)) {
        return handed_back(&batch);
    }
    let Some(stream) = tar_stream::unpacked(out.stdout, limits.max_output) else {
        return handed_back(&batch);
    };
    let jobs: Vec<Job> = batch
        .iter()
        .map(|&i| Job {
            i,
            file: plan[i].0.clone(),
            local: plan[i].1.clone(),
            placeable: placeable[i],
        })
        .collect();
    let dest = dest.to_path_buf();
    let pull_files = progress.files_total.load(Ordering::Relaxed);
    let arrived = began.elapsed();
    let seen = second_look(&out.stderr);
    let landed = tokio::task::spawn_blocking(move || {
        let locals: Vec<PathBuf> = jobs.iter().map(|job| job.local.clone()).collect();
        let one = UNPACKING.lock().unwrap_or_else(|e| e.into_inner());
        let unpacking = std::time::Instant::now();
        let mut landed = unpack(&stream, &seen, &dest, jobs);
        drop(one);
        let unpacked = unpacking.elapsed();
        make_durable(&dest, &locals, &mut landed, pull_files);
        (landed, unpacking, unpacked)
    })
    .await;
    let Ok((landed, unpacking, unpacked)) = landed else {
        return handed_back(&batch);
    };
    // Where a batch's time goes, for `RUST_LOG=rigwatch::pull=debug`: the box's answer, the
    // wait for its turn to unpack, unpacking, and the syncs.
    let ms = |d: Duration| d.as_millis() as u64;
    tracing::debug!(
        files = batch.len(),
        arrived_ms = ms(arrived),
        waited_ms = ms(unpacking.duration_since(began).saturating_sub(arrived)),
        unpacked_ms = ms(unpacked),
        durable_ms = ms(unpacking.elapsed().saturating_sub(unpacked)),
        ms = ms(began.elapsed()),
        "pull: tar batch landed"
    );
    counted(progress, &landed);
    landed
}

/// What a batch landed, on the pull's bar: the bytes it sent and the files it copied (a file
/// handed back is copied later, and counted then).
fn counted(progress: &super::Progress, landed: &[Landing]) {
    let bytes: u64 = landed
        .iter()
        .filter_map(|(_, r)| r.as_ref()?.as_ref().ok())
        .map(|c| c.sent)
        .sum();
    progress.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    let copied = landed.iter().filter(|(_, r)| r.is_some()).count();
    progress.files_copied.fetch_add(copied, Ordering::Relaxed);
}

/// tar's stream on stdout; its own complaints are dropped (its exit status says enough), so
/// stderr holds, once tar has read every file, the box's second look at them (`restat`) behind
/// a `@restat` record: a change made while tar read a file shows there, and the chunk asks
/// nothing more after. The look runs without a `timeout`: tar never had one, so a hung mount
/// holds the batch either way until this side's clock (`one_batch`'s 600 s) gives up and
/// retires the helper shell, and the `timeout`s took the box 7 ms of CPU a 2 048-file batch
/// (4 % of a 100 000-file pull's).
fn batch_command(plan: &[(RemoteFile, PathBuf)], batch: &[usize], rtt: Option<Duration>) -> String {
    let paths: Vec<&str> = batch.iter().map(|&i| plan[i].0.path.as_str()).collect();
    // tar takes the paths from the root and strips their leading `/` from its entries' names
    // (GNU, busybox and bsdtar alike), which is what `unpack` looks them up by.
    let gzip = tar_stream::travels_gzipped(batch.iter().map(|&i| plan[i].0.size), rtt);
    format!(
        "{}{}{{ printf '{SECOND_LOOK}\\0'; ( {} ); }} >&2; exit $s",
        as_args(&paths),
        tar_stream::tar_into_s(gzip),
        restat_args_unclocked()
    )
}

/// A batch's stderr read: the box's second look at the files after tar (empty where the box's
/// answer did not get that far: the chunk then looks again itself).
fn second_look(stderr: &[u8]) -> Seen {
    let (_, after) = split_second_look(stderr);
    let mut seen = Seen::new();
    parse_restat(after.unwrap_or_default(), &mut seen);
    seen
}

/// The batch's parts and unnamed copies made durable as soon as they are written
/// (`durable::sync_made_in`, `durable::sync_open`), before any counts as copied: their fsyncs
/// overlap the next batches' transfer instead of all waiting for the chunk's end. A copy that
/// could not be synced fails.
fn make_durable(dest: &Path, locals: &[PathBuf], landed: &mut [Landing], pull_files: usize) {
    let copied = |k: usize| match &landed[k].1 {
        Some(Ok(c)) => Some(c),
        _ => None,
    };
    let (unnamed, written): (Vec<usize>, Vec<usize>) = (0..landed.len())
        .filter(|&k| copied(k).is_some())
        .partition(|&k| copied(k).is_some_and(|c| c.unnamed.is_some()));
    let parts: Vec<PathBuf> = written
        .iter()
        .map(|&k| part_paths(dest, &locals[k]).0)
        .collect();
    let ours: u64 = landed
        .iter()
        .filter_map(|(_, r)| r.as_ref()?.as_ref().ok())
        .map(|c| c.sent)
        .sum();
    let batch = durable::Batch { ours, pull_files };
    let mut failed: Vec<(usize, NotCopied)> = Vec::new();
    for (i, path, e) in durable::sync_made_in(&parts_dir(dest), &parts, batch) {
        failed.push((written[i], NotCopied::from(disk(&path, e))));
    }
    let folder = |k: usize| locals[k].parent().unwrap_or(Path::new("/"));
    let files: Vec<(&std::fs::File, &Path)> = unnamed
        .iter()
        .filter_map(|&k| Some((&copied(k)?.unnamed.as_ref()?.unnamed.file, folder(k))))
        .collect();
    for (i, e) in durable::sync_open(&files, batch) {
        failed.push((unnamed[i], NotCopied::from(disk(folder(unnamed[i]), e))));
    }
    for (k, why) in failed {
        landed[k].1 = Some(Err(why));
    }
}

/// A batch's file: its plan index, what the listing said of it, where it lands, and whether it
/// may skip the `.part` for an unnamed copy (`copy_small`).
struct Job {
    i: usize,
    file: RemoteFile,
    local: PathBuf,
    placeable: bool,
}

/// Writes each entry that is a planned regular file into its `.part`, or, where it may be put
/// straight at its name and the box's second look vouches for it, into an unnamed copy
/// (`place`) its result carries; the rest stay `None`.
fn unpack(stream: &[u8], seen: &Seen, dest: &Path, jobs: Vec<Job>) -> Vec<Landing> {
    let by_name: HashMap<Vec<u8>, usize> = jobs
        .iter()
        .enumerate()
        .map(|(j, job)| (unescape(&job.file.path)[1..].to_vec(), j))
        .collect();
    let mut results: Vec<Option<Result<Copied, NotCopied>>> = jobs.iter().map(|_| None).collect();
    let mut archive = tar::Archive::new(stream);
    let mut modes = place::Modes::new();
    if let Ok(entries) = archive.entries() {
        for entry in entries {
            let Ok(entry) = entry else { break };
            let regular = entry.header().entry_type() == tar::EntryType::Regular;
            let Some(&j) = by_name.get(entry.path_bytes().as_ref()) else {
                continue;
            };
            let job = &jobs[j];
            if regular && entry.size() == job.file.size && results[j].is_none() {
                let at = usize::try_from(entry.raw_file_position()).unwrap_or(usize::MAX);
                let bytes = at
                    .checked_add(usize::try_from(job.file.size).unwrap_or(usize::MAX))
                    .and_then(|end| stream.get(at..end));
                let Some(bytes) = bytes else {
                    results[j] = Some(Err(NotCopied::from(
                        "the tar stream ended inside it".to_string(),
                    )));
                    break;
                };
                let look = seen.get(&job.file.path);
                results[j] = Some(land(bytes, job, look, dest, &mut modes));
            }
        }
    }
    jobs.iter()
        .zip(results)
        .map(|(job, r)| (job.i, r))
        .collect()
}

/// One whole file's bytes from the batch, hashed: the hash of the bytes received stands for
/// the box's (the module's comment says why). Where it may take its name now and the box's
/// second look saw it as listed, written into an unnamed copy that loads, or otherwise into
/// its `.part` (made durable with every other before any is promoted: `finish_all`).
fn land(
    bytes: &[u8],
    job: &Job,
    look: Option<&(u64, String)>,
    dest: &Path,
    modes: &mut place::Modes,
) -> Result<Copied, NotCopied> {
    let file = &job.file;
    let sha256 = super::local::hex(&Sha256::digest(bytes));
    let copied = Copied {
        sent: bytes.len() as u64,
        box_sha256: Some(sha256.clone()),
        sha256,
        seen: look.cloned(),
        unnamed: None,
    };
    let as_listed = look.is_some_and(|(size, stamp)| *size == file.size && *stamp == file.stamp);
    if job.placeable && as_listed {
        if let Some(proven) = place::write(&job.local, bytes, file.mode, modes) {
            let unnamed = Some(proven);
            return Ok(Copied { unnamed, ..copied });
        }
    }
    write_part(bytes, file, dest, &job.local).map(|()| copied)
}

/// A whole file's bytes into its `.part`, tagged with the version they are.
fn write_part(bytes: &[u8], file: &RemoteFile, dest: &Path, local: &Path) -> Result<(), NotCopied> {
    let (part, src) = part_paths(dest, local);
    let fail = |p: &Path, e: std::io::Error| NotCopied::from(disk(p, e));
    let open = || {
        std::fs::OpenOptions::new()
            .mode(0o600)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&part)
    };
    // The parts folder is made once it is found missing, not looked for before every file.
    let mut out = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = part.parent().unwrap_or(Path::new("/"));
            std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
            open()
        }
        opened => opened,
    }
    .map_err(|e| fail(&part, e))?;
    // Which remote version the `.part` holds, as the other copies tag theirs.
    super::local::tag_part(&out, &src, file).map_err(|e| fail(&src, e))?;
    out.write_all(bytes).map_err(|e| fail(&part, e))
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
