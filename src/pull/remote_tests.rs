//! The listing and hashing scripts run by a local `sh` over real folders (the same GNU tools a
//! box has), and their parsers on hand-made records for what a folder cannot easily show.
//!
//! Past 400 lines: a table of cases, each read on its own.

use std::os::unix::ffi::OsStrExt;

use super::*;

fn sh(script: &str) -> (Vec<u8>, Vec<u8>) {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .output()
        .expect("sh");
    (out.stdout, out.stderr)
}

/// What a pull would see: the listing, then its links settled by a second script.
fn list(paths: &[String]) -> Listing {
    let (out, err) = sh(&listing_command(paths));
    let mut listing = parse_listing(paths, &out, &err);
    if !listing.pending.is_empty() {
        let resolved = resolve_commands(&listing.pending)
            .iter()
            .flat_map(|c| parse_resolved(&sh(c).0))
            .collect();
        settle_links(&mut listing, Ok(resolved));
    }
    listing
}

fn names(listing: &Listing) -> Vec<String> {
    let mut names: Vec<String> = listing.files.iter().map(|f| f.path.clone()).collect();
    names.sort();
    names
}

#[test]
fn glob_word_keeps_globs_and_quotes_the_rest() {
    assert_eq!(glob_word("/w/a b;c/*.pt"), "/w/a\\ b\\;c/*.pt");
    assert_eq!(glob_word("~/x y"), "~/x\\ y");
}

/// A folder named like a glob (`exp[lr=0.1]`) is reached by escaping the bracket; unescaped,
/// the bracket is a one-character class and means `expl`, `expr`, … instead.
#[test]
fn a_backslash_makes_a_glob_character_literal() {
    let dir = tempfile::tempdir().expect("tempdir");
    for folder in ["exp[lr=0.1]", "expl"] {
        std::fs::create_dir_all(dir.path().join(folder)).expect("mkdir");
        std::fs::write(dir.path().join(folder).join("m.json"), b"{}").expect("file");
    }
    let root = dir.path().display();
    let literal = list(&[format!("{root}/exp\\[lr=0.1]")]);
    assert_eq!(names(&literal), vec![format!("{root}/exp[lr=0.1]/m.json")]);
    assert!(literal.unmatched.is_empty() && literal.problems.is_empty());
    let class = list(&[format!("{root}/exp[lr=0.1]")]);
    assert_eq!(names(&class), vec![format!("{root}/expl/m.json")]);
}

#[test]
fn files_are_listed_with_a_nanosecond_stamp_and_unmatched_paths_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir_all(run.join("sub")).expect("dirs");
    std::fs::write(run.join("a.pt"), b"12345").expect("write");
    std::fs::write(run.join("sub/b c.json"), b"{}").expect("write");
    let paths = vec![
        run.display().to_string(),
        format!("{}/none/*.json", dir.path().display()),
    ];
    let l = list(&paths);
    assert_eq!(
        names(&l),
        vec![
            format!("{}/a.pt", run.display()),
            format!("{}/sub/b c.json", run.display())
        ]
    );
    let a = l
        .files
        .iter()
        .find(|f| f.path.ends_with("a.pt"))
        .expect("a");
    assert_eq!(a.size, 5);
    let parts: Vec<&str> = a.stamp.split(' ').collect();
    assert_eq!(parts.len(), 3, "{}", a.stamp);
    assert!(
        parts[0].contains('.') && parts[1].contains('.'),
        "{}",
        a.stamp
    );
    assert_eq!(l.unmatched, vec![paths[1].clone()]);
    assert!(l.problems.is_empty(), "{:?}", l.problems);
    assert!(l.home.is_some());
}

#[test]
fn a_same_size_rewrite_in_the_same_second_changes_the_stamp() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("m.json");
    std::fs::write(&f, b"{\"a\":1}").expect("write");
    let paths = vec![dir.path().display().to_string()];
    let before = list(&paths).files[0].clone();
    std::fs::write(&f, b"{\"a\":2}").expect("rewrite");
    let times = std::fs::FileTimes::new()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(before.mtime as u64));
    std::fs::File::options()
        .write(true)
        .open(&f)
        .and_then(|h| h.set_times(times))
        .expect("same mtime second");
    let after = list(&paths).files[0].clone();
    assert_eq!((after.size, after.mtime), (before.size, before.mtime));
    assert_ne!(after.stamp, before.stamp);
}

#[test]
fn links_inside_the_pull_paths_are_covered_and_links_out_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let data = dir.path().join("data/ckpt");
    std::fs::create_dir_all(&run).expect("run");
    std::fs::create_dir_all(&data).expect("data");
    std::fs::write(data.join("step9.pt"), b"weights").expect("ckpt");
    std::fs::write(run.join("m.json"), b"{}").expect("m");
    std::os::unix::fs::symlink(&data, run.join("ckpt")).expect("link out");
    std::os::unix::fs::symlink("/", run.join("root")).expect("link to /");
    std::os::unix::fs::symlink(run.join("m.json"), run.join("latest.json")).expect("link in");
    std::os::unix::fs::symlink(run.join("gone"), run.join("dangling")).expect("dangling");
    std::os::unix::fs::symlink(run.join("loop"), run.join("loop")).expect("loop");
    let l = list(&[run.display().to_string()]);
    // Nothing outside the pull path was walked: not the data disk, not the whole box.
    assert_eq!(names(&l), vec![format!("{}/m.json", run.display())]);
    assert_eq!(l.covered.len(), 1, "{:?}", l.covered);
    assert!(l.covered[0].path.ends_with("/latest.json"));
    let mut why: Vec<(String, LinkWhy)> = l
        .problems
        .iter()
        .map(|p| match p {
            Problem::Link { path, why, .. } => (path.clone(), *why),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    why.sort_by(|a, b| a.0.cmp(&b.0));
    let at = |n: &str| format!("{}/{n}", run.display());
    assert_eq!(
        why,
        vec![
            (at("ckpt"), LinkWhy::Outside),
            (at("dangling"), LinkWhy::Dangling),
            (at("loop"), LinkWhy::Loop),
            (at("root"), LinkWhy::Outside),
        ]
    );
    let ckpt = l
        .problems
        .iter()
        .find(|p| p.path().ends_with("/ckpt"))
        .expect("ckpt");
    assert!(
        ckpt.why().contains(&data.display().to_string()),
        "{}",
        ckpt.why()
    );

    // Once the link's target is a pull path itself, the link is covered and its files listed.
    let l = list(&[run.display().to_string(), data.display().to_string()]);
    assert!(l.covered.iter().any(|c| c.path.ends_with("/ckpt")));
    assert!(names(&l).iter().any(|n| n.ends_with("step9.pt")));
}

#[test]
fn a_pull_path_that_is_itself_a_link_is_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data");
    std::fs::write(data.join("w.pt"), b"x").expect("w");
    let link = dir.path().join("ckpt");
    std::os::unix::fs::symlink(&data, &link).expect("link");
    let l = list(&[link.display().to_string()]);
    assert_eq!(names(&l), vec![format!("{}/w.pt", link.display())]);
    assert_eq!(
        l.bases,
        vec![data.canonicalize().expect("real").display().to_string()]
    );
    assert!(l.problems.is_empty(), "{:?}", l.problems);
}

#[test]
fn fifos_and_names_that_are_not_utf8_are_carried_not_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9\nname.pt"));
    std::fs::write(&odd, b"x").expect("odd name");
    let status = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let l = list(&[dir.path().display().to_string()]);
    let expected = format!("{}/caf\\xe9\\x0aname.pt", dir.path().display());
    assert_eq!(names(&l), vec![expected.clone()]);
    assert!(matches!(&l.problems[..], [Problem::Special { kind, .. }] if kind == "p"));
    // The hash script finds the same bytes again and reports them under the same name.
    let (out, _) = sh(&hash_command(&[expected.as_str()]));
    let HashOutput::Hashes(map) = parse_hashes(&out) else {
        panic!("no hashing tool");
    };
    assert_eq!(
        map.get(&expected).map(String::as_str),
        Some("2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881")
    );
}

/// `kubectl exec` can lose the end of a command's stdout and exit 0
/// (kubernetes/kubernetes#124571): a listing cut on a record's boundary reads as whole records,
/// and the files after the cut were simply not in the pull, with nothing said.
#[test]
fn a_listing_cut_between_two_records_is_a_problem_never_a_shorter_listing() {
    let paths = vec!["/w".to_string()];
    let whole = b"@home\0/root\0@root\x000\0@base\0/w\0/w\0\
                  F\x005\x001.0\x002.0\x003\x00644\0/w/a\0\
                  F\x005\x001.0\x002.0\x003\x00644\0/w/b\0@exit\x000\0@end\0"
        .as_slice();
    let l = parse_listing(&paths, whole, b"");
    assert_eq!(
        (l.files.len(), l.problems.len()),
        (2, 0),
        "{:?}",
        l.problems
    );
    let at_b = whole.windows(2).position(|w| w == b"F\x00").expect("F") + 1;
    let at_b = at_b
        + whole[at_b..]
            .windows(2)
            .position(|w| w == b"F\x00")
            .expect("2nd F");
    for cut in [
        at_b,
        whole.len() - b"@exit\x000\0@end\0".len(),
        whole.len() - 5,
    ] {
        let l = parse_listing(&paths, &whole[..cut], b"");
        assert!(
            matches!(l.problems.last(), Some(Problem::Garbled(_))),
            "cut at {cut}: {:?}",
            l.problems
        );
    }
    // The real command ends with it.
    let (out, _) = sh(&listing_command(&paths));
    assert!(
        out.ends_with(b"@end\0"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn a_cut_or_garbled_listing_is_a_problem_never_an_empty_folder() {
    let paths = vec!["/w".to_string()];
    let cut = b"@home\0/root\0@root\x000\0@base\0/w\0/w\0F\x005\x00170".as_slice();
    let l = parse_listing(&paths, cut, b"");
    assert!(
        matches!(&l.problems[..], [Problem::Garbled(_)]),
        "{:?}",
        l.problems
    );
    let junk = b"@root\x000\0@base\0/w\0/w\0nonsense\0".as_slice();
    let l = parse_listing(&paths, junk, b"");
    assert!(
        matches!(&l.problems[..], [Problem::Garbled(_)]),
        "{:?}",
        l.problems
    );
    let failed = b"@root\x000\0@base\0/w\0/w\0@exit\x00124\0@end\0".as_slice();
    let l = parse_listing(&paths, failed, b"");
    assert!(
        matches!(&l.problems[..], [Problem::ListingFailed { why, .. }] if why.contains("timed out")),
        "{:?}",
        l.problems
    );
    let failed = b"@root\x000\0@base\0/w\0/w\0@exit\x001\0@end\0".as_slice();
    let l = parse_listing(&paths, failed, b"find: '/w/x': Input/output error\n");
    assert!(
        matches!(&l.problems[..], [Problem::ListingFailed { why, .. }] if why.contains("Input/output")),
        "{:?}",
        l.problems
    );
}

#[test]
fn a_file_listed_under_two_roots_counts_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.pt"), b"x").expect("a");
    let d = dir.path().display();
    let l = list(&[d.to_string(), format!("{d}/*.pt")]);
    assert_eq!(l.files.len(), 1);
    assert!(l.unmatched.is_empty());
}

#[test]
fn hashes_parse_and_a_missing_tool_is_said() {
    let h = "a".repeat(64);
    let text = format!("{h}  /w/a.pt\0{h}  /w/odd\nname\0short  /w/x\0");
    let HashOutput::Hashes(map) = parse_hashes(text.as_bytes()) else {
        panic!("expected hashes");
    };
    assert_eq!(map.get("/w/a.pt"), Some(&h));
    assert_eq!(map.get("/w/odd\\x0aname"), Some(&h));
    assert_eq!(map.len(), 2);
    assert_eq!(parse_hashes(b"@nohash\n"), HashOutput::NoTool);
}

#[test]
fn quoting_survives_single_quotes() {
    assert_eq!(shell_quote("it's"), "'it'\\''s'");
}

#[test]
fn parsers_never_panic_on_arbitrary_bytes() {
    let paths = vec!["/w".to_string()];
    for seed in 0..2000u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let len = rng.usize(0..200);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                *rng.choice(b"@rootbaseFLUO\x00 0123456789./\xff".iter())
                    .unwrap_or(&0)
            })
            .collect();
        let whole = parse_listing(&paths, &bytes, &bytes);
        let _ = parse_hashes(&bytes);
        let _ = parse_resolved(&bytes);
        crate::pull::restat::parse_restat(&bytes, &mut Default::default());
        // Fed in blocks, as a spooled listing is read back, it reads the same.
        let block = rng.usize(1..8);
        let blocks = crate::pull::listing::parse_in_blocks(&paths, &bytes, &bytes, block);
        assert_eq!(blocks, whole, "seed {seed}");
    }
}

/// Runs `script` with `dir` first on PATH; its stdout, and its stderr as text.
pub(in crate::pull) fn sh_with_path(dir: &std::path::Path, script: &str) -> (Vec<u8>, String) {
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("PATH", path)
        .output()
        .expect("sh");
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An executable `name` in `dir` whose script is `body`.
pub(in crate::pull) fn shim(dir: &std::path::Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).expect("shim");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn big_files_are_hashed_by_openssl_where_it_answers_right_else_as_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ckpt 1.pt");
    std::fs::write(&file, b"x").expect("file");
    let name = file.display().to_string();
    let want = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
    let hashed = |out: &[u8]| match parse_hashes(out) {
        HashOutput::Hashes(map) => map.get(&name).cloned(),
        HashOutput::NoTool => None,
    };
    let shims = dir.path().join("bin");
    std::fs::create_dir_all(&shims).expect("bin");
    // A working openssl is used (SHA-NI: about three times coreutils' sha256sum here).
    let log = dir.path().join("openssl.log");
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v openssl"])
            .output()
            .expect("sh")
            .stdout,
    )
    .expect("utf8");
    let real = real.trim();
    assert!(!real.is_empty(), "this test needs openssl installed");
    shim(
        &shims,
        "openssl",
        &format!(
            "#!/bin/sh\necho \"$@\" >> {}\nexec {real} \"$@\"\n",
            log.display()
        ),
    );
    let (out, _) = sh_with_path(&shims, &big_file_hash_command(&[name.as_str()]));
    assert_eq!(hashed(&out).as_deref(), Some(want));
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 2, "the probe and the file: {calls}");
    // An openssl that answers wrong (or not at all) is passed over for sha256sum.
    shim(
        &shims,
        "openssl",
        "#!/bin/sh\necho 'usage: openssl' >&2\nexit 1\n",
    );
    let (out, _) = sh_with_path(&shims, &big_file_hash_command(&[name.as_str()]));
    assert_eq!(hashed(&out).as_deref(), Some(want));
    shim(
        &shims,
        "openssl",
        "#!/bin/sh\necho 0000000000000000000000000000000000000000000000000000000000000000 '*stdin'\n",
    );
    let (out, _) = sh_with_path(&shims, &big_file_hash_command(&[name.as_str()]));
    assert_eq!(hashed(&out).as_deref(), Some(want));
    // A file that cannot be read gets no hash, never a wrong one.
    shim(
        &shims,
        "openssl",
        &format!("#!/bin/sh\nexec {real} \"$@\"\n"),
    );
    let gone = format!("{name}.gone");
    let (out, _) = sh_with_path(
        &shims,
        &big_file_hash_command(&[gone.as_str(), name.as_str()]),
    );
    let HashOutput::Hashes(map) = parse_hashes(&out) else {
        panic!("hashes");
    };
    assert_eq!(map.len(), 1, "{map:?}");
    assert_eq!(map.get(&name).map(String::as_str), Some(want));
}

/// Box-sized lists never make a command line longer than the bound: 2 000 links and 200 files
/// with 1 000-byte names (sshd hands a command to the login shell as one argument, which Linux
/// caps at 128 KiB; past it the box cannot start it).
#[test]
fn a_command_never_grows_with_the_box() {
    let long = |i: usize| format!("/w/{i:05}/{}", "n".repeat(990));
    let links: Vec<PendingLink> = (0..2000)
        .map(|i| PendingLink {
            path: long(i),
            kind: "f".into(),
            raw_target: String::new(),
        })
        .collect();
    let commands = resolve_commands(&links);
    for command in &commands {
        assert!(command.len() <= 128 * 1024, "{} bytes", command.len());
    }
    // Every link is asked about once, in order: one record each from the box.
    let records: usize = commands
        .iter()
        .map(|c| parse_resolved(&sh(c).0).len())
        .sum();
    assert_eq!(records, 2000);
    // Many short names: the command's own text around each is most of it.
    let short: Vec<PendingLink> = (0..20_000)
        .map(|i| PendingLink {
            path: format!("/l/{i}"),
            ..links[0].clone()
        })
        .collect();
    for command in resolve_commands(&short) {
        assert!(
            command.len() <= crate::pull::names::COMMAND_BYTES,
            "{} bytes",
            command.len()
        );
    }
    let names: Vec<String> = (0..200).map(long).collect();
    let batches = crate::pull::names::batches(
        &names,
        String::as_str,
        200,
        crate::pull::names::Naming::listed(2),
    );
    assert!(batches.len() > 1);
    for batch in batches {
        let paths: Vec<&str> = batch.iter().map(String::as_str).collect();
        for command in [hash_command(&paths), big_file_hash_command(&paths)] {
            assert!(command.len() <= 128 * 1024, "{} bytes", command.len());
        }
    }
}
