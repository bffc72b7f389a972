//! Making a chunk's tar-made parts, and then its renames, durable. Two ways, each cheapest in
//! its own case, measured on this VM's ext4 (`BENCHMARKS.md`):
//! - fsync each file (or folder), 32 at once: the journal commits concurrent fsyncs together,
//!   so 500 parts took 0.09 s, 2 048 took 0.37–0.50 s.
//! - syncfs, once for the filesystem: 0.06 s for 2 048 parts when nothing else waits to be
//!   written, but it also writes what every other program left in the page cache. A 500-file
//!   pull right after a 256 MiB one paid 2.5 s for it; two hosts pulled at once paid each
//!   other's.
//!
//! So syncfs only for many files, and only while the kernel says little else is waiting.

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum How {
    EachFile,
    Filesystem,
}

/// How to sync `count` files holding `ours` unsynced bytes, when the kernel has `waiting`
/// bytes dirty or under writeback in all (None where it does not say: not Linux).
pub(super) fn how(count: usize, ours: u64, waiting: Option<u64>) -> How {
    match waiting {
        Some(w) if count > FEW && w.saturating_sub(ours) <= OTHERS_WAITING_MAX => How::Filesystem,
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
    let next = AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..AT_ONCE.min(paths.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else {
                        return;
                    };
                    if let Err(e) = std::fs::File::open(path).and_then(|f| f.sync_all()) {
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
    let file = std::fs::File::open(path)?;
    nix::unistd::syncfs(&file).map_err(io::Error::from)
}

/// `paths` (files or folders, holding `ours` unsynced bytes) made durable by `how`'s way:
/// each fsynced, or each filesystem they are on synced once. Each path that could not be, by
/// index, with the path whose sync failed and why.
pub(super) fn sync_paths(paths: &[PathBuf], ours: u64) -> Vec<(usize, PathBuf, io::Error)> {
    use std::os::unix::fs::MetadataExt;
    if paths.is_empty() {
        return Vec::new();
    }
    if how(paths.len(), ours, waiting()) == How::EachFile {
        return sync_each(paths)
            .into_iter()
            .map(|(i, e)| (i, paths[i].clone(), e))
            .collect();
    }
    let mut failed = Vec::new();
    let mut by_device: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, path) in paths.iter().enumerate() {
        match std::fs::metadata(path) {
            Ok(meta) => by_device.entry(meta.dev()).or_default().push(i),
            Err(e) => failed.push((i, path.clone(), e)),
        }
    }
    for which in by_device.into_values() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncfs_only_for_many_files_with_little_else_waiting() {
        assert_eq!(how(10, 0, Some(0)), How::EachFile);
        assert_eq!(how(2048, 8 << 20, Some(10 << 20)), How::Filesystem);
        // A 256 MiB checkpoint another program (or another pull) has not flushed yet.
        assert_eq!(how(2048, 8 << 20, Some(300 << 20)), How::EachFile);
        assert_eq!(how(2048, 8 << 20, None), How::EachFile);
    }

    #[test]
    fn meminfo_gives_dirty_and_writeback() {
        let text = "MemTotal:       24683640 kB\nDirty:              1200 kB\n\
                    Writeback:            16 kB\nWritebackTmp:          0 kB\n";
        assert_eq!(parse_meminfo(text), Some((1200 + 16) * 1024));
        assert_eq!(parse_meminfo("Dirty: x kB\nWriteback: 0 kB\n"), None);
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
