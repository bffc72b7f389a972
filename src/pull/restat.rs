//! The second look at a chunk's files after they were copied: each file's size and change stamp
//! as the box has them now, asked of those files alone (`find -H FILE... -maxdepth 0`, the same
//! fields the listing printed), not by listing every pull path again: a 100 000-file pull kept
//! a second whole listing in memory to the end, and walked every folder twice.

use std::collections::HashMap;
use std::time::Duration;

use super::names::{Words, batches, escape};
use super::remote::{FIND_TIMEOUT_SECS, RemoteFile, TIMEOUT_PREAMBLE};
use crate::transport::{BoxExec, ExecLimits};

/// What the box says of each file now, by path: size and stamp (`mtime ctime inode`).
pub(super) type Seen = HashMap<String, (u64, String)>;

/// Names per command: each record is a few dozen bytes and a name.
const PER_COMMAND: usize = 2048;

/// One command per batch: a file the box no longer has (or that is no longer a regular file)
/// prints nothing, which the finish reads as vanished or changed.
pub(super) fn restat_command(paths: &[&str]) -> String {
    let mut words = Words::default();
    let quoted: Vec<String> = paths.iter().map(|p| words.word(p)).collect();
    format!(
        "LC_ALL=C; export LC_ALL\n{TIMEOUT_PREAMBLE}{}${{T:+$T {FIND_TIMEOUT_SECS}}} find -H {} \
         -maxdepth 0 -type f -printf '%s\\0%T@\\0%C@\\0%i\\0%p\\0' 2>/dev/null; :",
        words.preamble(),
        quoted.join(" ")
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
    for batch in batches(files, |f| f.path.as_str(), PER_COMMAND, 1) {
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
