//! One pull of one host: list, decide per file, copy what is missing (many small files at once,
//! a big one with many reads in flight), hash both ends, verify, and list again to catch files
//! that changed while they were copied.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;

use super::PullError;
use super::check::verify as verify_local;
use super::copy::{Copied, download};
use super::local::{LocalState, Start, decide, local_path, part_path, sha256_file, source_path};
use super::remote::{
    HashOutput, Listing, RemoteFile, hash_command, listing_command, parse_hashes, parse_listing,
};
use crate::config::PullConfig;
use crate::ledger::{PullRecord, PulledFile};
use crate::transport::{ExecLimits, Session};

const FILES_AT_ONCE: usize = 8;
const HASH_BATCH: usize = 200;
const SFTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Shared with whoever draws the progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_done: AtomicU64,
    pub bytes_total: AtomicU64,
    pub files_done: AtomicUsize,
    pub files_total: AtomicUsize,
    pub stage: Mutex<String>,
}

impl Progress {
    fn stage(&self, what: &str) {
        if let Ok(mut s) = self.stage.lock() {
            *s = what.to_string();
        }
    }
}

/// The box's files under the pull paths, and the home `~/` paths expand to.
pub async fn list_remote(
    session: &Session,
    host: &str,
    spec: &PullConfig,
) -> Result<(Listing, Option<String>), PullError> {
    let command = format!("echo \"@home $HOME\"\n{}", listing_command(&spec.paths));
    let limits = ExecLimits {
        timeout: Duration::from_secs(120),
        max_output: 32 * 1024 * 1024,
    };
    let out = session
        .exec(&command, limits)
        .await
        .map_err(|source| PullError::Link {
            host: host.to_string(),
            stage: "listing the pull paths",
            source,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if out.exit_status.is_none() || out.truncated {
        return Err(PullError::Listing {
            host: host.to_string(),
            status: out.exit_status,
            stderr: crate::sanitize::line(&String::from_utf8_lossy(&out.stderr), 200),
        });
    }
    let home = text
        .lines()
        .find_map(|l| l.strip_prefix("@home "))
        .map(str::to_string);
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("@home "))
        .map(|l| format!("{l}\n"))
        .collect();
    Ok((parse_listing(&spec.paths, &body), home))
}

/// Pulls every file under `spec.paths`; `previous` (the host's last pull) lets unchanged files be
/// skipped. File-level failures are in the record; Err is only for a pull that could not start.
pub async fn pull(
    session: &Session,
    host: &str,
    spec: &PullConfig,
    previous: Option<&PullRecord>,
    progress: Arc<Progress>,
) -> Result<PullRecord, PullError> {
    let started = Utc::now();
    progress.stage("listing");
    let (listing, home) = list_remote(session, host, spec).await?;
    let mut plan = Vec::new();
    let mut failed = Vec::new();
    let mut claimed: HashMap<PathBuf, String> = HashMap::new();
    for file in &listing.files {
        let local = local_path(
            &spec.dest,
            &spec.paths[file.root],
            home.as_deref(),
            &file.path,
        );
        match local {
            None => failed.push((
                file.clone(),
                PathBuf::new(),
                "its path leaves the pull folder".to_string(),
            )),
            Some(l) => match claimed.insert(l.clone(), file.path.clone()) {
                Some(other) => failed.push((
                    file.clone(),
                    l,
                    format!("lands on the same local file as {other}"),
                )),
                None => plan.push((file.clone(), l)),
            },
        }
    }
    // Any earlier copy that was complete locally counts, even one whose pull failed afterwards
    // (a link that died while hashing): its bytes are here, and this pull hashes both ends again.
    // A copy whose hash disagreed with the box's never does.
    let recorded: HashMap<&str, &PulledFile> = previous
        .map(|p| {
            p.files
                .iter()
                .filter(|f| {
                    f.local_sha256.is_some()
                        && (f.remote_sha256.is_none() || f.remote_sha256 == f.local_sha256)
                })
                .map(|f| (f.remote_path.as_str(), f))
                .collect()
        })
        .unwrap_or_default();
    let mut starts = Vec::new();
    let mut recorded_hashes = Vec::new();
    for (file, local) in &plan {
        let record = recorded
            .get(file.path.as_str())
            .filter(|r| r.local_path == local.to_string_lossy())
            .map(|r| (r.size, r.mtime, r.local_sha256.clone().unwrap_or_default()));
        recorded_hashes.push(record.as_ref().map(|r| r.2.clone()));
        starts.push(local_start(file, local, record).await);
    }
    let to_send: u64 = plan
        .iter()
        .zip(&starts)
        .map(|((f, _), s)| match s {
            Start::Unchanged => 0,
            Start::Resume(n) => f.size - n,
            Start::Fresh => f.size,
        })
        .sum();
    progress.bytes_total.store(to_send, Ordering::Relaxed);
    progress.files_total.store(plan.len(), Ordering::Relaxed);
    progress.stage("copying");

    let copies = copy_all(session, host, &plan, &starts, &progress);
    let paths: Vec<&str> = plan.iter().map(|(f, _)| f.path.as_str()).collect();
    let hashes = remote_hashes(session, &paths);
    let (copied, hashes) = tokio::join!(copies, hashes);
    let copied = copied?;

    progress.stage("verifying");
    let relisted = list_remote(session, host, spec)
        .await
        .map(|(l, _)| l)
        .map_err(|e| format!("could not list the box again after copying: {e}"));
    let mut files = Vec::new();
    for (((file, local), outcome), recorded_hash) in plan.iter().zip(copied).zip(recorded_hashes) {
        let changed = match &relisted {
            Err(e) => Some(e.clone()),
            Ok(now) => match now.files.iter().find(|f| f.path == file.path) {
                None => Some("vanished from the box during the pull".to_string()),
                Some(now) if now.size != file.size || now.mtime != file.mtime => {
                    Some("changed on the box during the pull; pull again".to_string())
                }
                Some(_) => None,
            },
        };
        let record = match outcome {
            Err(e) => failed_file(file, local, e),
            Ok(copied) => {
                // Not copied means unchanged: its bytes were just hashed equal to the record.
                let copied = copied.unwrap_or(Copied {
                    sent: 0,
                    sha256: recorded_hash.unwrap_or_default(),
                });
                finish(
                    file,
                    local,
                    copied,
                    changed,
                    &hashes,
                    spec.verify.as_deref(),
                )
                .await
            }
        };
        files.push(record);
        progress.files_done.fetch_add(1, Ordering::Relaxed);
    }
    for (file, local, why) in failed {
        files.push(failed_file(&file, &local, why));
    }
    Ok(PullRecord {
        id: 0,
        host: host.to_string(),
        started,
        finished: Utc::now(),
        paths: spec.paths.clone(),
        unmatched: listing.unmatched,
        files,
    })
}

async fn local_start(
    file: &RemoteFile,
    local: &std::path::Path,
    recorded: Option<(u64, i64, String)>,
) -> Start {
    let local = local.to_path_buf();
    let file = file.clone();
    tokio::task::spawn_blocking(move || {
        let final_size = std::fs::metadata(&local).ok().map(|m| m.len());
        let may_be_unchanged = matches!(
            (&recorded, final_size),
            (Some((size, mtime, _)), Some(now)) if *size == now && *size == file.size && *mtime == file.mtime
        );
        let state = LocalState {
            final_size,
            final_hash: if may_be_unchanged {
                sha256_file(&local).ok()
            } else {
                None
            },
            recorded,
            part_size: std::fs::metadata(part_path(&local)).ok().map(|m| m.len()),
            part_source: std::fs::read_to_string(source_path(&local)).ok(),
        };
        decide(&file, &state)
    })
    .await
    .unwrap_or(Start::Fresh)
}

/// Copies every planned file; per-file errors come back as text, a link that cannot even give an
/// SFTP channel fails the pull.
async fn copy_all(
    session: &Session,
    host: &str,
    plan: &[(RemoteFile, PathBuf)],
    starts: &[Start],
    progress: &Progress,
) -> Result<Vec<Result<Option<Copied>, String>>, PullError> {
    if starts.iter().all(|s| *s == Start::Unchanged) {
        return Ok(plan.iter().map(|_| Ok(None)).collect());
    }
    let sftp = session
        .sftp(SFTP_TIMEOUT)
        .await
        .map_err(|source| PullError::Link {
            host: host.to_string(),
            stage: "opening SFTP",
            source,
        })?;
    let sftp = &sftp;
    // Collected first: a lazy map over borrowed pairs is not `Send` enough for tokio::spawn.
    let mut copies = Vec::with_capacity(plan.len());
    for ((file, local), start) in plan.iter().zip(starts) {
        let from = *start;
        copies.push(async move {
            let from = match from {
                Start::Unchanged => return Ok(None),
                Start::Resume(n) => n,
                Start::Fresh => 0,
            };
            download(&sftp.raw, file, local, from, &progress.bytes_done)
                .await
                .map(Some)
                .map_err(|e| e.to_string())
        });
    }
    Ok(futures::stream::iter(copies)
        .buffered(FILES_AT_ONCE)
        .collect()
        .await)
}

/// SHA-256 of each file as the box sees it; an empty map when the box has no hashing tool or the
/// link failed (each file then fails with that reason).
async fn remote_hashes(
    session: &Session,
    paths: &[&str],
) -> Result<BTreeMap<String, String>, String> {
    let mut all = BTreeMap::new();
    for batch in paths.chunks(HASH_BATCH) {
        let limits = ExecLimits {
            timeout: Duration::from_secs(3600),
            max_output: 4 * 1024 * 1024,
        };
        let out = session
            .exec(&hash_command(batch), limits)
            .await
            .map_err(|e| format!("hashing on the box: {e}"))?;
        match parse_hashes(&String::from_utf8_lossy(&out.stdout)) {
            HashOutput::NoTool => {
                return Err("the box has neither sha256sum nor shasum".to_string());
            }
            HashOutput::Hashes(h) => all.extend(h),
        }
    }
    Ok(all)
}

/// A copied (or unchanged) file, with its local hash, so even a failed pull leaves a record a
/// later pull can trust for its bytes; then compared with the box's hash and verified.
async fn finish(
    file: &RemoteFile,
    local: &std::path::Path,
    copied: Copied,
    error: Option<String>,
    hashes: &Result<BTreeMap<String, String>, String>,
    verify: Option<&str>,
) -> PulledFile {
    let mut record = failed_file(file, local, String::new());
    record.sent = copied.sent;
    record.local_sha256 = Some(copied.sha256);
    record.remote_sha256 = hashes
        .as_ref()
        .ok()
        .and_then(|h| h.get(&file.path).cloned());
    record.error = error.or_else(|| match hashes {
        Err(e) => Some(e.clone()),
        Ok(_) if record.remote_sha256.is_none() => {
            Some("the box printed no hash for it".to_string())
        }
        Ok(_) => None,
    });
    if record.error.is_some() {
        return record;
    }
    if record.local_sha256 != record.remote_sha256 {
        record.error = Some(format!(
            "hash mismatch: box {} local {}",
            record.remote_sha256.as_deref().unwrap_or("none"),
            record.local_sha256.as_deref().unwrap_or("unreadable")
        ));
        return record;
    }
    let verification = verify_local(local, verify).await;
    record.verified = verification.passed;
    record.verification = verification.how;
    record
}

fn failed_file(file: &RemoteFile, local: &std::path::Path, why: String) -> PulledFile {
    PulledFile {
        remote_path: file.path.clone(),
        size: file.size,
        mtime: file.mtime,
        remote_sha256: None,
        local_path: local.to_string_lossy().into_owned(),
        local_sha256: None,
        sent: 0,
        verified: false,
        verification: String::new(),
        error: (!why.is_empty()).then_some(why),
        at: Utc::now(),
    }
}
