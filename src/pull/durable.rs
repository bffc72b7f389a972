//! Making a chunk's tar-made parts, and then its renames, durable. Two ways, each cheapest in
//! its own case, measured on this VM's ext4 (`BENCHMARKS.md`):
//! - fsync each file (or folder), 32 at once: the journal commits concurrent fsyncs together,
//!   so 500 parts took 0.09 s, 2 048 took 0.37–0.50 s.
//! - syncfs, once for the filesystem: 0.06 s for 2 048 parts when nothing else waits to be
//!   written, but it also writes what every other program left in the page cache. A 500-file
//!   pull right after a 256 MiB one paid 2.5 s for it; two hosts pulled at once paid each
//!   other's.
//!
//! So syncfs only for many files, and only while the kernel says little else is waiting, or
//! while what waits costs less to write once than the pull's files would cost fsynced one by
//! one: a 10 000-file pull that fsynced each part while the 100 MiB it had just been handed sat
//! unwritten spent 1.5 s on 10 000 journal commits where one syncfs writes the 100 MiB once
//! (~0.2 s) and the rest of the pull's syncfs find little left.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Up to this many files or folders are always synced one by one.
const FEW: usize = 64;
/// fsyncs in flight at once.
const AT_ONCE: usize = 32;
/// Bytes other programs may have waiting to be written for a syncfs still to be the cheaper
/// way: at this VM disk's ~500 MB/s, about what 2 048 separate fsyncs cost.
const OTHERS_WAITING_MAX: u64 = 64 << 20;
/// What one file's own fsync costs, in bytes the disk could write instead: 0.09–0.17 ms a file
/// 32 at once here, at ~500 MB/s. A pull of many files may let a syncfs write this much of
/// other programs' data per file it makes durable: the first syncfs writes it, the rest of the
/// pull's find little left.
const PER_FILE: u64 = 64 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum How {
    EachFile,
    Filesystem,
}

/// What is being made durable: `count` paths holding `ours` unsynced bytes, of a pull that
/// makes `pull_files` files durable in all.
#[derive(Debug, Clone, Copy)]
pub(super) struct Batch {
    pub ours: u64,
    pub pull_files: usize,
}

/// How to sync `count` paths of `batch`, when the kernel has `waiting` bytes dirty or under
/// writeback in all (None where it does not say: not Linux).
pub(super) fn how(count: usize, batch: Batch, waiting: Option<u64>) -> How {
    let allowed = OTHERS_WAITING_MAX.max((batch.pull_files as u64).saturating_mul(PER_FILE));
    match waiting {
        Some(w) if count > FEW && w.saturating_sub(batch.ours) <= allowed => How::Filesystem,
        _ => How::EachFile,
    }
}

/// Bytes dirty or under writeback now, system-wide.
pub(super) fn waiting() -> Option<u64> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `Dirty` plus `Writeback` from `/proc/meminfo`'s text, in bytes.
fn parse_meminfo(text: &str) -> Option<u64> {
    let field = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb * 1024)
    };
    Some(field("Dirty:")? + field("Writeback:")?)
}

/// Each path (a file or a folder) fsynced, `AT_ONCE` at a time on threads of their own
/// (blocking: run it off the async workers); the index and error of each that failed.
pub(super) fn sync_each(paths: &[PathBuf]) -> Vec<(usize, io::Error)> {
    sync_each_by(paths.len(), |i| {
        std::fs::File::open(&paths[i]).and_then(|f| f.sync_all())
    })
}

/// `sync(i)` for each `i` below `count`, `AT_ONCE` at a time; the index and error of each that
/// failed.
fn sync_each_by(
    count: usize,
    sync: impl Fn(usize) -> io::Result<()> + Sync,
) -> Vec<(usize, io::Error)> {
    let next = AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE.min(count) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return;
                    }
                    if let Err(e) = sync(i) {
                        if let Ok(mut failed) = failed.lock() {
                            failed.push((i, e));
                        }
                    }
                }
            });
        }
    });
    failed.into_inner().unwrap_or_default()
}

/// Every write so far to the filesystem holding `path` made durable (syncfs).
fn sync_filesystem(path: &Path) -> io::Result<()> {
    syncfs(&std::fs::File::open(path)?)
}

/// Whether this system can make a whole filesystem durable at once: Linux's syncfs(2). A Mac
/// has none (its sync(2) does not wait): there each path is fsynced, always.
const SYNCFS: bool = cfg!(target_os = "linux");

#[cfg(target_os = "linux")]
fn syncfs(file: &impl std::os::fd::AsFd) -> io::Result<()> {
    nix::unistd::syncfs(file).map_err(io::Error::from)
}

/// Never called where `SYNCFS` is false ([`whole_filesystem`] says one by one); an error, not
/// a silent success, if that ever changed.
#[cfg(not(target_os = "linux"))]
fn syncfs(_file: &impl std::os::fd::AsFd) -> io::Result<()> {
    Err(io::Error::other("no syncfs(2) on this system"))
}

/// `paths` (files or folders of `batch`) made durable by `how`'s way: each fsynced, or each
/// filesystem they are on synced once. Each path that could not be, by index, with the path
/// whose sync failed and why.
pub(super) fn sync_paths(paths: &[PathBuf], batch: Batch) -> Vec<(usize, PathBuf, io::Error)> {
    use std::os::unix::fs::MetadataExt;
    if !whole_filesystem(paths.len(), batch) {
        return one_by_one(paths);
    }
    let (groups, unseen) = by_device(
        paths.len(),
        |i| i,
        |i| Ok(std::fs::metadata(&paths[i])?.dev()),
    );
    let mut failed: Vec<_> = unseen
        .into_iter()
        .map(|(i, e)| (i, paths[i].clone(), e))
        .collect();
    for which in groups {
        let first = &paths[which[0]];
        if let Err(e) = sync_filesystem(first) {
            for i in which {
                let e = io::Error::new(e.kind(), e.to_string());
                failed.push((i, first.clone(), e));
            }
        }
    }
    failed
}

/// Files this pull has just made in `folder`, made durable as `sync_paths` would; where that is
/// once for the filesystem, through `folder`: the files were made there, so they are on its
/// filesystem, and they are not looked up one by one (a stat each was 100 000 calls of a
/// 100 000-file pull).
pub(super) fn sync_made_in(
    folder: &Path,
    files: &[PathBuf],
    batch: Batch,
) -> Vec<(usize, PathBuf, io::Error)> {
    if !whole_filesystem(files.len(), batch) {
        return one_by_one(files);
    }
    match sync_filesystem(folder) {
        Ok(()) => Vec::new(),
        Err(e) => (0..files.len())
            .map(|i| {
                (
                    i,
                    folder.to_path_buf(),
                    io::Error::new(e.kind(), e.to_string()),
                )
            })
            .collect(),
    }
}

/// Files this pull has just written and holds open (unnamed copies: `place`), each with the
/// folder it was made in, made durable as `sync_paths` would, each filesystem synced once
/// through one of its files. The index and error of each that could not be.
pub(super) fn sync_open(
    files: &[(&std::fs::File, &Path)],
    batch: Batch,
) -> Vec<(usize, io::Error)> {
    use std::os::unix::fs::MetadataExt;
    if !whole_filesystem(files.len(), batch) {
        return sync_each_by(files.len(), |i| files[i].0.sync_all());
    }
    // A file is on the filesystem of the folder it was made in: one stat a folder, not a file
    // (2 048 a batch of many small files).
    let (groups, mut failed) = by_device(
        files.len(),
        |i| files[i].1,
        |i| Ok(files[i].0.metadata()?.dev()),
    );
    for which in groups {
        if let Err(e) = syncfs(files[which[0]].0) {
            failed.extend(
                which
                    .into_iter()
                    .map(|i| (i, io::Error::new(e.kind(), e.to_string()))),
            );
        }
    }
    failed
}

/// The indices below `count` grouped by the filesystem `dev(i)` says each is on, and those it
/// could not say it for, with why. Indices with the same `same(i)` are on the same filesystem:
/// `dev` is asked once for each.
fn by_device<K: Eq + std::hash::Hash>(
    count: usize,
    same: impl Fn(usize) -> K,
    dev: impl Fn(usize) -> io::Result<u64>,
) -> (Vec<Vec<usize>>, Vec<(usize, io::Error)>) {
    let mut known = HashMap::<K, Result<u64, (io::ErrorKind, String)>>::new();
    let (mut groups, mut failed) = (HashMap::<u64, Vec<usize>>::new(), Vec::new());
    for i in 0..count {
        let seen = known
            .entry(same(i))
            .or_insert_with(|| dev(i).map_err(|e| (e.kind(), e.to_string())));
        match seen {
            Ok(dev) => groups.entry(*dev).or_default().push(i),
            Err((kind, why)) => failed.push((i, io::Error::new(*kind, why.clone()))),
        }
    }
    (groups.into_values().collect(), failed)
}

/// Whether `count` paths are synced once for their filesystem rather than one by one, as
/// `how` says now.
fn whole_filesystem(count: usize, batch: Batch) -> bool {
    if !SYNCFS {
        return false;
    }
    let waiting = waiting();
    let how = how(count, batch, waiting);
    if count > 0 {
        tracing::debug!(
            paths = count,
            ?how,
            waiting_mib = waiting.map(|w| w >> 20),
            "pull: making durable"
        );
    }
    how == How::Filesystem
}

fn one_by_one(paths: &[PathBuf]) -> Vec<(usize, PathBuf, io::Error)> {
    sync_each(paths)
        .into_iter()
        .map(|(i, e)| (i, paths[i].clone(), e))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncfs_only_for_many_files_with_little_else_waiting() {
        let alone = |ours| Batch {
            ours,
            pull_files: 2048,
        };
        assert_eq!(how(10, alone(0), Some(0)), How::EachFile);
        assert_eq!(how(2048, alone(8 << 20), Some(10 << 20)), How::Filesystem);
        // A 256 MiB checkpoint another program (or another pull) has not flushed yet.
        assert_eq!(how(2048, alone(8 << 20), Some(300 << 20)), How::EachFile);
        assert_eq!(how(2048, alone(8 << 20), None), How::EachFile);
    }

    #[test]
    fn a_pull_of_many_files_pays_once_for_what_else_waits() {
        // A batch of 256 parts of a 10 000-file pull, 100 MiB of others' writes waiting: 10 000
        // fsyncs cost more than writing the 100 MiB once.
        let many = Batch {
            ours: 1 << 20,
            pull_files: 10_000,
        };
        assert_eq!(how(256, many, Some(100 << 20)), How::Filesystem);
        // Not past what those fsyncs would cost.
        assert_eq!(how(256, many, Some(2 << 30)), How::EachFile);
        // A 500-file pull beside a 256 MiB checkpoint still fsyncs its own.
        let few = Batch {
            ours: 1 << 20,
            pull_files: 500,
        };
        assert_eq!(how(256, few, Some(256 << 20)), How::EachFile);
    }

    #[test]
    fn meminfo_gives_dirty_and_writeback() {
        let text = "MemTotal:       24683640 kB\nDirty:              1200 kB\n\
                    Writeback:            16 kB\nWritebackTmp:          0 kB\n";
        assert_eq!(parse_meminfo(text), Some((1200 + 16) * 1024));
        assert_eq!(parse_meminfo("Dirty: x kB\nWriteback: 0 kB\n"), None);
    }

    /// Files made in the same folder are on one filesystem: their device is asked once a
    /// folder (a stat a file was 2 048 calls a batch), and a failure is each file's.
    #[test]
    fn files_of_one_folder_are_asked_their_filesystem_once() {
        let folder = |i: usize| ["a", "b", "a", "c", "b", "a"][i];
        let asked = std::cell::RefCell::new(Vec::new());
        let (mut groups, failed) = by_device(6, folder, |i| {
            asked.borrow_mut().push(i);
            match folder(i) {
                "c" => Err(io::Error::new(io::ErrorKind::NotFound, "gone")),
                f => Ok(if f == "a" { 1 } else { 2 }),
            }
        });
        assert_eq!(*asked.borrow(), vec![0, 1, 3]);
        groups.sort();
        assert_eq!(groups, vec![vec![0, 2, 5], vec![1, 4]]);
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].0, 3);
        assert_eq!(failed[0].1.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn each_path_is_synced_and_each_failure_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut paths: Vec<PathBuf> = (0..100).map(|i| dir.path().join(i.to_string())).collect();
        for p in &paths {
            std::fs::write(p, b"x").expect("write");
        }
        paths.insert(7, dir.path().join("missing"));
        let failed = sync_each(&paths);
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].0, 7);
        assert_eq!(failed[0].1.kind(), io::ErrorKind::NotFound);
    }
}
