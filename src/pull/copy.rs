//! One remote file copied into its `.part` over SFTP (or an exec channel), with many reads in
//! flight so a long link or a huge file is not limited to one round trip per chunk; fsynced and
//! left there: it takes its final name only once proven (`promote`). The SFTP copy itself is
//! `copy/sftp.rs`, the copy over an exec channel `copy/exec.rs`; the `.part` both write into
//! is here.

use std::path::Path;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::io::{Read, Seek};
use std::os::unix::fs::OpenOptionsExt;

mod exec;
mod sftp;

use super::channel::LazySftp;
use super::local::{Start, part_paths, tag_part};
use super::names::as_utf8;
use super::pace::Budget;
use super::remote::RemoteFile;
use super::{NotCopied, PullError};
use crate::config::fleet::VerifyCommands;
use crate::transport::BoxExec;
use sftp::{Span, download};

const FILES_AT_ONCE: usize = 8;

/// Copies every planned file; per-file errors come back as text.
pub async fn copy_all<B: BoxExec>(
    session: &B,
    dest: &Path,
    plan: &[(RemoteFile, std::path::PathBuf)],
    starts: &[Start],
    verify: &VerifyCommands,
    (sftp, budget): (&LazySftp<'_>, &Budget),
    everything: &super::Progress,
) -> Vec<Result<Option<Copied>, NotCopied>> {
    let progress = &everything.bytes_done;
    // Small fresh files go as tar streams beside the SFTP copies of the rest; whatever a batch
    // hands back goes by SFTP after, or by `tail` on an exec channel where there is no SFTP.
    let (small, rest): (Vec<usize>, Vec<usize>) =
        (0..plan.len()).partition(|&i| super::batch::eligible(&plan[i].0, starts[i]));
    let needs_sftp = rest
        .iter()
        .any(|&i| starts[i] != Start::Unchanged && as_utf8(&plan[i].0.path).is_some());
    // A box without SFTP (a minimal image: Debian's sshd only recommends its sftp-server) still
    // gives up every file, over exec channels; a link too far gone for SFTP fails them there.
    let sftp = if needs_sftp { sftp.get().await } else { None };
    let one = |i: usize| {
        let ((file, local), from) = (&plan[i], starts[i]);
        async move {
            let from = match from {
                Start::Unchanged => {
                    everything.files_copied.fetch_add(1, Ordering::Relaxed);
                    return (i, Ok(None));
                }
                Start::Resume(n) => n,
                Start::Fresh | Start::New => 0,
            };
            let result = match (sftp, as_utf8(&file.path)) {
                (Some(sftp), Some(name)) => {
                    let span = Span { from, budget };
                    // Every request of the copy (its open, reads and close) stops waiting once
                    // the connection is lost or the box's sftp-server ended; what arrived stays
                    // in the `.part` for next time.
                    let copy = download(sftp, &name, file, (dest, local), span, progress);
                    tokio::select! {
                        copied = copy => copied,
                        reason = sftp.closed() => Err(PullError::Remote {
                            path: file.path.clone(),
                            reason,
                        }),
                    }
                }
                _ => {
                    let to = (dest, local.as_path());
                    exec::download_by_exec(session, file, to, from, budget, progress).await
                }
            };
            everything.files_copied.fetch_add(1, Ordering::Relaxed);
            (i, result.map(Some).map_err(NotCopied::from))
        }
    };
    let each = |indices: Vec<usize>| {
        futures::stream::iter(indices.into_iter().map(one))
            .buffer_unordered(FILES_AT_ONCE)
            .collect::<Vec<_>>()
    };
    let placeable = placeable(plan, starts, verify);
    let (tarred, direct) = tokio::join!(
        super::batch::copy_small(session, dest, plan, &small, &placeable, budget, everything),
        each(rest)
    );
    let mut results: Vec<Option<Result<Option<Copied>, NotCopied>>> =
        plan.iter().map(|_| None).collect();
    let mut handed_back = Vec::new();
    for (i, result) in tarred {
        match result {
            Some(result) => results[i] = Some(result.map(Some)),
            None => handed_back.push(i),
        }
    }
    for (i, result) in direct.into_iter().chain(each(handed_back).await) {
        results[i] = Some(result);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(NotCopied::from("not copied".to_string()))))
        .collect()
}

/// Whether a batch may put each file's proven copy straight at its name (`place`): where
/// nothing is at its name and no command of the user's applies.
fn placeable(
    plan: &[(RemoteFile, std::path::PathBuf)],
    starts: &[Start],
    verify: &VerifyCommands,
) -> Vec<bool> {
    plan.iter()
        .zip(starts)
        .map(|((_, local), start)| {
            let name = local.file_name().unwrap_or_default().to_string_lossy();
            *start == Start::New && verify.for_file(&name).is_empty()
        })
        .collect()
}

/// `local`'s `.part`, cut to `from` bytes and positioned there, with those bytes already hashed
/// (a resumed copy's hash covers the whole file without reading it twice), and tagged with
/// which remote version it holds.
async fn open_part(
    remote: &RemoteFile,
    dest: &Path,
    local: &Path,
    from: u64,
) -> Result<(std::path::PathBuf, std::fs::File, Sha256), PullError> {
    let (part, src) = part_paths(dest, local);
    let io = |source| disk(&part, source);
    parent_dir(&part).await?;
    // Private until promoted: the box's own mode is given only to a proven copy.
    let mut file = std::fs::OpenOptions::new()
        .mode(0o600)
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&part)
        .map_err(io)?;
    // Cut first, then tagged: a crash between leaves fewer bytes of the older version under
    // its own tag, never its bytes under the new one.
    file.set_len(from).map_err(io)?;
    tag_part(&file, &src, remote).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut prefix = (&mut file).take(from);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = prefix.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    file.seek(std::io::SeekFrom::Start(from)).map_err(io)?;
    Ok((part, file, hasher))
}

/// What one copy did: the bytes that crossed the link, and the SHA-256 of the whole local file,
/// hashed as it was written (a resumed copy hashes its earlier part first) so the file is not
/// read a second time.
/// Its `.part` is durable (fsynced) before it is handed back: nothing is promoted from bytes a
/// crash could still take.
pub struct Copied {
    pub sent: u64,
    pub sha256: String,
    /// The hash recorded as the box's where the copy brings it: a tar batch's file, whose hash
    /// of the bytes received stands for the box's (`batch`), so no command hashes it there.
    pub box_sha256: Option<String>,
    /// The box's second look at the file (size, stamp) where the copy brought it along: a tar
    /// batch looks once tar has read its files, so no command after the copy looks again.
    pub seen: Option<(u64, String)>,
    /// A tar batch's proven copy that has no name yet, to be linked at it (`place`).
    pub unnamed: Option<super::place::Proven>,
}

/// The folder a file goes into, made if missing.
async fn parent_dir(path: &Path) -> Result<(), PullError> {
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|source| disk(dir, source))
}

/// Every local write's error: a full disk is said one way, whichever write met it first.
pub(super) fn disk(path: &Path, source: std::io::Error) -> PullError {
    if source.kind() == std::io::ErrorKind::StorageFull {
        // A `.part` lives in the folder beside dest: name that folder's parent, where the
        // user sees dest; any other path (a folder being made, a rename) names its parent.
        let parent = path.parent().unwrap_or(path);
        let in_parts = parent
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(".rigwatch-parts"));
        let under = if in_parts {
            parent.parent().unwrap_or(parent)
        } else {
            parent
        };
        PullError::DiskFull {
            under: under.to_path_buf(),
        }
    } else {
        PullError::Local {
            path: path.to_path_buf(),
            source,
        }
    }
}
