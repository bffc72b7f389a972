//! What a pull costs the local disk, seen by strace around the real `rigwatch pull` against a
//! real sshd: inodes made and removed per file, and the syncs that make copies durable.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::Lab;
use support::results::{pull_fleet, write_small};

/// `rigwatch pull box` on `fleet` under `strace` with `args` (its output going to `out`), run
/// to a successful end.
fn pull_under_strace(lab: &Lab, fleet: &Path, args: &[&str], out: &Path) {
    let ran = Command::new("strace")
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(env!("CARGO_BIN_EXE_rigwatch"))
        .arg("--config")
        .arg(fleet)
        .args(["pull", "box"])
        .env("XDG_STATE_HOME", lab.path("state"))
        .env("XDG_CONFIG_HOME", lab.path("config"))
        .env_remove("SSH_AUTH_SOCK")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("strace (apt install strace)");
    assert!(
        ran.status.success(),
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
}

/// The calls `strace -c` counted for `syscall` (`total` for all of them).
fn calls(summary: &str, syscall: &str) -> u64 {
    summary
        .lines()
        .find(|l| l.split_whitespace().last() == Some(syscall))
        .and_then(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            // % time, seconds, usecs/call, calls, [errors,] syscall
            words.get(3)?.parse().ok()
        })
        .unwrap_or(0)
}

/// The tests that count a pull's syncs run one at a time: how a pull syncs depends on what else
/// waits to be written on this machine (`durable`), and one of them leaves 256 MiB waiting.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The syncs of one pull of `fleet`: the summary strace printed.
fn syncs_of_pull(lab: &Lab, fleet: &Path) -> String {
    let summary = lab.path("syncs.txt");
    let args = ["-f", "-qq", "-c", "-e", "trace=fsync,fdatasync,syncfs,sync"];
    pull_under_strace(lab, fleet, &args, &summary);
    std::fs::read_to_string(&summary).expect("summary")
}

/// A box holding a sweep's results, a folder per cell for 300 cells, and the fleet that pulls
/// them into the `dest` it returns.
fn a_sweep(lab: &mut Lab) -> (support::Sshd, PathBuf, PathBuf) {
    a_sweep_of(lab, 300)
}

/// As `a_sweep`, of `cells` cells.
fn a_sweep_of(lab: &mut Lab, cells: usize) -> (support::Sshd, PathBuf, PathBuf) {
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    write_small(&run, cells);
    let dest = lab.path("results/box");
    let fleet = pull_fleet(lab, &sshd, &run, &dest);
    (sshd, fleet, dest)
}

/// Cell `i`'s results arrived whole under `dest`.
fn assert_cell_pulled(dest: &Path, i: usize) {
    let local = dest.join(format!("final_ckpts/cell{i:03}/metrics.json"));
    let text = std::fs::read_to_string(&local).expect("pulled");
    assert!(text.starts_with(&format!("{{\"cell\": {i},")), "{text}");
}

/// A sweep's results are a folder per cell: 300 of them pulled, with little else waiting to be
/// written on the disk, make their bytes durable once per tar batch and their renames once
/// per filesystem, not with two fsyncs a file (each a journal commit: 10 000 files took 8.8 s
/// against rsync's 0.9 s). Every file is still proven and recorded.
#[test]
fn a_pull_of_many_small_files_syncs_per_pull_not_per_file() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut lab = Lab::new();
    let (_sshd, fleet, dest) = a_sweep(&mut lab);
    // What the build and the other tests left unwritten goes first.
    assert!(Command::new("sync").status().expect("sync").success());
    let summary = syncs_of_pull(&lab, &fleet);
    for i in [0, 150, 299] {
        assert_cell_pulled(&dest, i);
    }
    let total = calls(&summary, "total");
    eprintln!("{total} syncs for 301 files:\n{summary}");
    // The parts, the renames, and the ledger's own commits.
    assert!(total <= 60, "{total} syncs for 301 files:\n{summary}");
}

/// The same pull while another program's 256 MiB waits to be written on the same disk: a
/// syncfs would wait for all of it (a 500-file pull right after a 256 MiB one spent 2.5 s
/// finishing), so each part and folder is fsynced instead, many at once.
#[test]
fn a_pull_of_many_small_files_does_not_wait_for_other_programs_writes() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut lab = Lab::new();
    let (_sshd, fleet, dest) = a_sweep(&mut lab);
    // Another program's big write, not yet on disk (the kernel writes it back after 30 s, or
    // past gigabytes; the pull starts well before either).
    support::write_random(&lab.path("other-program.bin"), 256 << 20, 9);
    let summary = syncs_of_pull(&lab, &fleet);
    assert_cell_pulled(&dest, 299);
    assert_eq!(calls(&summary, "syncfs"), 0, "{summary}");
    assert!(calls(&summary, "fsync") >= 300, "each part: {summary}");
}

/// A pull of thousands of files while another program's 128 MiB waits to be written: that
/// much costs less to write once than the pull's thousands of journal commits (each fsync
/// 0.09–0.17 ms here), so the first syncfs pays for it and the rest find little left. (A
/// 10 000-file pull beside 100 MiB it had just been handed fsynced each part: 1.5 s.)
#[test]
fn a_pull_of_thousands_of_files_pays_once_for_what_else_waits() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut lab = Lab::new();
    let (_sshd, fleet, dest) = a_sweep_of(&mut lab, 3000);
    support::write_random(&lab.path("other-program.bin"), 128 << 20, 9);
    let summary = syncs_of_pull(&lab, &fleet);
    for i in [0, 1500, 2999] {
        assert_cell_pulled(&dest, i);
    }
    assert!(calls(&summary, "syncfs") >= 1, "{summary}");
    let total = calls(&summary, "total");
    assert!(total <= 300, "{total} syncs for 3001 files:\n{summary}");
}

/// A checkpoint and a few small files are synced file by file and folder by folder: a syncfs
/// would also flush whatever else waits to be written on that disk (a 256 MiB checkpoint's
/// pull paid 0.5 s for rsync's unflushed copy beside it).
#[test]
fn a_pull_of_a_few_files_syncs_only_its_own() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    write_small(&run, 3);
    support::write_random(&run.join("final_ckpts/ckpt.bin"), 4 << 20, 7);
    let dest = lab.path("results/box");
    let summary = syncs_of_pull(&lab, &pull_fleet(&lab, &sshd, &run, &dest));
    let local = dest.join("final_ckpts/ckpt.bin");
    assert_eq!(std::fs::metadata(&local).expect("pulled").len(), 4 << 20);
    assert_eq!(calls(&summary, "syncfs"), 0, "{summary}");
    assert!(
        calls(&summary, "fsync") >= 5,
        "each part and folder: {summary}"
    );
}

/// New inodes and deleted ones, from `strace -f` lines of the calls that make and remove them.
fn inodes_made_and_removed(trace: &str) -> (usize, usize) {
    let ok = |l: &str| !l.contains(" = -1 ") && l.contains(" = ");
    let made = trace
        .lines()
        .filter(|l| ok(l) && (l.contains("O_CREAT") || l.contains("mkdir")))
        .count();
    let removed = trace
        .lines()
        .filter(|l| ok(l) && (l.contains("unlink") || l.contains("rmdir")))
        .count();
    (made, removed)
}

/// A small file costs one new inode at home, as rsync's does: its `.part` carries which
/// version it holds on itself and becomes the final file, with no tag file or staging folder
/// made and deleted beside it (on this machine's ext4 each new inode cost ~1 ms, and the
/// deleted ones slow the next ones down).
#[test]
fn a_pull_makes_one_new_inode_per_small_file() {
    let mut lab = Lab::new();
    let (_sshd, fleet, dest) = a_sweep(&mut lab);
    // A file per thread (-ff), so no call is split across lines as `<unfinished ...>`.
    let traces: PathBuf = lab.path("strace");
    std::fs::create_dir_all(&traces).expect("dir");
    let calls = "trace=openat,open,creat,mkdir,mkdirat,unlink,unlinkat,rmdir";
    pull_under_strace(
        &lab,
        &fleet,
        &["-ff", "-qq", "-e", calls],
        &traces.join("t"),
    );
    assert_cell_pulled(&dest, 7);
    let local = dest.join("final_ckpts/cell007/metrics.json");
    assert!(
        xattr::list(&local).expect("xattrs").next().is_none(),
        "the pulled file carries none of rigwatch's tags"
    );
    let trace: String = std::fs::read_dir(&traces)
        .expect("traces")
        .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("trace"))
        .collect();
    let (made, removed) = inodes_made_and_removed(&trace);
    eprintln!("301 files in 301 folders: {made} inodes made, {removed} removed");
    // A file and a folder per cell, and what the ledger, the parts folder and the state make.
    assert!(
        made <= 301 * 2 + 40,
        "{made} inodes made for 301 files in 301 folders"
    );
    assert!(removed <= 40, "{removed} inodes removed for 301 files");
}
