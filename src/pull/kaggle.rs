//! A Kaggle commit's output brought home: `kaggle kernels output` downloads the latest
//! version's `/kaggle/working` (and its log) into a fresh folder of its own,
//! `dest/OWNER/SLUG/STAMP.part`; each file is hashed here over the bytes received (Kaggle gives
//! no hash of its own to compare with: the recorded hash is what arrived, as for a file carried
//! in a tar stream) and proven to load by the same checks as a box's files; then the folder is
//! renamed to `STAMP`, so a pull never writes over an earlier one's files. The ledger records
//! it under the member's name with the kernel as the instance. There is nothing to tear down,
//! so no guard reads this record: it says what came home and whether it loads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chrono::Utc;

use super::{Progress, PullError, Pulled, Tally};
use crate::config::kaggle::WORKING;
use crate::config::{KaggleConfig, PullConfig};
use crate::ledger::{Ledger, PullRecord, PulledFile};

/// The longest a download of a commit's output may take (up to 20 GB).
const OUTPUT_TIMEOUT: Duration = Duration::from_secs(4 * 3600);
/// The most files one output folder is taken with (a commit keeps at most 500 files).
const MAX_FILES: usize = 100_000;

/// Whether the output file at `path` (absolute, under `/kaggle/working`) is one `pattern`
/// names: the path itself, a file under it, or a match component by component.
fn names(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let f: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    f.len() >= p.len() && p.iter().zip(&f).all(|(p, f)| crate::glob::matches(p, f))
}

/// Every regular file under `root`, as (path, relative path), sorted; Err names the path
/// that could not be read.
fn files_under(root: &Path) -> Result<Vec<(PathBuf, String)>, (PathBuf, std::io::Error)> {
    let mut out = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let at = |e| (folder.clone(), e);
        for entry in std::fs::read_dir(&folder).map_err(at)? {
            let entry = entry.map_err(at)?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| (path.clone(), e))?;
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() {
                let rel = path
                    .strip_prefix(root)
                    .map(|r| r.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((path, rel));
            }
            if out.len() > MAX_FILES {
                let many = format!("more than {MAX_FILES} output files");
                return Err((root.to_path_buf(), std::io::Error::other(many)));
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// Each path (a file or a folder) fsynced; the first that could not be is the error.
async fn durable(paths: Vec<PathBuf>) -> Result<(), PullError> {
    let (paths, failed) = tokio::task::spawn_blocking(move || {
        let failed = super::durable::sync_each(&paths);
        (paths, failed)
    })
    .await
    .map_err(|e| PullError::Book(e.to_string()))?;
    match failed.into_iter().next() {
        None => Ok(()),
        Some((i, source)) => Err(PullError::Local {
            path: paths[i].clone(),
            source,
        }),
    }
}

/// One downloaded file hashed and proven; `at` is where it will live once the folder is
/// renamed.
async fn proven(
    path: &Path,
    remote: String,
    at: &Path,
    spec: &PullConfig,
) -> Result<PulledFile, PullError> {
    let owned = path.to_path_buf();
    let (size, hash) = tokio::task::spawn_blocking(move || {
        let size = std::fs::metadata(&owned)?.len();
        Ok::<_, std::io::Error>((size, super::local::sha256_file(&owned)?))
    })
    .await
    .map_err(|e| PullError::Book(e.to_string()))?
    .map_err(|source| PullError::Local {
        path: path.to_path_buf(),
        source,
    })?;
    let check = super::check::verify(path, &spec.verify).await;
    Ok(PulledFile {
        remote_path: remote,
        size,
        mtime: 0,
        stamp: None,
        remote_sha256: Some(hash.clone()),
        local_path: at.to_string_lossy().into_owned(),
        local_sha256: Some(hash),
        sent: size,
        verified: check.passed,
        unproven: check.unchecked,
        local_stat: None,
        settled_since: None,
        verification: check.how,
        error: None,
        at: Utc::now(),
    })
}

/// Each downloaded file hashed and proven, named as Kaggle has it (`/kaggle/working/…`, or the
/// kernel's log), at where it will live once `done` is its folder's name.
async fn prove_all(
    found: &[(PathBuf, String)],
    kernel: &str,
    done: &Path,
    spec: &PullConfig,
    progress: &Progress,
) -> Result<Vec<PulledFile>, PullError> {
    let slug = kernel.split_once('/').map_or(kernel, |(_, s)| s);
    let log = format!("{slug}.log");
    progress.files_total.store(found.len(), Ordering::Relaxed);
    let bytes = found
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.bytes_total.store(bytes, Ordering::Relaxed);
    progress.set_stage(super::progress::Stage::Verifying);
    let mut files = Vec::with_capacity(found.len());
    for (path, rel) in found {
        let remote = if *rel == log {
            format!("{kernel} log ({log})")
        } else {
            format!("{WORKING}/{rel}")
        };
        files.push(proven(path, remote, &done.join(rel), spec).await?);
        progress.files_done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(files)
}

/// Pulls `kernel`'s latest output into `spec.dest` and records it; see the module's words.
pub async fn pull_kernel_and_record(
    member: &KaggleConfig,
    kernel: &str,
    spec: &PullConfig,
    ledger: &mut Ledger,
    progress: Arc<Progress>,
    held: &crate::ledger::locks::Held,
) -> Result<Pulled, PullError> {
    super::holds(held, &member.name).map_err(PullError::NotHeld)?;
    let started = Utc::now();
    let (owner, slug) = kernel.split_once('/').unwrap_or(("", kernel));
    let home = spec.dest.join(owner).join(slug);
    let stamp = started.format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let part = home.join(format!("{stamp}.part"));
    let done = home.join(&stamp);
    std::fs::create_dir_all(&part).map_err(|source| PullError::Local {
        path: part.clone(),
        source,
    })?;
    progress.set_stage(super::progress::Stage::Copying);
    crate::transport::kaggle::output(member, kernel, &part, OUTPUT_TIMEOUT).await?;
    let found = files_under(&part).map_err(|(path, source)| PullError::Local { path, source })?;
    let files = prove_all(&found, kernel, &done, spec, &progress).await?;
    // The files' bytes durable before their folder takes its final name, and that name
    // durable before the ledger says they are home.
    durable(found.iter().map(|(p, _)| p.clone()).collect()).await?;
    std::fs::rename(&part, &done).map_err(|source| PullError::Local {
        path: done.clone(),
        source,
    })?;
    durable(vec![done.clone(), home.clone()]).await?;
    let unmatched = spec
        .paths
        .iter()
        .filter(|p| !files.iter().any(|f| names(p, &f.remote_path)))
        .cloned()
        .collect();
    let mut record = PullRecord {
        id: 0,
        host: member.name.clone(),
        started,
        finished: Utc::now(),
        paths: spec.paths.clone(),
        unmatched,
        instance_id: Some(kernel.to_string()),
        files,
        local_disk_full: false,
    };
    record.id = ledger.record_pull(&record)?;
    let mut tally = Tally::default();
    for f in &record.files {
        tally.files += 1;
        tally.bytes += f.size;
        tally.sent += f.sent;
        tally.outcomes[f.outcome() as usize] += 1;
    }
    Ok(Pulled {
        id: record.id,
        host: record.host,
        unmatched: record.unmatched,
        local_disk_full: false,
        tally,
    })
}

#[cfg(test)]
mod tests {
    use super::names;

    #[test]
    fn a_pull_path_names_the_file_a_folder_above_it_or_a_glob() {
        let f = "/kaggle/working/ckpt/model.safetensors";
        assert!(names("/kaggle/working", f));
        assert!(names("/kaggle/working/ckpt", f));
        assert!(names("/kaggle/working/ckpt/*.safetensors", f));
        assert!(names("/kaggle/working/*/model.safetensors", f));
        assert!(!names("/kaggle/working/ckpt/*.bin", f));
        assert!(!names("/kaggle/working/ckpt/model.safetensors/x", f));
        assert!(!names("/kaggle/working/submission.csv", f));
    }
}
