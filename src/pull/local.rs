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
#[path = "local_tests.rs"]
mod tests;
