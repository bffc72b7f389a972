//! A small file a tar batch carried, put straight at its final name once proven where nothing
//! was there (`Start::New`): written into an unnamed file in its own folder (`O_TMPFILE`),
//! checked (on the bytes it was written from where its check reads a file through, as JSON's
//! does, else by reading it back through that file), made durable with the rest of its batch, and
//! linked under its name once the pull has judged its record (`finish`), as a `.part` is
//! renamed. Nothing is seen at the name before the bytes are proven and durable, and no `.part`
//! is made, tagged, renamed and untagged: on a 100 000-file pull those steps were a quarter of
//! the client's CPU (BENCHMARKS.md, seventh session). A pull cut before then leaves nothing:
//! the kernel frees an unnamed file with its last descriptor.
//!
//! A file that cannot go this way (a filesystem without unnamed files, no file descriptors to
//! spare, bytes that do not load) goes by its `.part` as before. One whose name was taken
//! since the pull looked is not linked (nothing is replaced), and its record says to pull again.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::check::{Verification, verify_builtin_written};

/// A proven copy with no name yet: made durable with its batch, then linked at its name once
/// the pull has judged its record (`finish`), so a pull cut before it records the file leaves
/// no unrecorded copy at the name (the kernel frees an unnamed file with its last descriptor).
pub struct Unnamed {
    pub(super) file: File,
    pub(super) local: PathBuf,
    _held: Held,
}

/// An unnamed copy and how it loads.
pub struct Proven {
    pub verification: Verification,
    pub unnamed: Unnamed,
}

/// Writes `bytes` (a whole file the box's hash and second look already vouch for) into an
/// unnamed file in `local`'s folder, made if missing, with the box's permission bits less
/// setuid, setgid and sticky, and checks it loads as `local`. None where this way is not open
/// to it: the caller then writes its `.part`.
pub(super) fn write(local: &Path, bytes: &[u8], mode: u32) -> Option<Proven> {
    let held = Held::take()?;
    let folder = local.parent()?;
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_TMPFILE)
            .open(folder)
    };
    let mut file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(folder).ok()?;
            open()
        }
        opened => opened,
    }
    .ok()?;
    file.write_all(bytes).ok()?;
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
        .ok()?;
    let verification = verify_builtin_written(&mut file, bytes, local);
    verification.passed.then(|| Proven {
        verification,
        unnamed: Unnamed {
            file,
            local: local.to_path_buf(),
            _held: held,
        },
    })
}

/// The durable copy given its name. Fails where the name was taken since the pull looked
/// (`EEXIST`): nothing there is replaced.
pub(super) fn link(unnamed: Unnamed) -> std::io::Result<()> {
    use nix::fcntl::{AT_FDCWD, AtFlags};
    // By its descriptor alone (AT_EMPTY_PATH) where this process may: with CAP_DAC_READ_SEARCH,
    // or on kernels that let the opener of a file link it. Else through /proc, which needs
    // neither (open(2), O_TMPFILE) but costs a lookup in /proc a file.
    if !NO_EMPTY_PATH.load(Ordering::Relaxed) {
        let by_fd = nix::unistd::linkat(
            &unnamed.file,
            "",
            AT_FDCWD,
            &unnamed.local,
            AtFlags::AT_EMPTY_PATH,
        );
        match by_fd {
            Err(nix::errno::Errno::ENOENT | nix::errno::Errno::EPERM) => {
                NO_EMPTY_PATH.store(true, Ordering::Relaxed);
            }
            done => return done.map_err(std::io::Error::from),
        }
    }
    link_through_proc(&unnamed)
}

fn link_through_proc(unnamed: &Unnamed) -> std::io::Result<()> {
    use nix::fcntl::{AT_FDCWD, AtFlags};
    let by_proc = format!("/proc/self/fd/{}", unnamed.file.as_raw_fd());
    nix::unistd::linkat(
        AT_FDCWD,
        by_proc.as_str(),
        AT_FDCWD,
        &unnamed.local,
        AtFlags::AT_SYMLINK_FOLLOW,
    )
    .map_err(std::io::Error::from)
}

/// Set once linking by descriptor alone was refused: every later link goes through /proc.
static NO_EMPTY_PATH: AtomicBool = AtomicBool::new(false);

/// One of the file descriptors unnamed copies may hold at once: each stays open until its
/// chunk is judged and it is linked, so a pull with three chunks in hand holds up to ~12 000,
/// and the process must keep descriptors for everything else (its connections, the ledger,
/// other pulls' parts).
struct Held;

impl Held {
    fn take() -> Option<Held> {
        let budget = *BUDGET.get_or_init(budget);
        HELD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < budget).then_some(n + 1)
        })
        .ok()
        .map(|_| Held)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.fetch_sub(1, Ordering::AcqRel);
    }
}

static HELD: AtomicUsize = AtomicUsize::new(0);
static BUDGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// The descriptors this process may open, once its soft limit is raised to its hard one (at
/// most 65 536; the common soft limit of 1 024 would leave a pull a few hundred), less 1 024
/// kept for everything else (at least half kept). Copies wait unnamed until their chunk is
/// judged, and a pull keeps three chunks of up to ~4 000 files in hand.
fn budget() -> usize {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    let wanted = hard.min(1 << 16);
    let soft = if wanted > soft && setrlimit(Resource::RLIMIT_NOFILE, wanted, hard).is_ok() {
        wanted
    } else {
        soft
    };
    usize::try_from(soft.saturating_sub(1024).max(soft / 2)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proven_copy_has_no_name_until_it_is_linked_and_never_replaces_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = dir.path().join("cells/d000/m000001.json");
        let Proven {
            verification,
            unnamed,
        } = write(&local, b"{\"loss\": 0.25}\n", 0o4755).expect("written unnamed");
        assert!(verification.passed, "{verification:?}");
        assert!(verification.how.starts_with("json"), "{verification:?}");
        // Its folder was made; nothing in it has a name yet.
        let folder = local.parent().expect("folder");
        assert_eq!(std::fs::read_dir(folder).expect("folder").count(), 0);
        link(unnamed).expect("linked");
        assert_eq!(std::fs::read(&local).expect("read"), b"{\"loss\": 0.25}\n");
        let mode = std::fs::metadata(&local)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755, "setuid dropped, the rest kept");
        // A name taken since the pull looked is not replaced.
        let again = write(&local, b"{\"loss\": 0.5}\n", 0o644).expect("written");
        let err = link(again.unnamed).expect_err("the name is taken");
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&local).expect("read"), b"{\"loss\": 0.25}\n");
    }

    /// The way every process may take, whoever runs the tests.
    #[test]
    fn a_copy_linked_through_proc_takes_its_name_and_never_replaces_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = dir.path().join("m.json");
        let unnamed = write(&local, b"[1]", 0o644).expect("written").unnamed;
        link_through_proc(&unnamed).expect("linked");
        assert_eq!(std::fs::read(&local).expect("read"), b"[1]");
        let again = write(&local, b"[2]", 0o644).expect("written").unnamed;
        let err = link_through_proc(&again).expect_err("taken");
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&local).expect("read"), b"[1]");
    }

    #[test]
    fn bytes_that_do_not_load_are_left_to_the_part_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = dir.path().join("m.json");
        assert!(write(&local, b"{\"loss\": ", 0o644).is_none());
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
