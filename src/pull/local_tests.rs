//! Tests of `local`, beside it so the module reads in one sitting.

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
