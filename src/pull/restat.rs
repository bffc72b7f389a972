//! The second look at a chunk's files after they were copied: each file's size and change stamp
//! as the box has them now, asked of those files alone (`find -H FILE... -maxdepth 0`, the same
//! fields the listing printed), not by listing every pull path again: a 100 000-file pull kept
//! a second whole listing in memory to the end, and walked every folder twice.

use std::collections::HashMap;
use std::time::Duration;

use super::names::{Bounds, COMMAND_BYTES, arg_batches, as_args, escape};
use super::remote::{FIND_TIMEOUT_SECS, RemoteFile, TIMEOUT_PREAMBLE};
use crate::transport::{BoxExec, ExecLimits};

/// What the box says of each file now, by path: size and stamp (`mtime ctime inode`).
pub(super) type Seen = HashMap<String, (u64, String)>;

/// Names per command: each record is a few dozen bytes and a name.
const PER_COMMAND: usize = 2048;

/// One command per batch: a file the box no longer has (or that is no longer a regular file)
/// prints nothing, which the finish reads as vanished or changed.
pub(super) fn restat_command(paths: &[&str]) -> String {
    format!("{}{}", as_args(paths), restat_args())
}

/// `restat_command`'s script, over the files set as its arguments (`names::as_args`). Every
/// argument is a path from the root, so `find` never takes one for an option.
pub(super) fn restat_args() -> String {
    format!(
        "{TIMEOUT_PREAMBLE}{}",
        restat_with(&format!("${{T:+$T {FIND_TIMEOUT_SECS}}} "))
    )
}

/// `restat_args` without a `timeout` of its own, for a command that another clock bounds (a tar
/// batch's: `batch::batch_command`).
pub(super) fn restat_args_unclocked() -> String {
    restat_with("")
}

/// The second look, `find` run behind `clock` (a `timeout` and its limit, or nothing).
fn restat_with(clock: &str) -> String {
    format!(
        "LC_ALL=C; export LC_ALL\n{clock}find -H \"$@\" \
         -maxdepth 0 -type f -printf '%s\\0%T@\\0%C@\\0%i\\0%p\\0' 2>/dev/null; :"
    )
}

/// The record a command prints between what it did first (hashing) and its second look.
pub(super) const SECOND_LOOK: &str = "@restat";

/// `out` split at its `SECOND_LOOK` record: what came before, and the second look where the
/// box's answer got that far.
pub(super) fn split_second_look(out: &[u8]) -> (&[u8], Option<&[u8]>) {
    let marker = [SECOND_LOOK.as_bytes(), b"\0"].concat();
    let mut at = 0;
    for record in out.split_inclusive(|b| *b == 0) {
        at += record.len();
        if record == marker.as_slice() {
            return (&out[..at - marker.len()], Some(&out[at..]));
        }
    }
    (out, None)
}

/// `hashing`, then the second look at the same files (the command's arguments) in the same
/// command: for files nothing is copied of (unchanged since the last pull) the look may follow
/// their hash at once, and a chunk of them then asks the box once, not twice (on a 100 000-file
/// re-pull the separate look was a fifth of each chunk's time).
pub(super) fn hash_then_look_again(hashing: &str) -> String {
    format!(
        "( {hashing}\n); printf '{SECOND_LOOK}\\0'; ( {}\n)",
        restat_args()
    )
}

/// Reads `restat_command`'s records; a cut record ends the reading.
pub(super) fn parse_restat(out: &[u8], seen: &mut Seen) {
    let mut fields = out.split(|b| *b == 0);
    loop {
        let (Some(size), Some(mtime), Some(ctime), Some(inode), Some(path)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return;
        };
        let Some(size) = std::str::from_utf8(size).ok().and_then(|s| s.parse().ok()) else {
            return;
        };
        let stamp = format!(
            "{} {} {}",
            String::from_utf8_lossy(mtime),
            String::from_utf8_lossy(ctime),
            String::from_utf8_lossy(inode)
        );
        seen.insert(escape(path), (size, stamp));
    }
}

/// Each file's size and stamp now, or why the box could not say.
pub(super) async fn restat<B: BoxExec>(session: &B, files: &[&RemoteFile]) -> Result<Seen, String> {
    let limits = ExecLimits {
        timeout: Duration::from_secs(FIND_TIMEOUT_SECS + 10),
        max_output: 8 * 1024 * 1024,
    };
    let mut seen = Seen::with_capacity(files.len());
    let bounds = Bounds {
        files: PER_COMMAND,
        bytes: u64::MAX,
        text: COMMAND_BYTES - 1024,
    };
    for batch in arg_batches(files, |f| f.path.as_str(), |_| 0, bounds) {
        let paths: Vec<&str> = batch.iter().map(|f| f.path.as_str()).collect();
        let out = session
            .exec(&restat_command(&paths), limits)
            .await
            .map_err(|e| format!("could not list the box again after copying: {e}"))?;
        if out.truncated || out.exit_status.is_none() {
            return Err("could not list the box again after copying: its answer was cut".into());
        }
        parse_restat(&out.stdout, &mut seen);
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pull::remote::{HashOutput, parse_hashes};

    /// Run by a local `sh` over real files, as a box runs it: every file's hash, then the look
    /// at each file it still has, split apart whatever the names' bytes.
    #[test]
    fn a_hash_then_its_second_look_come_apart_for_every_name() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().expect("dir");
        let plain = dir.path().join("a b.json");
        let odd = dir
            .path()
            .join(std::ffi::OsStr::from_bytes(b"caf\xe9 '$(x)'"));
        std::fs::write(&plain, "{}").expect("plain");
        std::fs::write(&odd, "[1]").expect("odd");
        let gone = dir.path().join("gone.json");
        let paths: Vec<String> = [&plain, &odd, &gone]
            .iter()
            .map(|p| escape(p.as_os_str().as_bytes()))
            .collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let command = format!(
            "{}{}",
            crate::pull::names::as_args(&paths),
            hash_then_look_again(&crate::pull::box_hash::hash_args())
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .output()
            .expect("sh");
        let (hashed, second) = split_second_look(&out.stdout);
        let HashOutput::Hashes(hashes) = parse_hashes(hashed) else {
            panic!("no hashing tool")
        };
        // sha256("{}") and sha256("[1]").
        assert_eq!(
            hashes[paths[0]],
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(
            hashes[paths[1]],
            "080a9ed428559ef602668b4c00f114f1a11c3f6b02a435f0bdc154578e4d7f22"
        );
        assert_eq!(hashes.len(), 2, "{hashes:?}");
        let mut seen = Seen::new();
        parse_restat(second.expect("the second look came"), &mut seen);
        assert_eq!(seen[paths[0]].0, 2);
        assert_eq!(seen[paths[1]].0, 3);
        assert!(!seen.contains_key(paths[2]), "{seen:?}");
    }

    #[test]
    fn an_answer_cut_before_its_second_look_has_none() {
        let (hashed, second) = split_second_look(b"h  /w/a\0@rest");
        assert_eq!(hashed, b"h  /w/a\0@rest");
        assert_eq!(second, None);
        let (hashed, second) = split_second_look(b"h  /w/a\0@restat\x002\0");
        assert_eq!((hashed, second), (&b"h  /w/a\0"[..], Some(&b"2\0"[..])));
    }

    #[test]
    fn records_are_read_by_path_and_a_cut_one_is_dropped() {
        let out = b"12\x001.5\x002.5\x0077\x00/w/a b.pt\x00\
                    3\x001.0\x002.0\x0078\x00/w/caf\xe9\x00\
                    9\x001.0\x00";
        let mut seen = Seen::new();
        parse_restat(out, &mut seen);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen["/w/a b.pt"], (12, "1.5 2.5 77".to_string()));
        assert_eq!(seen[&escape(b"/w/caf\xe9")].0, 3);
    }
}
