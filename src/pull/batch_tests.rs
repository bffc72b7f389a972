//! Tests of `batch`, beside it so the module reads in one sitting.

use super::*;
use std::io::Read;

/// A link across the internet: tiny files' batches travel gzipped over it.
const FAR: Option<Duration> = Some(Duration::from_millis(30));

/// `small` in batches as a pull with room to spare makes them, one after another.
fn split(plan: &[(RemoteFile, PathBuf)], small: &[usize]) -> Vec<Vec<usize>> {
    let mut rest = small;
    let mut batches = Vec::new();
    while !rest.is_empty() {
        let batch = next_batch(plan, rest, BATCH_BYTES);
        rest = &rest[batch.len()..];
        batches.push(batch.to_vec());
    }
    batches
}

fn file(path: &str, size: u64) -> (RemoteFile, PathBuf) {
    let f = RemoteFile {
        path: path.to_string(),
        size,
        ..RemoteFile::default()
    };
    (f, PathBuf::from("/local").join(&path[1..]))
}

#[test]
fn only_fresh_small_rooted_files_go_by_tar_and_batches_stay_bounded() {
    let (small, _) = file("/w/a.json", 4096);
    assert!(eligible(&small, Start::Fresh));
    assert!(!eligible(&small, Start::Resume(10)));
    assert!(!eligible(&small, Start::Unchanged));
    assert!(!eligible(&file("/w/big.pt", SMALL + 1).0, Start::Fresh));
    assert!(!eligible(&file("~/x", 1).0, Start::Fresh));
    let plan: Vec<_> = (0..600)
        .map(|i| file(&format!("/w/e{i}.json"), 100_000))
        .collect();
    let all: Vec<usize> = (0..plan.len()).collect();
    let batches = split(&plan, &all);
    assert!(
        batches
            .iter()
            .all(|b| !b.is_empty() && b.len() <= BATCH_FILES)
    );
    assert!(
        batches
            .iter()
            .all(|b| b.len() as u64 * 100_000 <= BATCH_BYTES)
    );
    assert_eq!(batches.concat(), all, "every file once, in order");
}

/// A batch's command is as long as its words, each written once (a name that is not UTF-8
/// is rebuilt by a printf line). Each name was once counted at four bytes a byte of its
/// escaped text: a name of quotes is four times longer quoted, so 256 of them made a
/// command past what the box can start (Linux caps one argument at 128 KiB; a batch past it
/// goes file by file).
#[test]
fn a_batch_s_command_is_as_long_as_its_words_and_the_box_can_start_it() {
    let names = |tail: &dyn Fn(&mut Vec<u8>)| -> Vec<(RemoteFile, PathBuf)> {
        (0..256)
            .map(|i| {
                let mut name = format!("/w/{i:03}-").into_bytes();
                tail(&mut name);
                file(&crate::pull::names::escape(&name), 10)
            })
            .collect()
    };
    let quotes = names(&|n| n.extend(std::iter::repeat_n(b'\'', 100)));
    let odd = names(&|n| n.extend(std::iter::repeat_n(0xff_u8, 200)));
    let plain = names(&|n| n.extend(std::iter::repeat_n(b'a', 40)));
    let all: Vec<usize> = (0..256).collect();
    for plan in [&quotes, &odd, &plain] {
        for batch in split(plan, &all) {
            let command = batch_command(plan, &batch, FAR);
            assert!(command.len() <= BATCH_COMMAND, "{} bytes", command.len());
        }
    }
    assert_eq!(
        split(&plain, &all).len(),
        1,
        "256 short plain names are one batch"
    );
}

/// A batch's paths mostly share a long folder, written once (each name is `"$rw_p"` and
/// what follows the folder): written out in every name, a batch held ~650 of these 92-byte
/// paths, and each batch's process starts and sync were a third of what the box spent on a
/// 100 000-file pull. The names as the tools get them still fit any box's exec.
#[test]
fn a_batch_writes_its_shared_folder_once_and_holds_two_thousand_long_paths() {
    let under = "/home/user/experiments/2026-11-29/run-lr3e-4-seed17/results/cells";
    let plan: Vec<_> = (0..4096)
        .map(|i| {
            file(
                &format!("{under}/cell-{:04}/eval-{i:05}.json", i / 1000),
                40,
            )
        })
        .collect();
    let all: Vec<usize> = (0..plan.len()).collect();
    let batches = split(&plan, &all);
    let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    assert_eq!(sizes, [2048, 2048]);
    for batch in &batches {
        let command = batch_command(&plan, batch, FAR);
        assert!(command.len() <= BATCH_COMMAND, "{} bytes", command.len());
    }
    // Long names: the tools' arguments, not the command's text, bound the batch.
    let long: Vec<_> = (0..2048)
        .map(|i| file(&format!("{under}/{}/e{i:05}.json", "d".repeat(200)), 40))
        .collect();
    for batch in split(&long, &all[..2048]) {
        let args: usize = batch.iter().map(|&i| long[i].0.path.len() + 9).sum();
        assert!(
            args <= super::super::names::ARGS_BYTES,
            "{args} bytes of arguments"
        );
        assert!(batch_command(&long, &batch, FAR).len() <= BATCH_COMMAND);
    }
}

/// A batch starts no `timeout` of its own (two a batch took the box 7 ms of CPU): its clock
/// is this side's, as tar's always was. Nor does it hash its files on the box: the hash of the
/// bytes received stands for the box's (DESIGN.md rule 4).
#[test]
fn a_batch_starts_no_timeout_and_no_hashing_of_its_own() {
    let plan: Vec<_> = (0..3).map(|i| file(&format!("/w/e{i}.json"), 40)).collect();
    let command = batch_command(&plan, &[0, 1, 2], FAR);
    assert!(!command.contains("timeout"), "{command}");
    for tool in ["sha256sum", "openssl", "shasum"] {
        assert!(!command.contains(tool), "{command}");
    }
    assert!(command.contains("tar -cf") && command.contains("find -H"));
}

/// Each file is named once in its batch's command, however many tools read it: named four
/// times, a batch of the bench's 60-byte paths held ~230 files, and each batch's process
/// starts were most of what the box spent on a 100 000-file pull.
#[test]
fn a_batch_names_each_file_once_and_holds_a_thousand_plain_paths() {
    let plan: Vec<_> = (0..1000)
        .map(|i| {
            file(
                &format!("/tmp/.tmpAbCdEf/run/many-100000/cell-0000/f-{i:05}.json"),
                40,
            )
        })
        .collect();
    let all: Vec<usize> = (0..plan.len()).collect();
    let batches = split(&plan, &all);
    assert_eq!(batches.len(), 1, "{} batches", batches.len());
    let command = batch_command(&plan, &batches[0], FAR);
    assert_eq!(
        command.matches("/cell-0000/").count(),
        1,
        "the shared folder once"
    );
    for (remote, _) in &plan {
        let name = remote.path.rsplit('/').next().unwrap_or_default();
        let named = command.matches(&format!("'{name}'")).count();
        assert_eq!(named, 1, "{} named {named} times", remote.path);
    }
}

/// A batch's command run by a real `sh`, GNU tar, sha256sum and find, over names a shell
/// or tar could mistake: each file comes out of the stream under the name `unpack` looks it
/// up by, with its box hash and its second look.
#[test]
fn a_batch_run_by_sh_carries_every_name_with_its_hash_and_its_look() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tempfile::tempdir().expect("dir");
    let names: [&[u8]; 9] = [
        b"plain.json",
        b"it's.json",
        b"a b  c.json",
        b"line\nbreak",
        b"caf\xe9.json",
        b"-rf",
        b"$(touch pwned)",
        b"back\\slash\\x41",
        b"--",
    ];
    let plan: Vec<(RemoteFile, PathBuf)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let path = dir.path().join(std::ffi::OsStr::from_bytes(name));
            std::fs::write(&path, format!("{{\"n\": {i}}}")).expect("write");
            let escaped = crate::pull::names::escape(path.as_os_str().as_bytes());
            file(&escaped, std::fs::metadata(&path).expect("meta").len())
        })
        .collect();
    let all: Vec<usize> = (0..plan.len()).collect();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(batch_command(&plan, &all, FAR))
        .current_dir(dir.path())
        .output()
        .expect("sh");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !dir.path().join("pwned").exists(),
        "a name ran as a command"
    );
    let stream = tar_stream::unpacked(out.stdout, 1 << 20).expect("the stream");
    let mut archive = tar::Archive::new(&stream[..]);
    let carried: HashMap<Vec<u8>, Vec<u8>> = archive
        .entries()
        .expect("tar")
        .map(|e| {
            let mut e = e.expect("entry");
            let mut body = Vec::new();
            e.read_to_end(&mut body).expect("body");
            (e.path_bytes().into_owned(), body)
        })
        .collect();
    let seen = second_look(&out.stderr);
    for (i, (remote, _)) in plan.iter().enumerate() {
        let key = unescape(&remote.path)[1..].to_vec();
        let body = carried
            .get(&key)
            .unwrap_or_else(|| panic!("{} not carried", remote.path));
        assert_eq!(body, format!("{{\"n\": {i}}}").as_bytes());
        assert_eq!(seen.get(&remote.path).map(|s| s.0), Some(remote.size));
    }
    assert_eq!((carried.len(), seen.len()), (9, 9));
}

/// A batch run by a real `sh`: the file that may take its name (nothing there, only the
/// built-in check) and that the box saw as listed is linked there by its batch once durable,
/// no `.part` made; one that may not, and one the box saw changed, wait in their parts.
#[test]
fn a_proven_file_takes_its_name_from_its_batch_and_no_part_is_made() {
    let dir = tempfile::tempdir().expect("dir");
    let mut plan: Vec<(RemoteFile, PathBuf)> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            let path = dir.path().join(format!("box/{name}.json"));
            std::fs::create_dir_all(path.parent().expect("folder")).expect("folder");
            std::fs::write(&path, format!("{{\"{name}\": 1}}")).expect("write");
            let (file, _) = file(path.to_str().expect("utf-8"), 8);
            (file, dir.path().join(format!("home/run/{name}.json")))
        })
        .collect();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(batch_command(&plan, &[0, 1, 2], FAR))
        .output()
        .expect("sh");
    let seen = second_look(&out.stderr);
    // Listed as the second look saw them, but c: it changed between the two.
    for (file, _) in &mut plan {
        file.stamp = seen[&file.path].1.clone();
    }
    plan[2].0.stamp = "1.0 1.0 1".to_string();
    let jobs = plan
        .iter()
        .enumerate()
        .map(|(i, (file, local))| Job {
            i,
            file: file.clone(),
            local: local.clone(),
            placeable: i != 1,
        })
        .collect();
    let dest = dir.path().join("home");
    let stream = tar_stream::unpacked(out.stdout, 1 << 20).expect("the stream");
    let mut landed = unpack(&stream, &seen, &dest, jobs);
    let locals: Vec<PathBuf> = plan.iter().map(|(_, l)| l.clone()).collect();
    make_durable(&dest, &locals, &mut landed, 3);
    let copied = |k: usize| match &landed[k].1 {
        Some(Ok(c)) => c,
        Some(Err(e)) => panic!("{k}: {e:?}"),
        None => panic!("{k} handed back"),
    };
    let proven = copied(0).unnamed.as_ref().expect("a is proven, unnamed");
    let how = &proven.verification;
    assert!(how.passed && how.how.starts_with("json"), "{how:?}");
    // Nothing at its name until the pull links it, its record judged.
    assert!(!plan[0].1.exists(), "no name before the pull links it");
    assert!(!part_paths(&dest, &plan[0].1).0.exists(), "no part of a");
    for k in [1, 2] {
        assert!(copied(k).unnamed.is_none(), "{k}");
        assert!(!plan[k].1.exists(), "{k} waits for the pull's proof");
        let part = std::fs::read(part_paths(&dest, &plan[k].1).0).expect("part");
        assert_eq!(part.len(), 8);
    }
}

#[test]
fn a_batch_s_stderr_gives_its_second_look() {
    let stderr = "tar: junk before the marker\0@restat\0\
                  12\x001.5\x002.5\x0077\x00/w/a.json\x003\x001.0\x00";
    let seen = second_look(stderr.as_bytes());
    assert_eq!(seen.len(), 1, "the cut record is dropped");
    assert_eq!(seen["/w/a.json"], (12, "1.5 2.5 77".to_string()));
    // Cut before the marker: no look; the chunk looks again itself.
    assert!(second_look(b"12\x001.5\x002.5\x0077\x00/w/a.json\x00").is_empty());
}
