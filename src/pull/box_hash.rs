//! SHA-256 of pulled files on the box, with whichever tool it has, as NUL-terminated
//! `hash  name` records whatever the names' bytes: the commands, their parser, and the runs of
//! them a chunk asks for (with the second look at unchanged files in the same command).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::names::{self, escape};
use super::remote::{RemoteFile, TIMEOUT_PREAMBLE};
use super::restat::{Seen, hash_then_look_again, parse_restat, split_second_look};
use crate::transport::{BoxExec, ExecLimits};

/// Files per hashing command: big ones few enough that a command ends well within its
/// timeout; small ones (under 1 MiB each) as many as its text allows, since on a re-pull of
/// many small files each command's process starts were most of the box's time.
const HASH_BATCH_BIG: usize = 200;
const HASH_BATCH: usize = 4096;
/// A hashing command's own text around its files' words (the tools' choice, timeouts, the
/// second look), with room to spare.
const HASH_TEXT: usize = 4 * 1024;
const HASH_BATCHES_AT_ONCE: usize = 4;
/// Files at least this big are hashed one process each, by the box's fastest tool, as many at
/// once as the box has cores: a pull's commands share one shell (`OneShell`), so batches no
/// longer run side by side, and a sha256sum batch would hash a results folder of 10 MiB files on
/// one core. Smaller ones go by tar, and are hashed here as they arrive.
const BIG_HASH: u64 = super::batch::SMALL;

/// How long one hashing batch may run on the box before it is killed (a hung mount).
pub const HASH_TIMEOUT_SECS: u64 = 3500;

/// Hashes the given files with whichever SHA-256 tool the box has, NUL-terminated `hash  name`
/// records whatever the names' bytes; prints `@nohash` if it has none.
pub fn hash_command(paths: &[&str]) -> String {
    format!("{}{}", names::as_args(paths), hash_args())
}

/// `hash_command`'s script, over the files already set as its arguments (`names::as_args`).
pub(super) fn hash_args() -> String {
    format!("{TIMEOUT_PREAMBLE}T=${{T:+$T {HASH_TIMEOUT_SECS}}}\n{COREUTILS_HASH}")
}

/// SHA-256 of the empty input as `openssl dgst -sha256 -r` prints it: a box whose openssl
/// answers this is trusted to hash the rest.
const OPENSSL_EMPTY: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 *stdin";

/// As `hash_command`, for files big enough that a process each costs nothing beside their
/// bytes: `openssl dgst` per file where the box's openssl answers right, which uses the CPU's
/// SHA instructions (here 0.65 s per GiB against sha256sum's 2.1 s; on a fast link the box's
/// hash, not the copy, was the slower), as many at once as the box has cores (each record is
/// one small write, so they never interleave), else the tools `hash_command` uses.
pub fn big_file_hash_command(paths: &[&str]) -> String {
    format!("{}{}", names::as_args(paths), big_file_hash_args())
}

/// `big_file_hash_command`'s script, over the files set as its arguments.
fn big_file_hash_args() -> String {
    format!(
        "{TIMEOUT_PREAMBLE}T=${{T:+$T {HASH_TIMEOUT_SECS}}}\n\
         if [ \"$(openssl dgst -sha256 -r </dev/null 2>/dev/null)\" = '{OPENSSL_EMPTY}' ]; \
         then printf '%s\\0' \"$@\" | $T xargs -0 -n 1 -P \"$(nproc 2>/dev/null || echo 2)\" \
         sh -c 'h=$(openssl dgst -sha256 -r < \"$1\") && printf \"%s  %s\\0\" \"${{h%% *}}\" \"$1\"' sh; \
         else {COREUTILS_HASH}; fi"
    )
}

/// `sha256sum -z` over every argument at once, else `shasum` per file, else `@nohash`.
const COREUTILS_HASH: &str = "if command -v sha256sum >/dev/null 2>&1 && sha256sum -z </dev/null >/dev/null 2>&1; \
     then $T sha256sum -z -- \"$@\"; \
     elif command -v shasum >/dev/null 2>&1; then for f in \"$@\"; do \
     h=$($T shasum -a 256 < \"$f\") && printf '%s  %s\\0' \"${h%% *}\" \"$f\"; done; \
     else echo '@nohash'; exit 3; fi";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashOutput {
    /// Escaped remote path → lowercase hex SHA-256.
    Hashes(BTreeMap<String, String>),
    /// The box has neither sha256sum nor shasum.
    NoTool,
}

pub fn parse_hashes(out: &[u8]) -> HashOutput {
    if out.starts_with(b"@nohash") {
        return HashOutput::NoTool;
    }
    let mut map = BTreeMap::new();
    for record in out.split(|b| *b == 0) {
        let (Some(hash), Some(name)) = (record.get(..64), record.get(66..)) else {
            continue;
        };
        let sep = &record[64..66];
        if (sep == b"  " || sep == b" *") && hash.iter().all(u8::is_ascii_hexdigit) {
            map.insert(
                escape(name),
                String::from_utf8_lossy(hash).to_ascii_lowercase(),
            );
        }
    }
    HashOutput::Hashes(map)
}

/// SHA-256 of each file as the box sees it; an empty map when the box has no hashing tool or the
/// link failed (each file then fails with that reason).
pub(super) async fn remote_hashes<B: BoxExec>(
    session: &B,
    files: impl Iterator<Item = &RemoteFile>,
) -> Result<BTreeMap<String, String>, String> {
    hash_on_box(session, files, false)
        .await
        .map(|(hashes, _)| hashes)
}

/// The box's second look at files hashed with it (`hashes_then_looks`), by path: each file of a
/// command whose answer came whole, with its size and stamp now, or None where the box no
/// longer has it as a regular file.
pub(super) type Looked = HashMap<String, Option<(u64, String)>>;

/// As `remote_hashes`, each command then looking at its files again (`restat`) for files
/// nothing is copied of: their hashes and second look in one command, not two. Files whose
/// look did not come whole (a cut answer) are not in `Looked`: the chunk asks for them again.
pub(super) async fn hashes_then_looks<B: BoxExec>(
    session: &B,
    files: impl Iterator<Item = &RemoteFile>,
) -> Result<(BTreeMap<String, String>, Looked), String> {
    hash_on_box(session, files, true).await
}

/// The commands that hash `big` and `rest` (and look at them again), each with the files it
/// names, in batches bounded in size as well as count.
fn hash_commands<'a, 'f>(
    big: &'a [&'f RemoteFile],
    rest: &'a [&'f RemoteFile],
    look_again: bool,
) -> Vec<(String, &'a [&'f RemoteFile])> {
    fn path<'x>(f: &'x &RemoteFile) -> &'x str {
        &f.path
    }
    fn paths_of<'a>(b: &[&'a RemoteFile]) -> Vec<&'a str> {
        b.iter().map(|f| f.path.as_str()).collect()
    }
    // Each name is written once, as the command's arguments, however many tools read it.
    let bounds = |files| names::Bounds {
        files,
        bytes: u64::MAX,
        text: names::COMMAND_BYTES - HASH_TEXT,
    };
    let big = names::arg_batches(big, path, |_| 0, bounds(HASH_BATCH_BIG))
        .into_iter()
        .map(|b| (big_file_hash_args(), b));
    let rest = names::arg_batches(rest, path, |_| 0, bounds(HASH_BATCH))
        .into_iter()
        .map(|b| (hash_args(), b));
    big.chain(rest)
        .map(|(hashing, b)| {
            let script = match look_again {
                true => hash_then_look_again(&hashing),
                false => hashing,
            };
            (format!("{}{script}", names::as_args(&paths_of(b))), b)
        })
        .collect()
}

async fn hash_on_box<B: BoxExec>(
    session: &B,
    files: impl Iterator<Item = &RemoteFile>,
    look_again: bool,
) -> Result<(BTreeMap<String, String>, Looked), String> {
    let (big, rest): (Vec<&RemoteFile>, Vec<&RemoteFile>) = files.partition(|f| f.size >= BIG_HASH);
    let commands = hash_commands(&big, &rest, look_again);
    let limits = ExecLimits {
        timeout: Duration::from_secs(3600),
        max_output: 4 * 1024 * 1024,
    };
    // Batches run side by side (the big files' batch hashes across the box's cores itself).
    let began = Instant::now();
    let mut outs = Vec::with_capacity(commands.len());
    for side_by_side in commands.chunks(HASH_BATCHES_AT_ONCE) {
        let each = side_by_side.iter().map(|(c, _)| session.exec(c, limits));
        outs.extend(futures::future::join_all(each).await);
    }
    tracing::debug!(
        commands = commands.len(),
        look_again,
        ms = began.elapsed().as_millis() as u64,
        "pull: hashed on the box"
    );
    let (mut all, mut looked) = (BTreeMap::new(), Looked::new());
    for (out, (_, files)) in outs.into_iter().zip(&commands) {
        let out = out.map_err(|e| format!("hashing on the box: {e}"))?;
        let whole = !out.truncated && out.exit_status.is_some();
        let (hashed, second) = match look_again {
            true => split_second_look(&out.stdout),
            false => (&out.stdout[..], None),
        };
        match parse_hashes(hashed) {
            HashOutput::NoTool => {
                return Err("the box has neither sha256sum nor shasum".to_string());
            }
            HashOutput::Hashes(h) => all.extend(h),
        }
        if let (Some(second), true) = (second, whole) {
            let mut seen = Seen::new();
            parse_restat(second, &mut seen);
            looked.extend(files.iter().map(|f| (f.path.clone(), seen.remove(&f.path))));
        }
    }
    Ok((all, looked))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: String, size: u64) -> RemoteFile {
        RemoteFile {
            path,
            size,
            ..RemoteFile::default()
        }
    }

    /// A hash list's names are bare words, written once each: counted as if each carried a
    /// readlink line (64 bytes a use) and capped at 200, a re-pull's chunk of 2 185 results
    /// files took 13 commands, each a few process starts on the box; written three times (two
    /// hashing tools and the second look), 7; counted whole, each with its folder, and capped
    /// at 1 024, a chunk of 3 800 took 4. Counted as the command writes them (their shared
    /// folder once), 2: each command was ~10 ms of the box's CPU in process starts.
    #[test]
    fn a_hash_command_holds_as_many_names_as_its_text_allows() {
        let files: Vec<RemoteFile> = (0..3800)
            .map(|i| {
                file(
                    format!(
                        "/tmp/.tmpAbCdEf/run/many-100000/cells/d{:03}/m{i:06}.json",
                        i / 1000
                    ),
                    40,
                )
            })
            .collect();
        let rest: Vec<&RemoteFile> = files.iter().collect();
        let commands = hash_commands(&[], &rest, true);
        assert!(commands.len() <= 2, "{} commands", commands.len());
        assert_eq!(commands.iter().map(|(_, b)| b.len()).sum::<usize>(), 3800);
    }

    /// Whatever the names (quotes, bytes that are not UTF-8, each rebuilt by both scripts of a
    /// hash-then-look command), no command passes what Linux lets one argument hold.
    #[test]
    fn no_hash_command_passes_what_a_box_can_start() {
        let files: Vec<RemoteFile> = (0..3000)
            .map(|i| match i % 3 {
                0 => format!("/w/{}\\xff{i}", "n".repeat(200)),
                1 => format!("/w/it's {}{i}", "q'".repeat(100)),
                _ => format!("/w/{}{i}", "p".repeat(300)),
            })
            .enumerate()
            .map(|(i, p)| file(p, if i % 2 == 0 { 40 } else { 2 << 20 }))
            .collect();
        let (big, rest): (Vec<&RemoteFile>, Vec<&RemoteFile>) =
            files.iter().partition(|f| f.size >= BIG_HASH);
        for look_again in [false, true] {
            let commands = hash_commands(&big, &rest, look_again);
            assert_eq!(commands.iter().map(|(_, b)| b.len()).sum::<usize>(), 3000);
            for (command, _) in &commands {
                assert!(command.len() <= 128 * 1024, "{} bytes", command.len());
            }
        }
    }

    /// Names that share a long folder write short words, but each reaches the tools whole: a
    /// command is also cut where its names, as `sha256sum` and `find` get them, would pass what
    /// a box lets a command's arguments take.
    #[test]
    fn no_hash_command_hands_its_tools_more_than_a_box_takes() {
        let folder = format!("/w/{}", "f".repeat(3000));
        let files: Vec<RemoteFile> = (0..2000)
            .map(|i| file(format!("{folder}/{i}"), 40))
            .collect();
        let rest: Vec<&RemoteFile> = files.iter().collect();
        let commands = hash_commands(&[], &rest, true);
        assert_eq!(commands.iter().map(|(_, b)| b.len()).sum::<usize>(), 2000);
        for (command, b) in &commands {
            assert!(
                command.len() <= names::COMMAND_BYTES,
                "{} bytes",
                command.len()
            );
            let args: usize = b.iter().map(|f| f.path.len() + 1).sum();
            assert!(args <= names::ARGS_BYTES, "{args} bytes of arguments");
        }
    }
}
