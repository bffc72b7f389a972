//! A pull meeting the two faults a user cannot prevent, over a real sshd and through the CLI:
//! files that vanish from the box after they were listed, and a local disk that fills up. Each
//! is a clear error naming the file; nothing else is lost, no `.part` takes a final name, the
//! guard refuses, and once space is freed the next pull re-sends no finished byte.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{Lab, Sshd, write_random};

/// A run folder of two checkpoints (one past the small-file cut, one under it) and 40 small
/// metrics files; a fleet that pulls it into `dest` with no verify command.
fn a_box(lab: &mut Lab, dest: &Path) -> (Sshd, PathBuf, PathBuf) {
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    std::fs::create_dir_all(run.join("metrics")).expect("dirs");
    write_random(&run.join("big.bin"), 3 << 20, 1);
    write_random(&run.join("small.bin"), 64 << 10, 2);
    for i in 0..40 {
        std::fs::write(
            run.join(format!("metrics/cell{i:02}.json")),
            format!("{{\"cell\": {i}, \"loss\": 0.{i}}}\n"),
        )
        .expect("metrics");
    }
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n\
         [host.pull.verify]\n\"*.bin\" = \"test -s {{file}}\"",
        lab.host_entry(&sshd),
        run.display(),
        dest.display()
    );
    let fleet = lab.fleet("fleet.toml", "", &[("box", body)]);
    (sshd, run, fleet)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `dir` whose name ends in `.part` (or is inside a `.part` folder).
fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().contains(".part") {
                out.push(p);
            }
        }
    }
    out
}

/// The last pull's files in the ledger: (name, outcome, error, sent bytes).
fn last_pull(lab: &Lab, fleet: &Path) -> Vec<(String, String, String, u64)> {
    let out = lab
        .rigwatch_on(fleet)
        .args(["ledger", "box", "--json"])
        .output()
        .expect("ledger");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
    // Newest first.
    let last = doc["pulls"].as_array().and_then(|p| p.first()).cloned();
    let files = last.as_ref().and_then(|p| p["files"].as_array()).cloned();
    files
        .unwrap_or_default()
        .iter()
        .map(|f| {
            let path = f["remote_path"].as_str().unwrap_or_default();
            (
                path.rsplit('/').next().unwrap_or_default().to_string(),
                f["outcome"].as_str().unwrap_or_default().to_string(),
                f["error"].as_str().unwrap_or_default().to_string(),
                f["sent"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect()
}

/// Runs `action` on the box once, right after its first `find` (the pull's listing): the file
/// the action touches was listed as it was, and meets the copy changed. `mark` says it ran.
fn after_the_listing(sshd: &Sshd, mark: &Path, action: &str) {
    sshd.shim_script(
        "find",
        &format!(
            "#!/bin/sh\n/usr/bin/find \"$@\"\nrc=$?\nif [ ! -e {mark} ]; then touch {mark}; \
             {action}; fi\nexit $rc\n",
            mark = mark.display(),
        ),
    );
}

/// `rigwatch pull box`, which fails once the shim has run: what it said.
fn a_failed_pull(lab: &Lab, fleet: &Path, mark: &Path) -> String {
    let out = lab
        .rigwatch_on(fleet)
        .args(["pull", "box"])
        .output()
        .expect("pull");
    let said = text(&out);
    assert!(mark.exists(), "the listing ran through the shim: {said}");
    assert!(
        !out.status.success(),
        "a pull that lost files fails: {said}"
    );
    said
}

/// The line of `said` that names `name`.
fn line_for<'a>(said: &'a str, name: &str) -> &'a str {
    said.lines()
        .find(|l| l.contains(&format!("/{name}")))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{said}"))
}

#[test]
fn files_that_vanish_after_the_listing_are_named_and_the_rest_arrive() {
    vanish(true);
}

/// The same on a box without SFTP, where every file comes over an exec channel.
#[test]
fn files_that_vanish_from_a_box_without_sftp_are_named_and_leave_nothing_behind() {
    vanish(false);
}

fn vanish(with_sftp: bool) {
    let mut lab = Lab::new();
    let dest = lab.path("pulled");
    let (mut sshd, run, fleet) = a_box(&mut lab, &dest);
    if !with_sftp {
        sshd.without_sftp();
    }
    // The box's find lists the folder, then the run's cleanup removes a big checkpoint and a
    // small metrics file before rigwatch reads them: both paths of the copy meet a vanished file.
    let mark = sshd.dir.join("vanished-once");
    let (big, small) = (run.join("big.bin"), run.join("metrics/cell07.json"));
    after_the_listing(
        &sshd,
        &mark,
        &format!("rm -f {} {}", big.display(), small.display()),
    );
    let said = a_failed_pull(&lab, &fleet, &mark);
    for gone in ["big.bin", "cell07.json"] {
        let line = line_for(&said, gone);
        assert!(line.contains("vanished from the box"), "{line}\n{said}");
        assert_eq!(
            line.matches(gone).count(),
            1,
            "the file is named once, its reason not pushed out by the path: {line}"
        );
    }
    let files = last_pull(&lab, &fleet);
    assert_eq!(files.len(), 42, "{files:?}");
    for (name, outcome, error, _) in &files {
        if name == "big.bin" || name == "cell07.json" {
            assert_eq!(outcome, "failed", "{name}: {error}");
            assert!(error.contains("vanished"), "{name}: {error}");
        } else {
            assert_ne!(outcome, "failed", "{name}: {error}");
        }
    }
    assert!(!dest.join("run/big.bin").exists() && !dest.join("run/metrics/cell07.json").exists());
    assert!(
        dest.join("run/metrics/cell08.json").exists(),
        "the rest arrived: {:?}\n{said}",
        std::fs::read_dir(&dest).map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
    assert!(parts(&dest).is_empty(), "{:?}", parts(&dest));
    // Every other file finished, so nothing unfinished is kept beside dest either: a vanished
    // file leaves no empty `.part` for a later pull to resume.
    let beside = parts(&lab.path(".pulled.rigwatch-parts"));
    assert!(beside.is_empty(), "{beside:?}");
    let out = lab
        .rigwatch_on(&fleet)
        .args(["teardown", "box"])
        .output()
        .expect("teardown");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("REFUSED"), "{said}");
}

/// A checkpoint cut short on a box without SFTP after it was listed: the `tail` piece streaming
/// its start ends early with a clean exit, is asked once more from where it stopped (kubectl can
/// lose a stream's end, so a short stream alone proves nothing), brings nothing, and the file is
/// named as shrunk; the rest arrive. A piece that brought nothing is not asked again.
#[test]
fn a_file_that_shrinks_on_a_box_without_sftp_is_named_as_shrunk_after_one_more_ask() {
    let mut lab = Lab::new();
    let dest = lab.path("pulled");
    let (mut sshd, run, fleet) = a_box(&mut lab, &dest);
    sshd.without_sftp();
    let mark = sshd.dir.join("shrunk-once");
    let reads = sshd.dir.join("reads.log");
    let big = run.join("big.bin");
    after_the_listing(&sshd, &mark, &format!("truncate -s 1M {}", big.display()));
    sshd.shim_script(
        "dd",
        &format!(
            "#!/bin/sh\necho \"$*\" >> {reads}\nexec /usr/bin/dd \"$@\"\n",
            reads = reads.display()
        ),
    );
    let said = a_failed_pull(&lab, &fleet, &mark);
    let line = line_for(&said, "big.bin");
    assert!(line.contains("shrank on the box"), "{line}\n{said}");
    let asked = std::fs::read_to_string(&reads).unwrap_or_default();
    let of_big = format!("if={} ", big.display());
    let big_reads: Vec<&str> = asked.lines().filter(|l| l.contains(&of_big)).collect();
    let from = |at: u64| {
        big_reads
            .iter()
            .any(|l| l.contains(&format!(" skip={at} ")))
    };
    assert!(
        from(0) && from(1 << 20),
        "from the start, then once more from where it stopped:\n{asked}"
    );
    let mut once = big_reads.clone();
    once.sort_unstable();
    once.dedup();
    assert_eq!(once.len(), big_reads.len(), "each asked once:\n{asked}");
    assert!(!dest.join("run/big.bin").exists(), "{said}");
    assert!(
        dest.join("run/small.bin").exists(),
        "the rest arrived: {said}"
    );
}

/// A box whose fleet pulls into `pulled` inside `disk`, a folder `on_small_disk` mounts a
/// tmpfs over: (disk, fleet, the box).
fn a_box_on_its_own_disk(lab: &mut Lab, name: &str) -> (PathBuf, PathBuf, Sshd) {
    let disk = lab.path(name);
    std::fs::create_dir_all(&disk).expect("disk dir");
    let (sshd, _run, fleet) = a_box(lab, &disk.join("pulled"));
    (disk, fleet, sshd)
}

/// `script` run by `sh -ec` (with `$0` the disk) in a mount namespace of its own, where `disk`
/// is a tmpfs of `size`: a local disk that fills up, made without touching this machine's
/// disks, in rigwatch's test environment.
fn on_small_disk(lab: &Lab, disk: &Path, size: &str, script: &str) -> Output {
    let privileged = support::whoami() == "root";
    Command::new("unshare")
        .arg(if privileged { "-m" } else { "-Urm" })
        .args([
            "sh",
            "-ec",
            &format!("mount -t tmpfs -o size={size} tmpfs \"$0\"\n{script}"),
        ])
        .arg(disk)
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("RIGWATCH_CONFIG")
        .env("XDG_STATE_HOME", lab.path("state"))
        .env("XDG_CONFIG_HOME", lab.path("config"))
        .output()
        .expect("unshare")
}

#[test]
fn a_full_local_disk_is_a_clear_error_and_the_pull_resumes_once_space_is_freed() {
    let mut lab = Lab::new();
    let (disk, fleet, _sshd) = a_box_on_its_own_disk(&mut lab, "small-disk");
    let bin = env!("CARGO_BIN_EXE_rigwatch");
    let pull = format!(
        "{bin} --config {} pull box >{} 2>&1",
        fleet.display(),
        lab.path("pull-%s.txt").display()
    );
    let ledger_json = lab.path("ledger.json");
    // 6 MiB disk, 4.5 MiB already taken: the 3 MiB checkpoint cannot fit. Then the filler goes
    // and the same pull runs again, in the same namespace (the tmpfs ends with it).
    let script = format!(
        "head -c 4718592 /dev/zero > \"$0/filler\"\n\
         if {first}; then echo FIRST-SUCCEEDED; exit 3; fi\n\
         ls -R \"$0\" > {listing}\n\
         rm \"$0/filler\"\n\
         {second}\n\
         {bin} --config {fleet} ledger box --json > {ledger}\n",
        first = pull.replace("%s", "1"),
        second = pull.replace("%s", "2"),
        listing = lab.path("after-full.txt").display(),
        fleet = fleet.display(),
        ledger = ledger_json.display(),
    );
    let out = on_small_disk(&lab, &disk, "6m", &script);
    let first = std::fs::read_to_string(lab.path("pull-1.txt")).unwrap_or_default();
    let second = std::fs::read_to_string(lab.path("pull-2.txt")).unwrap_or_default();
    assert!(
        out.status.success(),
        "{}\nfirst pull:\n{first}\nsecond pull:\n{second}",
        text(&out)
    );
    assert!(
        first.contains("local disk full") && first.contains("big.bin"),
        "the first pull names the full disk and the file: {first}"
    );
    // Said in words a user acts on: where the disk is full (not a hashed .part name) and,
    // on the last line, what to do.
    assert!(!first.contains(".part"), "{first}");
    assert!(
        first.contains(&format!("local disk full under {}", disk.display())),
        "{first}"
    );
    let last = first.lines().last().unwrap_or_default();
    assert!(
        last.contains("free space") && last.contains("resume"),
        "{last}"
    );
    let listing = std::fs::read_to_string(lab.path("after-full.txt")).unwrap_or_default();
    assert!(
        !listing.lines().any(|l| l.trim() == "big.bin"),
        "no partial file under its final name:\n{listing}"
    );
    // The second pull completes, and what arrived the first time is not sent again.
    assert!(second.contains("0 failed"), "{second}");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&ledger_json).expect("ledger")).expect("json");
    let pulls = doc["pulls"].as_array().expect("pulls");
    assert_eq!(pulls.len(), 2, "both pulls are in the ledger: {doc}");
    // Newest first.
    let (pull1, pull2) = (&pulls[1], &pulls[0]);
    let files = |pull: &serde_json::Value| -> Vec<serde_json::Value> {
        pull["files"].as_array().cloned().unwrap_or_default()
    };
    let sent = |pull: &serde_json::Value, name: &str| -> u64 {
        files(pull)
            .iter()
            .find(|f| f["remote_path"].as_str().is_some_and(|p| p.ends_with(name)))
            .and_then(|f| f["sent"].as_u64())
            .unwrap_or(u64::MAX)
    };
    assert_eq!(files(pull2).len(), 42, "{second}");
    for f in files(pull2) {
        assert_ne!(f["outcome"], "failed", "{f}\n{second}");
    }
    let whole_first: Vec<String> = files(pull1)
        .iter()
        .filter(|f| f["outcome"] != "failed")
        .filter_map(|f| f["remote_path"].as_str().map(str::to_string))
        .collect();
    for path in &whole_first {
        let name = path.rsplit('/').next().unwrap_or_default();
        assert_eq!(
            sent(pull2, &format!("/{name}")),
            0,
            "{path} arrived whole the first time and is not sent again:\n{first}\n{second}"
        );
    }
    assert!(
        sent(pull2, "big.bin") < 3 << 20,
        "the checkpoint resumes from what it had written:\n{second}"
    );
}

#[test]
fn a_disk_already_full_is_said_the_same_way_for_every_file() {
    // Not one byte free: the first write of each file (its version tag, its folder, its
    // `.part`) meets the full disk, and each says so in the same words.
    let mut lab = Lab::new();
    let (disk, fleet, _sshd) = a_box_on_its_own_disk(&mut lab, "full-disk");
    let bin = env!("CARGO_BIN_EXE_rigwatch");
    let said = lab.path("pull.txt");
    let script = format!(
        "head -c 8388608 /dev/zero > \"$0/filler\" || true\n\
         {bin} --config {} pull box > {} 2>&1 || true\n",
        fleet.display(),
        said.display()
    );
    let out = on_small_disk(&lab, &disk, "2m", &script);
    let said = std::fs::read_to_string(&said).unwrap_or_default();
    assert!(out.status.success(), "{}\n{said}", text(&out));
    let failed: Vec<&str> = said.lines().filter(|l| l.contains("FAILED")).collect();
    assert_eq!(failed.len(), 42, "{said}");
    for line in failed {
        assert!(
            line.contains(&format!("local disk full under {}", disk.display())),
            "{line}"
        );
    }
}

#[test]
fn a_box_without_sftp_still_gives_up_every_file() {
    // Debian's sshd only recommends its sftp-server, so images built without recommends have
    // none. The SFTP channel is opened while the box lists, in case a file needs it; without
    // it, a pull of small files must not notice, and a checkpoint comes over an exec channel.
    let mut lab = Lab::new();
    let dest = lab.path("pulled");
    let (mut sshd, run, fleet) = a_box(&mut lab, &dest);
    sshd.without_sftp();
    let checkpoint = std::fs::read(run.join("big.bin")).expect("checkpoint");
    std::fs::remove_file(run.join("big.bin")).expect("only small files");
    let pulls_all = |count: usize| {
        let out = lab
            .rigwatch_on(&fleet)
            .args(["pull", "box"])
            .output()
            .expect("pull");
        let said = text(&out);
        assert!(out.status.success(), "{said}");
        let all = format!("{count} proven, 0 unproven, 0 failed");
        assert!(said.contains(&all), "{said}");
    };
    pulls_all(41);
    std::fs::write(run.join("big.bin"), &checkpoint).expect("checkpoint back");
    pulls_all(42);
    assert_eq!(
        std::fs::read(dest.join("run/big.bin")).expect("pulled"),
        checkpoint
    );
    let big = last_pull(&lab, &fleet)
        .into_iter()
        .find(|f| f.0 == "big.bin")
        .expect("big.bin in the ledger");
    assert_eq!(big.3, 3 << 20, "sent whole: {big:?}");
    assert!(parts(&dest).is_empty());
}

#[test]
fn a_full_state_disk_is_said_before_anything_is_pulled() {
    // The ledger lives in the state folder; with no room there, a pull could not record what it
    // brought (and the guard counts only recorded pulls), so it does not start: the message
    // names the ledger's file and the full disk, and nothing crosses the link.
    let mut lab = Lab::new();
    let dest = lab.path("pulled");
    let (_sshd, _run, fleet) = a_box(&mut lab, &dest);
    let disk = lab.path("state-disk");
    std::fs::create_dir_all(&disk).expect("disk dir");
    let bin = env!("CARGO_BIN_EXE_rigwatch");
    let said = lab.path("pull.txt");
    let script = format!(
        "export XDG_STATE_HOME=\"$0/state\"\n\
         {bin} --config {fleet} ledger box > /dev/null 2>&1 || true\n\
         head -c 8388608 /dev/zero > \"$0/filler\" 2>/dev/null || true\n\
         {bin} --config {fleet} pull box > {said} 2>&1 || true\n",
        fleet = fleet.display(),
        said = said.display()
    );
    let out = on_small_disk(&lab, &disk, "1m", &script);
    let said = std::fs::read_to_string(&said).unwrap_or_default();
    assert!(out.status.success(), "{}\n{said}", text(&out));
    assert!(
        said.contains("ledger.sqlite") && said.contains("disk is full"),
        "{said}"
    );
    assert!(!dest.exists(), "nothing was pulled: {said}");
}
