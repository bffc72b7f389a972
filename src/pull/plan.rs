//! What each listed file becomes before anything is copied: where it lands at home (or why it
//! may not), and how it starts (unchanged since the last pull, resumed from its part, or
//! fresh), from what is on local disk now.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use sha2::{Digest, Sha256};

use super::check::{Verification, verify_builtin_named, verify_builtin_written};
use super::engine::PullJob;
use super::listing::digest;
use super::local::{
    LocalState, Start, decide, hex, local_path, part_paths, read_unwatched, sha256_file,
};
use super::remote::RemoteFile;
use super::settled::Carry;
use super::settled::identity;
use crate::config::fleet::VerifyCommands;

/// Each file to pull and where it lands at home.
pub(super) type Plan = Vec<(RemoteFile, PathBuf)>;
/// Each file that may not land, where it would have, and why not.
pub(super) type Refused = Vec<(RemoteFile, PathBuf, String)>;

/// Where each listed file lands at home, and the files that may not land anywhere (outside the
/// pull folder, on a protected copy, or on the same local file as another), a chunk at a time:
/// what it keeps of the pull's earlier chunks is a digest of each local path.
pub(super) struct Planner<'j> {
    job: &'j PullJob<'j>,
    home: Option<String>,
    claimed: HashSet<u128>,
}

impl<'j> Planner<'j> {
    pub(super) fn new(job: &'j PullJob<'j>, home: Option<String>) -> Planner<'j> {
        Planner {
            job,
            home,
            claimed: HashSet::new(),
        }
    }

    /// The listing's files move here, not copied: for 100 000 files each copy was another
    /// ~20 MB.
    pub(super) fn plan(&mut self, files: Vec<RemoteFile>) -> (Plan, Refused) {
        let spec = self.job.spec;
        let mut plan: Plan = Vec::with_capacity(files.len());
        let mut failed = Vec::new();
        for file in files {
            let root = &spec.paths[file.root];
            let local = local_path(&spec.dest, root, self.home.as_deref(), &file.path);
            let Some(l) = local else {
                let why = "its path leaves the pull folder".to_string();
                failed.push((file, PathBuf::new(), why));
                continue;
            };
            if let Some(why) = self.job.protected.refuses(&l) {
                failed.push((file, l, why));
                continue;
            }
            if self.claimed.insert(digest(l.as_os_str().as_bytes())) {
                plan.push((file, l));
            } else {
                let why = "lands on the same local file as another file of this pull".to_string();
                failed.push((file, l, why));
            }
        }
        (plan, failed)
    }
}

/// What the last pull recorded of a file that may be unchanged.
pub(super) struct Recorded {
    pub size: u64,
    /// The box's change stamp (`RemoteFile::stamp`).
    pub stamp: String,
    pub local_sha256: String,
    /// Where that record was good and its local copy's identity was kept: what it carries over
    /// if nothing of the file changed since, on the box or here.
    pub carry: Option<Carry>,
}

/// How a file starts, what the built-in check says of it where it may be unchanged, and what
/// its record carries over where it is settled (unchanged by stat on both ends: not hashed).
#[derive(Debug, Clone)]
pub(super) struct Looked {
    pub start: Start,
    pub checked: Option<Verification>,
    pub settled: Option<Carry>,
    /// An unchanged file hashed again: its local identity when it was read, which its record
    /// keeps only if the copy still has it once the pull ends.
    pub read_as: Option<String>,
}

/// Files whose local state is looked at in one blocking task (a few stats each, and a hash of
/// a file that may be unchanged): a task per file was 46 µs of handing over each, 0.5 s of a
/// 10 000-file pull.
const STARTS_PER_TASK: usize = 512;

/// How each planned file starts, in plan order, and for each unchanged one that only the
/// built-in check applies to, what that check says of it now; looked at a few tasks at once
/// (re-pulls hash every file that may be unchanged). The check runs here, in the task that
/// reads the file for its hash, not in a hand-over of its own when the file is finished: on a
/// re-pull of 100 000 small files that hand-over was an eighth of the client's CPU.
/// `parts_held` says whether the parts folder held anything when the pull began: where it held
/// nothing, no file of this pull has a part to resume, and none is looked for (a stat a file).
pub(super) async fn local_starts(
    dest: &Path,
    plan: &[(RemoteFile, PathBuf)],
    records: Vec<Option<Recorded>>,
    verify: &VerifyCommands,
    parts_held: bool,
) -> Vec<Looked> {
    let mut records = records.into_iter();
    let mut chunks = plan.chunks(STARTS_PER_TASK);
    let mut running = futures::stream::FuturesOrdered::new();
    let mut all = Vec::with_capacity(plan.len());
    loop {
        // Two chunks at a time, each copied only when its task starts.
        while running.len() < 2 {
            let Some(chunk) = chunks.next() else { break };
            let jobs: Vec<_> = chunk
                .iter()
                .cloned()
                .zip(records.by_ref())
                .map(|((file, local), record)| {
                    let builtin_only = local
                        .file_name()
                        .is_some_and(|n| verify.for_file(&n.to_string_lossy()).is_empty());
                    (file, local, record, builtin_only)
                })
                .collect();
            let (dest, fresh) = (dest.to_path_buf(), jobs.len());
            running.push_back(async move {
                let looked = tokio::task::spawn_blocking(move || {
                    jobs.into_iter()
                        .map(|(file, local, record, builtin_only)| {
                            local_start(&dest, &file, &local, record, parts_held, builtin_only)
                        })
                        .collect::<Vec<_>>()
                });
                let fresh_start = Looked {
                    start: Start::Fresh,
                    checked: None,
                    settled: None,
                    read_as: None,
                };
                looked.await.unwrap_or_else(|_| vec![fresh_start; fresh])
            });
        }
        match running.next().await {
            Some(looked) => all.extend(looked),
            None => return all,
        }
    }
}

/// A file's start, and where it may be unchanged and only the built-in check applies, what that
/// check says of it now. A file settled by stat (its box stamp and its local copy's identity
/// both as recorded) is not read at all: its record carries over.
fn local_start(
    dest: &Path,
    file: &RemoteFile,
    local: &Path,
    recorded: Option<Recorded>,
    parts_held: bool,
    builtin_only: bool,
) -> Looked {
    let meta = std::fs::metadata(local).ok();
    let final_size = meta.as_ref().map(std::fs::Metadata::len);
    let may_be_unchanged = matches!(
        (&recorded, final_size),
        (Some(r), Some(now)) if r.size == now && r.size == file.size && r.stamp == file.stamp
    );
    let settled = recorded
        .as_ref()
        .and_then(|r| r.carry.as_ref())
        .filter(|c| may_be_unchanged && meta.as_ref().is_some_and(|m| identity(m) == c.local_stat));
    if let Some(carry) = settled {
        return Looked {
            start: Start::Unchanged,
            checked: Some(carry.verification.clone()),
            settled: Some(carry.clone()),
            read_as: None,
        };
    }
    // A small file that may be unchanged is read once, for its hash and its check both (each
    // opened it again: on a re-pull of 100 000 small files, a sixth of the client's CPU).
    let read = (may_be_unchanged && builtin_only && file.size <= super::batch::SMALL)
        .then(|| read_unwatched(local).ok())
        .flatten();
    let final_hash = match &read {
        Some((_, bytes)) => Some(hex(&Sha256::digest(bytes))),
        None if may_be_unchanged => sha256_file(local).ok(),
        None => None,
    };
    // Only where the parts folder held anything can a file have a part to resume.
    let part_size = parts_held
        .then(|| part_paths(dest, local))
        .and_then(|(part, src)| {
            let size = std::fs::metadata(&part).ok()?.len();
            Some((size, super::local::part_source(&part, &src)))
        });
    let state = LocalState {
        final_size,
        final_hash,
        recorded: recorded.map(|r| (r.size, r.stamp, r.local_sha256)),
        part_size: part_size.as_ref().map(|(size, _)| *size),
        part_source: part_size.and_then(|(_, source)| source),
    };
    let start = decide(file, &state);
    let checked = (start == Start::Unchanged && builtin_only).then(|| match read {
        Some((mut opened, bytes)) => verify_builtin_written(&mut opened, &bytes, local),
        None => verify_builtin_named(local, local),
    });
    Looked {
        read_as: (start == Start::Unchanged)
            .then(|| meta.as_ref().map(identity))
            .flatten(),
        start,
        checked,
        settled: None,
    }
}
