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
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Writes `bytes` (a whole file the box's second look after tar already vouches for) into an
/// unnamed file in `local`'s folder, made if missing, with the box's permission bits less
/// setuid, setgid and sticky, and checks it loads as `local`. None where this way is not open
/// to it: the caller then writes its `.part`.
pub(super) fn write(local: &Path, bytes: &[u8], mode: u32, modes: &mut Modes) -> Option<Proven> {
    let held = Held::take()?;
    let folder = local.parent()?;
    // Asked again once a missing folder is made: it takes its parent's default ACL.
    let mut open = || {
        let (create, chmod) = modes.create(mode & 0o777, folder);
        open_unnamed(folder, create).map(|file| (file, chmod))
    };
    let (mut file, chmod) = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(folder).ok()?;
            open()
        }
        opened => opened,
    }
    .ok()?;
    file.write_all(bytes).ok()?;
    if chmod {
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
            .ok()?;
    }
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

/// The mode to create a copy with that is to have exactly `wanted`, and whether its bits must
/// still be set after. The kernel takes the umask's bits off a new file's, or, in a folder with
/// a default ACL, the ACL's: where neither can take any of `wanted`'s, the create gives it
/// exactly that, and a chmod a file was one more journaled inode change (1.9 % of a
/// 100 000-file pull's CPU here). Else the copy is made owner-only and set after. `umask` None:
/// not known; `default_acl` is asked only where the umask would leave `wanted` whole.
fn create_mode(wanted: u32, umask: Option<u32>, default_acl: impl FnOnce() -> bool) -> (u32, bool) {
    match umask {
        Some(umask) if wanted & umask == 0 && !default_acl() => (wanted, false),
        _ => (0o600, true),
    }
}

/// What the copies of one batch are created with: the process's umask, and whether the last
/// folder written to holds a default ACL, each read once for the batch and kept no longer (the
/// next pull sees its folders as they are then).
pub(super) struct Modes {
    umask: Option<u32>,
    last: Option<(PathBuf, bool)>,
}

impl Modes {
    pub(super) fn new() -> Modes {
        Modes {
            umask: umask(),
            last: None,
        }
    }

    /// `create_mode` for a copy in `folder`.
    fn create(&mut self, wanted: u32, folder: &Path) -> (u32, bool) {
        let umask = self.umask;
        create_mode(wanted, umask, || self.default_acl(folder))
    }

    /// Whether `folder` may hold a default ACL (one that, not the umask, shapes new files'
    /// modes): true where it does or where that could not be read. Read once for a run of copies
    /// into the same folder (they come in the listing's order).
    fn default_acl(&mut self, folder: &Path) -> bool {
        match &self.last {
            Some((known, has)) if known == folder => *has,
            _ => match xattr::get(folder, "system.posix_acl_default") {
                Ok(acl) => {
                    self.last = Some((folder.to_path_buf(), acl.is_some()));
                    acl.is_some()
                }
                Err(_) => true,
            },
        }
    }
}

/// This process's umask, as the kernel says it (`/proc/self/status`, Linux 4.7 and later):
/// reading it with umask(2) would set it, racing every other thread's creates.
fn umask() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

/// An unnamed file in `folder` (Linux's `O_TMPFILE`).
#[cfg(target_os = "linux")]
fn open_unnamed(folder: &Path, mode: u32) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(mode)
        .custom_flags(nix::libc::O_TMPFILE)
        .open(folder)
}

/// A Mac has no unnamed files: every small file goes by its `.part` (write, fsync, rename), the
/// way a filesystem without `O_TMPFILE` takes on Linux, with the same guarantees.
#[cfg(not(target_os = "linux"))]
fn open_unnamed(_folder: &Path, _mode: u32) -> std::io::Result<File> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// The durable copy given its name. Fails where the name was taken since the pull looked
/// (`EEXIST`): nothing there is replaced.
#[cfg(target_os = "linux")]
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

/// Where there are no unnamed files ([`open_unnamed`]), none is ever made to be linked.
#[cfg(not(target_os = "linux"))]
pub(super) fn link(unnamed: Unnamed) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!(
            "{}: no unnamed files on this system",
            unnamed.local.display()
        ),
    ))
}

#[cfg(target_os = "linux")]
fn link_through_proc(unnamed: &Unnamed) -> std::io::Result<()> {
    use nix::fcntl::{AT_FDCWD, AtFlags};
    use std::os::fd::AsRawFd;
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
#[cfg(target_os = "linux")]
static NO_EMPTY_PATH: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

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

// Unnamed files are Linux's (`open_unnamed`).
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_proven_copy_has_no_name_until_it_is_linked_and_never_replaces_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = dir.path().join("cells/d000/m000001.json");
        let Proven {
            verification,
            unnamed,
        } = write(&local, b"{\"loss\": 0.25}\n", 0o4755, &mut Modes::new())
            .expect("written unnamed");
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
        let again = write(&local, b"{\"loss\": 0.5}\n", 0o644, &mut Modes::new()).expect("written");
        let err = link(again.unnamed).expect_err("the name is taken");
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&local).expect("read"), b"{\"loss\": 0.25}\n");
    }

    /// The way every process may take, whoever runs the tests.
    #[test]
    fn a_copy_linked_through_proc_takes_its_name_and_never_replaces_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = dir.path().join("m.json");
        let unnamed = write(&local, b"[1]", 0o644, &mut Modes::new())
            .expect("written")
            .unnamed;
        link_through_proc(&unnamed).expect("linked");
        assert_eq!(std::fs::read(&local).expect("read"), b"[1]");
        let again = write(&local, b"[2]", 0o644, &mut Modes::new())
            .expect("written")
            .unnamed;
        let err = link_through_proc(&again).expect_err("taken");
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&local).expect("read"), b"[1]");
    }

    #[test]
    fn a_copy_is_made_with_its_mode_and_set_after_only_where_the_create_could_not_give_it() {
        let no_acl = || false;
        assert_eq!(create_mode(0o644, Some(0o022), no_acl), (0o644, false));
        assert_eq!(create_mode(0o755, Some(0o022), no_acl), (0o755, false));
        // The umask would take the group's write bit.
        assert_eq!(create_mode(0o664, Some(0o022), no_acl), (0o600, true));
        assert_eq!(create_mode(0o644, Some(0o077), no_acl), (0o600, true));
        // Not known; or a default ACL that stands in for the umask.
        assert_eq!(create_mode(0o644, None, no_acl), (0o600, true));
        assert_eq!(create_mode(0o644, Some(0o022), || true), (0o600, true));
        // The folder is not asked where the umask already decides.
        let asked = std::cell::Cell::new(false);
        create_mode(0o666, Some(0o022), || {
            asked.set(true);
            false
        });
        assert!(!asked.get());
    }

    /// A folder whose default ACL would give new files less than the box's bits (here none for
    /// others, as `setfacl -d -m o::---` makes): the copy still has exactly the box's bits, also
    /// where the ACL came after an earlier batch saw the folder without one.
    #[test]
    fn a_copy_in_a_folder_with_a_default_acl_still_has_the_box_s_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("acl");
        std::fs::create_dir(&folder).expect("mkdir");
        let mode_of = |local: &Path, modes: &mut Modes| {
            let unnamed = write(local, b"[1]", 0o644, modes).expect("written").unnamed;
            link(unnamed).expect("linked");
            let mode = std::fs::metadata(local).expect("meta").permissions().mode();
            mode & 0o777
        };
        assert_eq!(
            mode_of(&folder.join("before.json"), &mut Modes::new()),
            0o644
        );
        // POSIX ACL xattr: version 2, then (tag, perm, id) for user::rwx, group::r-x, other::---.
        let mut acl = 2u32.to_le_bytes().to_vec();
        for (tag, perm) in [(0x01u16, 7u16), (0x04, 5), (0x20, 0)] {
            acl.extend(tag.to_le_bytes());
            acl.extend(perm.to_le_bytes());
            acl.extend(u32::MAX.to_le_bytes());
        }
        match xattr::set(&folder, "system.posix_acl_default", &acl) {
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => return, // no ACLs here
            set => set.expect("default ACL"),
        }
        // The next batch; in the folder, and in one the pull makes under it (which inherits
        // the ACL).
        let mut modes = Modes::new();
        for local in [folder.join("m.json"), folder.join("new/m.json")] {
            assert_eq!(mode_of(&local, &mut modes), 0o644, "{}", local.display());
        }
    }

    #[test]
    fn bytes_that_do_not_load_are_left_to_the_part_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = dir.path().join("m.json");
        assert!(write(&local, b"{\"loss\": ", 0o644, &mut Modes::new()).is_none());
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
