//! Each planned file of a chunk finished: judged against the box's second look at it, its
//! hashes compared, and a fresh copy proven and given its final name (`promote`), sixteen at a
//! time, each in a staging folder of its own that lasts the chunk; then the renames made
//! durable, once per folder (or, for many folders, once per filesystem: `durable`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use futures::StreamExt;

use super::NotCopied;
use super::check::{Verification, verify};
use super::copy::{Copied, disk};
use super::durable;
use super::engine::failed_file;
use super::local::parts_dir;
use super::promote::promote;
use super::protect::Protected;
use super::remote::RemoteFile;
use crate::config::fleet::VerifyCommands;
use crate::ledger::PulledFile;

/// What the box's second look said of a file.
pub(super) enum Seen {
    Same,
    /// Changed or gone: a copy of it is of no use to any later pull.
    Changed(String),
    /// Not known (the box could not be listed again): a copy is kept to resume from.
    Unknown(String),
}

/// Where a copied file goes and what it must pass first.
struct Landing<'a> {
    dest: &'a Path,
    local: &'a Path,
    /// Copied in this pull (its bytes wait in the `.part`), not unchanged since the last one.
    fresh: bool,
    verify: &'a VerifyCommands,
    protected: &'a Protected,
    /// The staging folder this file has to itself while it is checked.
    staging: &'a Path,
    /// An unchanged file's built-in check, made as it was hashed.
    checked: Option<Verification>,
}

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

/// Files finished at once: each is a dozen small filesystem steps and its check, which one at
/// a time cost ~0.7 ms a file (0.36 s of a 500-file pull).
const FINISHING_AT_ONCE: usize = 16;

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

/// Each planned file's record, in plan order: judged against the box's second look, its hashes
/// compared, and a fresh copy proven and put in place.
pub(super) async fn finish_all(
    plan: &[(RemoteFile, PathBuf)],
    copied: Vec<Result<Option<Copied>, NotCopied>>,
    recorded_hashes: Vec<Option<String>>,
    checked: Vec<Option<Verification>>,
    all: &Landings<'_>,
) -> Vec<PulledFile> {
    // Each finish is made when a slot frees, never all up front: a waiting finish is a few KiB
    // of state, which for 100 000 files was most of the pull's 522 MB. (A loop, not a lazy
    // stream: a closure held across the await trips rustc's `Send` check when it is spawned.)
    let mut checked = checked.into_iter();
    let mut items = plan
        .iter()
        .zip(copied)
        .zip(recorded_hashes)
        .map(|item| (item, checked.next().flatten()));
    let mut running = futures::stream::FuturesOrdered::new();
    let mut records = Vec::with_capacity(plan.len());
    let mut renamed_in: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    let staging = Staging::new(all.dest);
    // Slots are handed back in the order finishes are (FuturesOrdered), so the oldest in use
    // is the one whose finish just came back.
    let mut free: Vec<usize> = (0..FINISHING_AT_ONCE).rev().collect();
    let mut in_use = std::collections::VecDeque::new();
    loop {
        while let Some(&slot) = free.last() {
            let Some(((((file, local), outcome), recorded), checked)) = items.next() else {
                break;
            };
            free.pop();
            in_use.push_back(slot);
            let earlier = Earlier { recorded, checked };
            let finishing = finish_one(file, local, outcome, earlier, all, staging.slot(slot));
            running.push_back(finishing);
        }
        match running.next().await {
            Some((record, folder)) => {
                free.extend(in_use.pop_front());
                if let Some(folder) = folder {
                    renamed_in.entry(folder).or_default().push(records.len());
                }
                records.push(record);
            }
            None => break,
        }
    }
    staging.remove().await;
    // A rename is durable once its folder is: a crash right after must not bring back the
    // earlier version under the name the ledger is about to record as this one. Once per
    // folder, not per file (a sweep's results are a folder per cell: 10 000 files were 10 000
    // journal commits), and for many folders (`durable`) once per filesystem.
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
    records
}

/// What was known of an unchanged file before its finish: the hash the last pull recorded of
/// its local copy, and what the built-in check said of it as it was hashed again (`None` where
/// it was not checked then: a user command applies, or it is not unchanged).
struct Earlier {
    recorded: Option<String>,
    checked: Option<Verification>,
}

async fn finish_one(
    file: &RemoteFile,
    local: &Path,
    outcome: Result<Option<Copied>, NotCopied>,
    earlier: Earlier,
    all: &Landings<'_>,
    staging: PathBuf,
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
                sha256: earlier.recorded.unwrap_or_default(),
                box_sha256: None,
                seen: None,
            });
            let landing = Landing {
                dest: all.dest,
                local,
                fresh,
                verify: all.verify,
                protected: all.protected,
                staging: &staging,
                checked: earlier.checked,
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
    record.remote_sha256 = copied.box_sha256.or_else(|| {
        hashes
            .as_ref()
            .ok()
            .and_then(|h| h.get(&file.path).cloned())
    });
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
        _ if record.remote_sha256.is_some() => None,
        Err(e) => Some(e.clone()),
        Ok(_) => Some("the box printed no hash for it".to_string()),
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
        let p = promote(
            landing.dest,
            local,
            file,
            landing.verify,
            landing.protected,
            landing.staging,
        )
        .await;
        (p.verification, p.error)
    } else if let Some(checked) = landing.checked.clone() {
        (checked, None)
    } else {
        (verify(local, landing.verify).await, None)
    };
    record.verified = verification.passed && error.is_none();
    record.verification = verification.how;
    record.error = error;
    record
}
