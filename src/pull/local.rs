//! Where each remote file lands locally, whether it needs copying, and its local SHA-256.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::remote::RemoteFile;

/// The part of a configured path before its first glob component, with `~` made the box's home.
/// A plain file or folder keeps its own name under `dest`, so `/w/run/ckpts` lands in
/// `dest/ckpts/…` and `/w/run/*.pt` in `dest/x.pt`.
fn base_of(config_path: &str, home: Option<&str>) -> String {
    let expanded = match (config_path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => format!("{}/{rest}", home.trim_end_matches('/')),
        _ => config_path.to_string(),
    };
    let components: Vec<&str> = expanded.trim_end_matches('/').split('/').collect();
    let glob_at = components
        .iter()
        .position(|c| crate::glob::is_path_pattern(c))
        .unwrap_or(components.len().saturating_sub(1));
    crate::glob::unescape(&components[..glob_at].join("/"))
}

/// The file's path under `dest`, or None when the remote path escapes its root (a `..`, or a
/// root that is not its prefix), which would write outside the destination. `remote` is the
/// escaped name; each component becomes the bytes the box has.
pub fn local_path(
    dest: &Path,
    config_path: &str,
    home: Option<&str>,
    remote: &str,
) -> Option<PathBuf> {
    let base = base_of(config_path, home);
    let rel = remote.strip_prefix(&base)?.strip_prefix('/')?;
    let parts: Vec<&str> = rel.split('/').collect();
    let clean = parts.iter().all(|c| !matches!(*c, "" | "." | ".."));
    clean.then(|| {
        let mut local = dest.to_path_buf();
        local.extend(parts.iter().map(|c| super::names::to_os(c)));
        local
    })
}

/// Where a pull keeps what is not finished: a folder beside `dest`, not in it, so no remote
/// name (a box may well hold `x.part`) can land on or be mistaken for rigwatch's own files.
pub fn parts_dir(dest: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(dest.file_name().unwrap_or_default());
    name.push(".rigwatch-parts");
    dest.with_file_name(name)
}

/// Whether `dest`'s parts folder holds anything now (an earlier pull's parts, to resume); one
/// that cannot be read is taken to.
pub fn parts_held(dest: &Path) -> bool {
    match std::fs::read_dir(parts_dir(dest)) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// The unfinished copy of `local` and, beside it, which remote version it holds (`size stamp`):
/// a partial copy of an older version must not be resumed into the new one. Named by a hash of
/// the local path so every file has its own pair.
pub fn part_paths(dest: &Path, local: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::ffi::OsStrExt;
    let key = hex(&Sha256::digest(local.as_os_str().as_bytes())[..16]);
    let dir = parts_dir(dest);
    (
        dir.join(format!("{key}.part")),
        dir.join(format!("{key}.src")),
    )
}

/// Throws away `local`'s unfinished copy and its tag: torn, of another version, or of a file
/// that is gone, it must never be resumed or promoted.
pub async fn discard_part(dest: &Path, local: &Path) {
    let (part, src) = part_paths(dest, local);
    let _ = tokio::fs::remove_file(part).await;
    let _ = tokio::fs::remove_file(src).await;
}

pub fn source_tag(remote: &RemoteFile) -> String {
    format!("{} {}", remote.size, remote.stamp)
}

/// The extended attribute a `.part` carries its source tag in, where its filesystem has them.
const SOURCE_XATTR: &str = "user.rigwatch.source";

/// Marks the open `part` as holding `remote`'s version: on the file itself where the filesystem
/// takes extended attributes, else in the `.src` file beside it. (A second file per copy to make
/// and delete was most of a small file's cost: a new inode is ~1 ms on a busy ext4.)
pub fn tag_part(part: &std::fs::File, src: &Path, remote: &RemoteFile) -> std::io::Result<()> {
    use xattr::FileExt;
    let tag = source_tag(remote);
    if part.set_xattr(SOURCE_XATTR, tag.as_bytes()).is_ok() {
        return Ok(());
    }
    // An older tag left on the file would be read before the `.src`.
    let _ = part.remove_xattr(SOURCE_XATTR);
    std::fs::write(src, tag)
}

/// The tag off a proven copy about to take its final name; whether it was on the file itself
/// (then there is no `.src` to remove: `tag_part` writes one only where xattrs fail).
pub fn untag_part(part: &Path) -> bool {
    xattr::remove(part, SOURCE_XATTR).is_ok()
}

/// Which remote version `part` holds, as [`tag_part`] marked it.
pub fn part_source(part: &Path, src: &Path) -> Option<String> {
    match xattr::get(part, SOURCE_XATTR) {
        Ok(Some(tag)) => String::from_utf8(tag).ok(),
        _ => std::fs::read_to_string(src).ok(),
    }
}

/// How a file will be brought home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Already here, same size and mtime as last pulled, and its bytes still hash the same.
    Unchanged,
    /// A `.part` of this exact remote version holds this many bytes.
    Resume(u64),
    /// Copied whole, over what is at its local name or a `.part` of another version.
    Fresh,
    /// Copied whole, and nothing was at its local name nor in its `.part`: once proven it can
    /// take its name without replacing anything (`place`).
    New,
}

/// What is on local disk for one remote file, gathered before deciding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalState {
    /// Size of the final file, if present.
    pub final_size: Option<u64>,
    /// The last pull's record of this file: (size, change stamp, local hash), when it was good.
    pub recorded: Option<(u64, String, String)>,
    /// Hash of the final file now, computed only when the record says it may be unchanged.
    pub final_hash: Option<String>,
    pub part_size: Option<u64>,
    pub part_source: Option<String>,
}

pub fn decide(remote: &RemoteFile, local: &LocalState) -> Start {
    if let (Some(size), Some((rsize, rstamp, rhash)), Some(now)) =
        (local.final_size, &local.recorded, &local.final_hash)
    {
        if size == remote.size && *rsize == remote.size && *rstamp == remote.stamp && rhash == now {
            return Start::Unchanged;
        }
    }
    match (local.part_size, &local.part_source) {
        (Some(n), Some(src)) if *src == source_tag(remote) && n <= remote.size => Start::Resume(n),
        _ if local.final_size.is_none() && local.part_size.is_none() => Start::New,
        _ => Start::Fresh,
    }
}

pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = open_unwatched(path)?;
    let mut hasher = Sha256::new();
    // Sized to the file (at most 1 MiB): a re-pull hashes every unchanged file, and a zeroed
    // 1 MiB buffer for each of 100 000 small files was 100 GB of memset.
    let len = file.metadata()?.len();
    let mut buf = vec![0u8; usize::try_from(len.clamp(4096, 1 << 20)).unwrap_or(1 << 20)];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// A copy at home opened to be read without marking it read: each first read after a write
/// would otherwise write the file's access time (a journal entry a file: on a re-pull of
/// 100 000 small files, 2 % of the client's CPU and as many inodes to write back). The flag is
/// refused on a file this user does not own; then it opens as any read does.
#[cfg(target_os = "linux")]
pub fn open_unwatched(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let unwatched = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOATIME)
        .open(path);
    match unwatched {
        Err(e) if e.raw_os_error() == Some(nix::libc::EPERM) => std::fs::File::open(path),
        opened => opened,
    }
}

/// A Mac has no `O_NOATIME` (its filesystems update access times lazily): a plain open.
#[cfg(not(target_os = "linux"))]
pub fn open_unwatched(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// A regular file opened to be read (`open_unwatched`), and its length.
pub fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    let file = open_unwatched(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok((file, meta.len()))
}

/// A regular file's whole bytes, read once (`open_regular`), with the file still open (at
/// most one byte past the length it had when opened).
pub fn read_unwatched(path: &Path) -> std::io::Result<(std::fs::File, Vec<u8>)> {
    let (mut file, len) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // A byte past its length is enough to tell a file that grew meanwhile (its hash then
    // differs): what grows it is not read whole.
    (&mut file).take(len + 1).read_to_end(&mut bytes)?;
    Ok((file, bytes))
}

/// Lowercase hex, as sha256sum prints it. data_encoding (already built for the known_hosts
/// reader) writes it in one pass: a `format!` per byte was 32 small strings for every hash and
/// part name, twice a file on a many-file pull.
pub fn hex(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy with an access time older than its last write, as every copy is before its first
    /// re-pull: under `relatime` a read then writes the access time.
    fn read_since_written(dir: &Path, name: &str) -> PathBuf {
        use nix::sys::stat::{UtimensatFlags, utimensat};
        use nix::sys::time::TimeSpec;
        let path = dir.join(name);
        std::fs::write(&path, b"{\"loss\": 0.25}\n").expect("write");
        let long_ago = TimeSpec::new(1_000_000, 0);
        utimensat(
            nix::fcntl::AT_FDCWD,
            &path,
            &long_ago,
            &TimeSpec::UTIME_OMIT,
            UtimensatFlags::FollowSymlink,
        )
        .expect("utimensat");
        path
    }

    fn accessed(path: &Path) -> i64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).expect("meta").atime()
    }

    /// A re-pull hashes every copy that may be unchanged: reading one must not write to it.
    #[test]
    fn hashing_or_reading_a_copy_leaves_its_access_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let control = read_since_written(dir.path(), "control.json");
        std::fs::read(&control).expect("read");
        if accessed(&control) == 1_000_000 {
            // A filesystem mounted noatime marks no read: there is nothing to tell apart.
            return;
        }
        let hashed = read_since_written(dir.path(), "hashed.json");
        sha256_file(&hashed).expect("hash");
        assert_eq!(accessed(&hashed), 1_000_000, "hashing marked the copy read");
        let read = read_since_written(dir.path(), "read.json");
        let (_, bytes) = read_unwatched(&read).expect("read");
        assert_eq!(bytes, b"{\"loss\": 0.25}\n");
        assert_eq!(accessed(&read), 1_000_000, "reading marked the copy read");
    }

    fn remote(size: u64, mtime: i64) -> RemoteFile {
        RemoteFile {
            path: "/w/a.pt".into(),
            size,
            mtime,
            stamp: format!("{mtime}.0 {mtime}.0 7"),
            root: 0,
            mode: 0o644,
        }
    }

    /// A part an older rigwatch left (its tag in a `.src` beside it) still resumes; a part
    /// tagged on itself is read from there, and a new tag replaces what the file carried.
    #[test]
    fn a_parts_tag_is_read_from_the_part_or_from_an_older_src() {
        let dir = tempfile::tempdir().expect("tmp");
        let (part, src) = (dir.path().join("k.part"), dir.path().join("k.src"));
        std::fs::write(&part, b"half").expect("part");
        std::fs::write(&src, "10 5.0 5.0 7").expect("src");
        assert_eq!(part_source(&part, &src).as_deref(), Some("10 5.0 5.0 7"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&part)
            .expect("open");
        tag_part(&file, &src, &remote(20, 9)).expect("tag");
        assert_eq!(part_source(&part, &src).as_deref(), Some("20 9.0 9.0 7"));
        if xattr::get(&part, SOURCE_XATTR).ok().flatten().is_none() {
            // A filesystem without user xattrs here: the tag went to the `.src`.
            assert_eq!(
                std::fs::read_to_string(&src).ok().as_deref(),
                Some("20 9.0 9.0 7")
            );
            return;
        }
        untag_part(&part);
        assert_eq!(
            part_source(&part, &src).as_deref(),
            Some("10 5.0 5.0 7"),
            "untagged, only the old .src is left"
        );
    }

    #[test]
    fn parts_are_looked_for_only_where_the_parts_folder_holds_some() {
        let home = tempfile::tempdir().expect("tmp");
        let dest = home.path().join("box");
        assert!(!parts_held(&dest), "no parts folder");
        std::fs::create_dir_all(parts_dir(&dest)).expect("parts");
        assert!(!parts_held(&dest), "an empty one");
        std::fs::write(part_paths(&dest, &dest.join("a.pt")).0, b"half").expect("part");
        assert!(parts_held(&dest));
    }

    #[test]
    fn folders_keep_their_name_globs_do_not() {
        let dest = Path::new("/r");
        assert_eq!(
            local_path(dest, "/w/run/ckpts", None, "/w/run/ckpts/a/b.pt"),
            Some(PathBuf::from("/r/ckpts/a/b.pt"))
        );
        assert_eq!(
            local_path(dest, "/w/run/*.pt", None, "/w/run/x.pt"),
            Some(PathBuf::from("/r/x.pt"))
        );
        assert_eq!(
            local_path(dest, "/w/m.json", None, "/w/m.json"),
            Some(PathBuf::from("/r/m.json"))
        );
        assert_eq!(
            local_path(dest, "~/out", Some("/root"), "/root/out/z"),
            Some(PathBuf::from("/r/out/z"))
        );
        // An escaped `[` is part of the folder's name: it keeps its name under dest.
        assert_eq!(
            local_path(dest, "/w/exp\\[lr=0.1]", None, "/w/exp[lr=0.1]/m.pt"),
            Some(PathBuf::from("/r/exp[lr=0.1]/m.pt"))
        );
    }

    #[test]
    fn names_that_are_not_utf8_land_as_their_bytes_and_parts_live_outside_dest() {
        use std::os::unix::ffi::OsStrExt;
        let dest = Path::new("/r/box");
        let local = local_path(dest, "/w", None, "/w/caf\\xe9.pt").expect("inside");
        assert_eq!(local.as_os_str().as_bytes(), b"/r/box/w/caf\xe9.pt");
        let (part, src) = part_paths(dest, &local);
        assert!(
            !part.starts_with(dest) && !src.starts_with(dest),
            "{part:?}"
        );
        assert_eq!(part.parent(), Some(Path::new("/r/.box.rigwatch-parts")));
        // A remote file named like rigwatch's temporary files is just another file.
        let named_part = local_path(dest, "/w", None, "/w/a.pt.part").expect("inside");
        assert_ne!(part_paths(dest, &named_part).0, named_part);
    }

    #[test]
    fn paths_that_escape_dest_are_refused() {
        let dest = Path::new("/r");
        assert_eq!(
            local_path(dest, "/w/ckpts", None, "/w/ckpts/../../etc/x"),
            None
        );
        assert_eq!(local_path(dest, "/w/ckpts", None, "/elsewhere/x"), None);
        assert_eq!(local_path(dest, "/w/ckpts", None, "/wx"), None);
    }

    #[test]
    fn unchanged_needs_record_size_mtime_and_hash() {
        let good = LocalState {
            final_size: Some(10),
            recorded: Some((10, "5.0 5.0 7".into(), "h".into())),
            final_hash: Some("h".into()),
            ..LocalState::default()
        };
        assert_eq!(decide(&remote(10, 5), &good), Start::Unchanged);
        assert_eq!(decide(&remote(10, 6), &good), Start::Fresh);
        let corrupted = LocalState {
            final_hash: Some("other".into()),
            ..good
        };
        assert_eq!(decide(&remote(10, 5), &corrupted), Start::Fresh);
    }

    #[test]
    fn new_only_where_nothing_is_at_its_name_nor_in_its_part() {
        assert_eq!(decide(&remote(10, 5), &LocalState::default()), Start::New);
        let there = LocalState {
            final_size: Some(3),
            ..LocalState::default()
        };
        assert_eq!(decide(&remote(10, 5), &there), Start::Fresh);
        let stale_part = LocalState {
            part_size: Some(3),
            ..LocalState::default()
        };
        assert_eq!(decide(&remote(10, 5), &stale_part), Start::Fresh);
    }

    #[test]
    fn resume_only_into_the_same_remote_version() {
        let part = LocalState {
            part_size: Some(4),
            part_source: Some("10 5.0 5.0 7".into()),
            ..LocalState::default()
        };
        assert_eq!(decide(&remote(10, 5), &part), Start::Resume(4));
        assert_eq!(decide(&remote(12, 7), &part), Start::Fresh);
        let too_long = LocalState {
            part_size: Some(11),
            ..part
        };
        assert_eq!(decide(&remote(10, 5), &too_long), Start::Fresh);
    }

    #[test]
    fn sha256_of_a_known_string() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("abc");
        std::fs::write(&p, b"abc").expect("write");
        assert_eq!(
            sha256_file(&p).expect("hash"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
