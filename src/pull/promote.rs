//! A copy takes its final name only once it is proven. Every copy path (SFTP, exec `tail`, tar
//! batches) leaves its bytes in the `.part` beside dest, made durable before any is promoted
//! (`finish`), except a tar batch's file nothing was at the name of, which its batch proves and
//! the pull links there (`place`); only after the box's hash and the local hash agree (for a tar
//! batch's file, the hash of the bytes received stands for the box's) and a second look at the
//! box saw the file unchanged does the pull check that it loads and rename it into
//! place: where it waits ([`in_place`]) when only the built-in check applies, else staged under its
//! own name ([`staged`]). A torn or changed copy never replaces anything, and a copy that does not
//! load never replaces an earlier one that does: the previous verified version stays until its
//! successor is proven. `finish` does this for each copied file and writes its record.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::check::{Verification, verify, verify_builtin_named};
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

/// Whether only the built-in check applies to `local` and nothing refuses its replacement:
/// then it can be checked where its `.part` waits and renamed from there (`in_place`).
pub fn builtin_only(local: &Path, commands: &VerifyCommands, protected: &Protected) -> bool {
    let name = local.file_name().unwrap_or_default();
    protected.refuses(local).is_none() && commands.for_file(&name.to_string_lossy()).is_empty()
}

/// A file only the built-in check applies to (every small file of most runs), checked where
/// its `.part` waits, by its own name, and renamed into place from there: no staging rename.
/// Blocking. Some(how it loads) once in place; None where it does not load: it is then staged
/// and checked again under its real name (`staged`), so what its record says names it.
pub fn in_place(dest: &Path, local: &Path, box_mode: u32) -> Result<Option<Verification>, String> {
    let (part, _) = part_paths(dest, local);
    std::fs::set_permissions(&part, std::fs::Permissions::from_mode(box_mode & 0o777))
        .map_err(|e| disk(&part, e).to_string())?;
    let verification = verify_builtin_named(&part, local);
    if !verification.passed {
        return Ok(None);
    }
    into_place_now(dest, local, &part)?;
    Ok(Some(verification))
}

/// The `.part` of `local` staged under its own name in `staging` (a folder this promote has to
/// itself), so a command that goes by the name sees the real one, checked by every command
/// that applies, and renamed into place with the box's permission bits less setuid, setgid
/// and sticky, unless it does not load where an earlier copy does, or `local` is protected.
pub async fn staged(
    dest: &Path,
    local: &Path,
    file: &RemoteFile,
    commands: &VerifyCommands,
    protected: &Protected,
    staging: &Path,
) -> Promoted {
    let staged = staging.join(local.file_name().unwrap_or_default());
    let mode = file.mode & 0o777;
    let refused = protected.refuses(local);
    let (dest_owned, local_owned, staged_owned) =
        (dest.to_path_buf(), local.to_path_buf(), staged.clone());
    if let Err(e) =
        blocking(move || stage_now(&dest_owned, &local_owned, &staged_owned, mode)).await
    {
        return failed(e);
    }
    let verification = verify(&staged, commands).await;
    if !verification.passed || refused.is_some() {
        return not_promoted(dest, local, &staged, verification, refused, commands).await;
    }
    placed(dest, local, &staged, verification).await
}

/// `staged` renamed into place as `local`, its record saying how it was checked.
async fn placed(dest: &Path, local: &Path, staged: &Path, verification: Verification) -> Promoted {
    let (dest, local, staged) = (
        dest.to_path_buf(),
        local.to_path_buf(),
        staged.to_path_buf(),
    );
    match blocking(move || into_place_now(&dest, &local, &staged)).await {
        Ok(()) => Promoted {
            verification,
            error: None,
        },
        Err(e) => failed(e),
    }
}

pub fn failed(error: String) -> Promoted {
    Promoted {
        verification: Verification {
            passed: false,
            unchecked: false,
            how: String::new(),
        },
        error: Some(error),
    }
}

/// A staged copy that failed its check or may not replace `local`: it goes back to a complete
/// `.part` and the record says why. A copy a check says does not load never takes its final
/// name: not over an earlier copy that loads, and not where nothing was either, where a file
/// browser would show it as the result.
async fn not_promoted(
    dest: &Path,
    local: &Path,
    staged: &Path,
    verification: Verification,
    refused: Option<String>,
    commands: &VerifyCommands,
) -> Promoted {
    let waits = parts_dir(dest);
    // A copy nothing can check takes its name (recorded UNPROVEN, as it is), unless refused.
    let kept = if verification.passed || verification.unchecked {
        None
    } else if exists(local) && verify(local, commands).await.passed {
        Some(format!(
            "{}; the earlier copy, which loads, was kept: this version waits in {} until it is \
             proven",
            verification.how,
            waits.display()
        ))
    } else {
        Some(format!(
            "{}; it waits in {}, not under its name, until a copy that loads is pulled",
            verification.how,
            waits.display()
        ))
    };
    match kept.or(refused) {
        Some(why) => {
            unstage(dest, local, staged).await;
            Promoted {
                verification,
                error: Some(why),
            }
        }
        None => placed(dest, local, staged, verification).await,
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

fn stage_now(dest: &Path, local: &Path, staged: &Path, mode: u32) -> Result<(), String> {
    let (part, _) = part_paths(dest, local);
    let io = |p: &Path, e| disk(p, e).to_string();
    rename_making_folder(&part, staged).map_err(|e| io(&part, e))?;
    std::fs::set_permissions(staged, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io(staged, e))
}

/// Renames `from` to `to`, making `to`'s folder only once the rename finds it missing: looking
/// for it before every file was two calls a file, most of a many-file pull's.
fn rename_making_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(to.parent().unwrap_or(Path::new("/")))?;
            std::fs::rename(from, to)
        }
        other => other,
    }
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

fn into_place_now(dest: &Path, local: &Path, staged: &Path) -> Result<(), String> {
    let io = |p: &Path, e| disk(p, e).to_string();
    // The user's file carries nothing of rigwatch's.
    let tagged_itself = super::local::untag_part(staged);
    match rename_making_folder(staged, local) {
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            across_devices(dest, local, staged)?;
        }
        other => other.map_err(|e| io(local, e))?,
    }
    if !tagged_itself {
        let (_, src) = part_paths(dest, local);
        let _ = std::fs::remove_file(src);
    }
    // The rename becomes durable when `finish_all` syncs its folder, once for all its files.
    Ok(())
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
