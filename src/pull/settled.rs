//! The settled-file rule: a file whose last record was good and of which nothing changed since,
//! by stat, on the box (size and change stamp) or here (its local copy's identity, as recorded
//! once the copy was in place), is hashed on neither end and not checked again; its record
//! carries over and says so. What proves the box still holds those bytes at a teardown is the
//! final check's re-hash on the box, never stat.

use std::path::PathBuf;

use super::check::Verification;
use super::remote::RemoteFile;
use crate::ledger::PulledFile;

/// A good record that may be carried over by stat, unhashed.
#[derive(Debug, Clone)]
pub(super) struct Carry {
    /// The pull whose hashes it carries.
    pub since: i64,
    pub local_stat: String,
    pub remote_sha256: String,
    pub verification: Verification,
}

/// What a good record carries over where nothing of its file changed since: a record that was
/// proven or unproven, with its local copy's identity, from the last pull (or, where that
/// carried it too, from the pull that hashed it).
pub(super) fn carry(r: &PulledFile, previous: Option<i64>) -> Option<Carry> {
    let good = r.error.is_none() && (r.verified || r.unproven);
    let remote_sha256 = r.remote_sha256.clone().filter(|_| good)?;
    Some(Carry {
        since: r.settled_since.or(previous)?,
        local_stat: r.local_stat.clone()?,
        remote_sha256,
        verification: Verification {
            passed: r.verified,
            unchecked: r.unproven,
            how: r.verification.clone(),
        },
    })
}

/// A local file's identity: device, inode, size, and mtime and ctime to the nanosecond. A write,
/// a truncation, a rename over it or a chmod changes at least one, and ctime cannot be set back
/// by user tools, so a copy whose identity is as recorded holds the bytes that were hashed.
pub fn identity(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{} {} {} {}.{:09} {}.{:09}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

/// Each good copy's identity now that it is in place: taken after its last link or rename (both
/// change its ctime), so the next pull finds it as it is. One a settled record carried is as
/// it was found. A copy hashed again as unchanged keeps its identity only where it is the one
/// it had as it was read (`read_as`, in plan order): one changed here meanwhile is hashed again
/// by the next pull, not carried on this one's hash.
pub(super) async fn identify(
    plan: &[(RemoteFile, PathBuf)],
    mut records: Vec<PulledFile>,
    read_as: &[Option<String>],
) -> Vec<PulledFile> {
    let which: Vec<(usize, PathBuf)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.error.is_none() && r.local_stat.is_none())
        .map(|(i, _)| (i, plan[i].1.clone()))
        .collect();
    if which.is_empty() {
        return records;
    }
    let stats = tokio::task::spawn_blocking(move || {
        which
            .into_iter()
            .map(|(i, path)| (i, std::fs::metadata(path).ok().map(|m| identity(&m))))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    for (i, stat) in stats {
        let read = read_as.get(i).and_then(Option::as_ref);
        records[i].local_stat = stat.filter(|now| read.is_none_or(|read| read == now));
    }
    records
}
