//! A copy takes its final name only once it is proven. Every copy path (SFTP, exec `tail`, tar
//! batches) leaves its bytes in the `.part` beside dest, made durable before any is promoted
//! (`finish`); only after the box's hash and
//! the local hash agree and a second look at the box saw the file unchanged does the pull call
//! [`promote`], which checks that it loads and then renames it into place. A torn or changed copy
//! never replaces anything, and a copy that does not load never replaces an earlier one that
//! does: the previous verified version stays until its successor is proven. `finish` makes
//! that call for each copied file and writes its record.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::check::{Verification, verify};
use super::copy::disk;
use super::local::{part_paths, parts_dir};
use super::protect::Protected;
use super::remote::RemoteFile;
use crate::config::fleet::VerifyCommands;

/// What became of a copy whose hash matched the box's.
pub struct Promoted {
    pub verification: Verification,
    /// Set when it did not take its final name (the earlier copy was kept, or a write failed).
    pub error: Option<String>,
}

/// Checks the `.part` of `local` (whose bytes hashed as the box's) and renames it into place,
/// with the box's permission bits less setuid, setgid and sticky. While it is checked it waits
/// in `staging` (a folder this promote has to itself) under the file's own name, so a check
/// (built-in or the user's command) that goes by the name sees the real one.
pub async fn promote(
    dest: &Path,
    local: &Path,
    file: &RemoteFile,
    commands: &VerifyCommands,
    protected: &Protected,
    staging: &Path,
) -> Promoted {
    let staged = staging.join(local.file_name().unwrap_or_default());
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

/// Runs a promote's few filesystem steps in one blocking task: each `tokio::fs` call is a
/// hand-over to a blocking thread and back, and a promote was about ten of them per file.
async fn blocking<T: Send + 'static>(
    steps: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(steps)
        .await
        .unwrap_or_else(|e| Err(format!("a promote's task failed: {e}")))
}

async fn stage(dest: &Path, local: &Path, staged: &Path, mode: u32) -> Result<(), String> {
    let (part, _) = part_paths(dest, local);
    let staged = staged.to_path_buf();
    blocking(move || {
        let io = |p: &Path, e| disk(p, e).to_string();
        if let Some(dir) = staged.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        std::fs::rename(&part, &staged).map_err(|e| io(&part, e))?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(mode))
            .map_err(|e| io(&staged, e))
    })
    .await
}

/// Back to a complete `.part` (its source tag still with it): the next pull resumes it at its
/// end, sending nothing, and checks it again.
async fn unstage(dest: &Path, local: &Path, staged: &Path) {
    let (part, _) = part_paths(dest, local);
    let staged = staged.to_path_buf();
    let _ = blocking(move || {
        let _ = std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600));
        let _ = std::fs::rename(&staged, &part);
        Ok(())
    })
    .await;
}

async fn into_place(dest: &Path, local: &Path, staged: &Path) -> Result<(), String> {
    let (dest, local, staged) = (
        dest.to_path_buf(),
        local.to_path_buf(),
        staged.to_path_buf(),
    );
    blocking(move || {
        let io = |p: &Path, e| disk(p, e).to_string();
        let parent = local.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        // The user's file carries nothing of rigwatch's.
        super::local::untag_part(&staged);
        match std::fs::rename(&staged, &local) {
            Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
                across_devices(&dest, &local, &staged)?;
            }
            other => other.map_err(|e| io(&local, e))?,
        }
        let (_, src) = part_paths(&dest, &local);
        let _ = std::fs::remove_file(src);
        // The rename becomes durable when `finish_all` syncs its folder, once for all its
        // files.
        Ok(())
    })
    .await
}

/// `local`'s folder is on another filesystem than the parts folder beside dest (dest, or a
/// folder in it, is a mount point): the proven copy is copied into a hidden temporary file
/// beside `local`, fsynced, and renamed from there, so the final name still appears whole.
fn across_devices(dest: &Path, local: &Path, staged: &Path) -> Result<(), String> {
    let (part, _) = part_paths(dest, local);
    let mut name = std::ffi::OsString::from(".");
    name.push(part.file_name().unwrap_or_default());
    let beside = local.with_file_name(name);
    let copied =
        std::fs::copy(staged, &beside).and_then(|_| std::fs::File::open(&beside)?.sync_all());
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&beside);
        return Err(disk(&beside, e).to_string());
    }
    std::fs::rename(&beside, local).map_err(|e| disk(local, e).to_string())?;
    let _ = std::fs::remove_file(staged);
    Ok(())
}
