//! A copy takes its final name only once it is proven. Every copy path (SFTP, exec `tail`, tar
//! batches) leaves its bytes in the `.part` beside dest, fsynced; only after the box's hash and
//! the local hash agree and a second listing saw the file unchanged does the pull call
//! [`promote`], which checks that it loads and then renames it into place. A torn or changed copy
//! never replaces anything, and a copy that does not load never replaces an earlier one that
//! does: the previous verified version stays until its successor is proven. [`finish`] makes
//! that call for each copied file and writes its record.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;

use super::NotCopied;
use super::check::{Verification, verify};
use super::copy::{Copied, disk};
use super::engine::failed_file;
use super::local::{part_paths, parts_dir};
use super::protect::Protected;
use super::remote::RemoteFile;
use crate::config::fleet::VerifyCommands;
use crate::ledger::PulledFile;

/// Where a proven-by-hash copy waits while it is checked: its own folder in the parts folder,
/// under the file's own name, so a check (built-in or the user's command) that goes by the
/// name sees the real one.
fn staged_path(dest: &Path, local: &Path) -> PathBuf {
    let (part, _) = part_paths(dest, local);
    part.with_extension("staged")
        .join(local.file_name().unwrap_or_default())
}

/// What became of a copy whose hash matched the box's.
pub struct Promoted {
    pub verification: Verification,
    /// Set when it did not take its final name (the earlier copy was kept, or a write failed).
    pub error: Option<String>,
}

/// Checks the `.part` of `local` (whose bytes hashed as the box's) and renames it into place,
/// with the box's permission bits less setuid, setgid and sticky.
pub async fn promote(
    dest: &Path,
    local: &Path,
    file: &RemoteFile,
    commands: &VerifyCommands,
    protected: &Protected,
) -> Promoted {
    let staged = staged_path(dest, local);
    let failed = |error: String| Promoted {
        verification: Verification {
            passed: false,
            how: String::new(),
        },
        error: Some(error),
    };
    if let Err(e) = stage(dest, local, &staged, file.mode & 0o777).await {
        return failed(e);
    }
    let verification = verify(&staged, commands).await;
    let kept = if verification.passed || !exists(local) {
        None
    } else if verify(local, commands).await.passed {
        Some(format!(
            "{}; the earlier copy, which loads, was kept: this version waits in {} until it is \
             proven",
            verification.how,
            parts_dir(dest).display()
        ))
    } else {
        None
    };
    let refused = protected.refuses(local);
    if let Some(why) = kept.or(refused) {
        unstage(dest, local, &staged).await;
        return Promoted {
            verification,
            error: Some(why),
        };
    }
    match into_place(dest, local, &staged).await {
        Ok(()) => Promoted {
            verification,
            error: None,
        },
        Err(e) => failed(e),
    }
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

async fn stage(dest: &Path, local: &Path, staged: &Path, mode: u32) -> Result<(), String> {
    let (part, _) = part_paths(dest, local);
    let io = |p: &Path, e| disk(p, e).to_string();
    if let Some(dir) = staged.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| io(dir, e))?;
    }
    tokio::fs::rename(&part, staged)
        .await
        .map_err(|e| io(&part, e))?;
    tokio::fs::set_permissions(staged, std::fs::Permissions::from_mode(mode))
        .await
        .map_err(|e| io(staged, e))
}

/// Back to a complete `.part` (its source tag still beside it): the next pull resumes it at
/// its end, sending nothing, and checks it again.
async fn unstage(dest: &Path, local: &Path, staged: &Path) {
    let (part, _) = part_paths(dest, local);
    let _ = tokio::fs::set_permissions(staged, std::fs::Permissions::from_mode(0o600)).await;
    let _ = tokio::fs::rename(staged, &part).await;
    if let Some(dir) = staged.parent() {
        let _ = tokio::fs::remove_dir(dir).await;
    }
}

async fn into_place(dest: &Path, local: &Path, staged: &Path) -> Result<(), String> {
    let io = |p: &Path, e| disk(p, e).to_string();
    let parent = local.parent().unwrap_or(Path::new("/")).to_path_buf();
    tokio::fs::create_dir_all(&parent)
        .await
        .map_err(|e| io(&parent, e))?;
    match tokio::fs::rename(staged, local).await {
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            across_devices(dest, local, staged).await?;
        }
        other => other.map_err(|e| io(local, e))?,
    }
    let (_, src) = part_paths(dest, local);
    let _ = tokio::fs::remove_file(src).await;
    if let Some(dir) = staged.parent() {
        let _ = tokio::fs::remove_dir(dir).await;
    }
    // The rename becomes durable when `finish_all` syncs its folder, once for all its files.
    Ok(())
}

/// `local`'s folder is on another filesystem than the parts folder beside dest (dest, or a
/// folder in it, is a mount point): the proven copy is copied into a hidden temporary file
/// beside `local`, fsynced, and renamed from there, so the final name still appears whole.
async fn across_devices(dest: &Path, local: &Path, staged: &Path) -> Result<(), String> {
    let (part, _) = part_paths(dest, local);
    let mut name = std::ffi::OsString::from(".");
    name.push(part.file_name().unwrap_or_default());
    let beside = local.with_file_name(name);
    let (from, to) = (staged.to_path_buf(), beside.clone());
    let copied = tokio::task::spawn_blocking(move || {
        std::fs::copy(&from, &to)?;
        std::fs::File::open(&to)?.sync_all()
    })
    .await
    .map_err(|e| e.to_string())?;
    if let Err(e) = copied {
        let _ = tokio::fs::remove_file(&beside).await;
        return Err(disk(&beside, e).to_string());
    }
    tokio::fs::rename(&beside, local)
        .await
        .map_err(|e| disk(local, e).to_string())?;
    let _ = tokio::fs::remove_file(staged).await;
    Ok(())
}

/// What the second listing said of a file.
pub(super) enum Seen {
    Same,
    /// Changed or gone: a copy of it is of no use to any later pull.
    Changed(String),
    /// Not known (the box could not be listed again): a copy is kept to resume from.
    Unknown(String),
}

/// Where a copied file goes and what it must pass first.
pub(super) struct Landing<'a> {
    pub dest: &'a Path,
    pub local: &'a Path,
    /// Copied in this pull (its bytes wait in the `.part`), not unchanged since the last one.
    pub fresh: bool,
    pub verify: &'a VerifyCommands,
    pub protected: &'a Protected,
}

/// A copied (or unchanged) file, with its local hash, so even a failed pull leaves a record a
/// later pull can trust for its bytes; then compared with the box's hash, and only then
/// verified and given its final name.
/// What every planned file's landing shares.
pub(super) struct Landings<'a> {
    pub dest: &'a Path,
    pub verify: &'a VerifyCommands,
    pub protected: &'a Protected,
    /// The second listing, by path, or why there is none.
    pub relisted: &'a Result<HashMap<String, (u64, String)>, String>,
    pub hashes: &'a Result<BTreeMap<String, String>, String>,
    pub progress: &'a AtomicUsize,
}

/// Files finished at once: each is a dozen small filesystem steps, its check and a folder
/// fsync, which one at a time cost ~0.7 ms a file (0.36 s of a 500-file pull).
const FINISHING_AT_ONCE: usize = 16;

/// Each planned file's record, in plan order: judged against the second listing, its hashes
/// compared, and a fresh copy proven and put in place.
pub(super) async fn finish_all(
    plan: &[(RemoteFile, PathBuf)],
    copied: Vec<Result<Option<Copied>, NotCopied>>,
    recorded_hashes: Vec<Option<String>>,
    all: &Landings<'_>,
) -> Vec<PulledFile> {
    // Each finish is made when a slot frees, never all up front: a waiting finish is a few KiB
    // of state, which for 100 000 files was most of the pull's 522 MB. (A loop, not a lazy
    // stream: a closure held across the await trips rustc's `Send` check when it is spawned.)
    let mut items = plan.iter().zip(copied).zip(recorded_hashes);
    let mut running = futures::stream::FuturesOrdered::new();
    let mut records = Vec::with_capacity(plan.len());
    let mut renamed_in: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    loop {
        while running.len() < FINISHING_AT_ONCE {
            let Some((((file, local), outcome), recorded)) = items.next() else {
                break;
            };
            running.push_back(finish_one(file, local, outcome, recorded, all));
        }
        match running.next().await {
            Some((record, folder)) => {
                if let Some(folder) = folder {
                    renamed_in.entry(folder).or_default().push(records.len());
                }
                records.push(record);
            }
            None => break,
        }
    }
    // A rename is durable once its folder is: a crash right after must not bring back the
    // earlier version under the name the ledger is about to record as this one. One syncfs per
    // filesystem the folders are on, not an fsync per file (a sweep's results are a folder per
    // cell: 10 000 files were 10 000 journal commits).
    let synced = tokio::task::spawn_blocking(move || sync_folders(renamed_in)).await;
    for (why, which) in synced.unwrap_or_default() {
        for i in which {
            records[i].verified = false;
            records[i].error = Some(why.clone());
        }
    }
    records
}

/// Syncs the filesystem under each group of folders once; what could not be synced, and the
/// records whose rename it leaves undurable.
fn sync_folders(folders: HashMap<PathBuf, Vec<usize>>) -> Vec<(String, Vec<usize>)> {
    use std::os::unix::fs::MetadataExt;
    let mut by_device: HashMap<u64, (PathBuf, Vec<usize>)> = HashMap::new();
    let mut failed = Vec::new();
    for (folder, which) in folders {
        match std::fs::metadata(&folder) {
            Ok(meta) => {
                let entry = by_device
                    .entry(meta.dev())
                    .or_insert_with(|| (folder, Vec::new()));
                entry.1.extend(which);
            }
            Err(e) => failed.push((disk(&folder, e).to_string(), which)),
        }
    }
    for (folder, which) in by_device.into_values() {
        if let Err(e) = super::batch::sync_filesystem(&folder) {
            failed.push((disk(&folder, e).to_string(), which));
        }
    }
    failed
}

async fn finish_one(
    file: &RemoteFile,
    local: &Path,
    outcome: Result<Option<Copied>, NotCopied>,
    recorded_hash: Option<String>,
    all: &Landings<'_>,
) -> (PulledFile, Option<PathBuf>) {
    let seen = match all.relisted {
        Err(e) => Seen::Unknown(e.clone()),
        Ok(now) => match now.get(&file.path) {
            None => Seen::Changed("vanished from the box during the pull".to_string()),
            Some((size, stamp)) if *size != file.size || *stamp != file.stamp => {
                Seen::Changed("changed on the box during the pull; pull again".to_string())
            }
            Some(_) => Seen::Same,
        },
    };
    let mut renamed_in = None;
    let record = match outcome {
        Err(e) => failed_file(file, local, e.why),
        Ok(copied) => {
            let fresh = copied.is_some();
            // Not copied means unchanged: its bytes were just hashed equal to the record.
            let copied = copied.unwrap_or(Copied {
                sent: 0,
                sha256: recorded_hash.unwrap_or_default(),
            });
            let landing = Landing {
                dest: all.dest,
                local,
                fresh,
                verify: all.verify,
                protected: all.protected,
            };
            let record = finish(file, &landing, copied, seen, all.hashes).await;
            if fresh && record.verified {
                renamed_in = local.parent().map(Path::to_path_buf);
            }
            record
        }
    };
    all.progress.fetch_add(1, Ordering::Relaxed);
    (record, renamed_in)
}

async fn finish(
    file: &RemoteFile,
    landing: &Landing<'_>,
    copied: Copied,
    seen: Seen,
    hashes: &Result<BTreeMap<String, String>, String>,
) -> PulledFile {
    let local = landing.local;
    let mut record = failed_file(file, local, String::new());
    record.sent = copied.sent;
    record.local_sha256 = Some(copied.sha256);
    record.remote_sha256 = hashes
        .as_ref()
        .ok()
        .and_then(|h| h.get(&file.path).cloned());
    let mut useless = false;
    record.error = match seen {
        Seen::Same => None,
        Seen::Changed(why) => {
            useless = true;
            Some(why)
        }
        Seen::Unknown(why) => Some(why),
    }
    .or_else(|| match hashes {
        Err(e) => Some(e.clone()),
        Ok(_) if record.remote_sha256.is_none() => {
            Some("the box printed no hash for it".to_string())
        }
        Ok(_) => None,
    });
    if record.error.is_none() && record.local_sha256 != record.remote_sha256 {
        useless = true;
        record.error = Some(format!(
            "hash mismatch: box {} local {}",
            record.remote_sha256.as_deref().unwrap_or("none"),
            record.local_sha256.as_deref().unwrap_or("unreadable")
        ));
    }
    if record.error.is_some() {
        if landing.fresh && useless {
            // Torn or of another version: never resumed, never promoted.
            super::local::discard_part(landing.dest, local).await;
        }
        return record;
    }
    let (verification, error) = if landing.fresh {
        let p = promote(landing.dest, local, file, landing.verify, landing.protected).await;
        (p.verification, p.error)
    } else {
        (verify(local, landing.verify).await, None)
    };
    record.verified = verification.passed && error.is_none();
    record.verification = verification.how;
    record.error = error;
    record
}
