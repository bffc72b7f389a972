//! A pull interrupted by each link fault, through the real `rigwatch pull` against a real sshd:
//! a partition (iptables DROP in a network namespace the test makes), a link narrowed to 56
//! kbit/s (`tc tbf` there), sshd restarting in a loop, a reboot (down a while, back with a new
//! boot id) and a connection cut mid-stream (the delay proxy). Each run folder holds one big
//! checkpoint and many small files, so the fault lands with both a `.part` and tar batches in
//! flight. After each: nothing under a final name differs from the box, every `.part` is a
//! prefix of its file; healed, a second pull brings every file byte-identical and sends exactly
//! the bytes not already here (none twice). Every wait is bounded; the namespace cases print
//! SKIPPED and why where this machine cannot make one.

mod support;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use rigwatch::pull::local::{part_paths, sha256_file};
use support::delay::DelayProxy;
use support::netns::Netns;
use support::{Lab, Sshd, write_random};

const BIG: u64 = 256 << 20;
const SMALL: usize = 300;
/// The fault lands once this much has reached the local disk: the checkpoint is under way.
const FAULT_AT: u64 = 24 << 20;

/// A box's run folder: one big checkpoint and `SMALL` metrics files of ~3 KiB.
fn stage(sshd: &Sshd) -> PathBuf {
    let run = sshd.dir.join("workspace/run");
    write_random(&run.join("big.bin"), BIG, 7);
    std::fs::create_dir_all(run.join("metrics")).expect("dirs");
    for i in 0..SMALL {
        let line = format!("{{\"cell\": {i}, \"loss\": 0.{i:04}}}\n");
        std::fs::write(
            run.join(format!("metrics/cell{i:03}.jsonl")),
            line.repeat(120),
        )
        .expect("metrics");
    }
    run
}

/// The box's files, by path relative to the run folder.
fn box_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("big.bin")];
    files.extend((0..SMALL).map(|i| PathBuf::from(format!("metrics/cell{i:03}.jsonl"))));
    files
}

struct Scene {
    lab: Lab,
    run: PathBuf,
    dest: PathBuf,
    fleet: PathBuf,
}

impl Scene {
    /// A fleet pulling `run` from the host `entry` into a folder of its own; with the default
    /// keepalive (5 s × 3) when `default_keepalive`, else the lab's 1 s × 2.
    fn new(lab: Lab, run: PathBuf, entry: String, default_keepalive: bool) -> Scene {
        let dest = lab.path("home/pulled");
        let body = format!(
            "{entry}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n\
             [host.pull.verify]\n\"*.bin\" = \"test -s {{file}}\"",
            run.display(),
            dest.display()
        );
        let fleet = lab.fleet("fleet.toml", "", &[("box", body)]);
        if default_keepalive {
            let text = std::fs::read_to_string(&fleet).expect("fleet");
            let text = text.replace("keepalive_secs = 1\nkeepalive_max = 2\n", "");
            std::fs::write(&fleet, text).expect("fleet");
        }
        Scene {
            lab,
            run,
            dest,
            fleet,
        }
    }

    fn pull(&self, log: &str) -> Child {
        let out = std::fs::File::create(self.lab.path(log)).expect("log");
        self.lab
            .rigwatch_on(&self.fleet)
            .args(["pull", "box"])
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("pull")
    }

    fn said(&self, log: &str) -> String {
        std::fs::read_to_string(self.lab.path(log)).unwrap_or_default()
    }

    /// Bytes pulled so far, under final names and in `.part`s.
    fn bytes_home(&self) -> u64 {
        let mut total = 0;
        let mut stack = vec![self.lab.path("home")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                match entry.metadata() {
                    Ok(m) if m.is_dir() => stack.push(entry.path()),
                    Ok(m) => total += m.len(),
                    Err(_) => {}
                }
            }
        }
        total
    }

    /// Starts the first pull and returns once `FAULT_AT` bytes are home, the pull still running.
    fn pull_under_way(&self) -> Child {
        let mut first = self.pull("first.txt");
        let deadline = Instant::now() + Duration::from_secs(90);
        while self.bytes_home() < FAULT_AT {
            let ended = first.try_wait().expect("wait");
            assert!(
                ended.is_none(),
                "the pull ended before the fault: {ended:?}\n{}",
                self.said("first.txt")
            );
            assert!(Instant::now() < deadline, "the pull never got going");
            std::thread::sleep(Duration::from_millis(5));
        }
        first
    }

    /// What the interrupted pull left, per file: the bytes already here. A file under its final
    /// name must be the box's, byte for byte; a `.part` must be a prefix of the box's file.
    fn left_behind(&self) -> BTreeMap<PathBuf, u64> {
        let mut have = BTreeMap::new();
        for rel in box_files() {
            let remote = self.run.join(&rel);
            let local = self.dest.join("run").join(&rel);
            let part = part_paths(&self.dest, &local).0;
            let n = if local.exists() {
                assert_eq!(
                    sha256_file(&local).ok(),
                    sha256_file(&remote).ok(),
                    "{} took its final name with other bytes than the box's",
                    rel.display()
                );
                std::fs::metadata(&local).expect("local").len()
            } else if part.exists() {
                let bytes = std::fs::read(&part).expect("part");
                let mut prefix = vec![0; bytes.len()];
                let mut file = std::fs::File::open(&remote).expect("remote");
                file.read_exact(&mut prefix)
                    .expect("the .part is longer than the file");
                assert!(bytes == prefix, "{}: the .part is corrupt", rel.display());
                bytes.len() as u64
            } else {
                0
            };
            have.insert(rel, n);
        }
        have
    }

    /// Pulls again, healed: every file arrives byte-identical and proven, no `.part` is left,
    /// and the ledger says each file sent exactly the bytes `had` lacked.
    fn resumes(&self, had: &BTreeMap<PathBuf, u64>) {
        let mut second = self.pull("second.txt");
        let ended = wait_bounded(&mut second, Duration::from_secs(120));
        let said = self.said("second.txt");
        assert!(ended.is_some_and(|s| s.success()), "{ended:?}\n{said}");
        let all = format!("{} proven, 0 unproven, 0 failed", SMALL + 1);
        assert!(said.contains(&all), "{said}");
        for rel in box_files() {
            assert_eq!(
                sha256_file(&self.dest.join("run").join(&rel)).ok(),
                sha256_file(&self.run.join(&rel)).ok(),
                "{}",
                rel.display()
            );
        }
        let parts = rigwatch::pull::local::parts_dir(&self.dest);
        let left: Vec<_> = std::fs::read_dir(&parts).into_iter().flatten().collect();
        assert!(left.is_empty(), "{left:?}");

        let out = self
            .lab
            .rigwatch_on(&self.fleet)
            .args(["ledger", "box", "--json"])
            .output()
            .expect("ledger");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
        // Newest first.
        let files = doc["pulls"][0]["files"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(files.len(), SMALL + 1, "each file once: {said}");
        let mut sent = 0;
        for f in &files {
            let remote = PathBuf::from(f["remote_path"].as_str().expect("path"));
            let rel = remote.strip_prefix(&self.run).expect("under the run");
            let size = f["size"].as_u64().expect("size");
            let was_here = had[rel];
            assert_eq!(
                f["sent"].as_u64(),
                Some(size - was_here),
                "{}: only the bytes not already here cross the link",
                rel.display()
            );
            sent += size - was_here;
        }
        let home: u64 = had.values().sum();
        eprintln!("resumed: {home} bytes were home, the other {sent} sent once");
    }
}

/// Waits for `child` at most `limit`; kills it (and returns None) past that.
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// How long the first pull took to end on its own after the fault (it must not claim
/// success), and its big file's line. Bounded at 60 s.
fn ends_unfinished(scene: &Scene, first: &mut Child) -> (Duration, String) {
    let fault_at = Instant::now();
    let ended = wait_bounded(first, Duration::from_secs(60));
    let took = fault_at.elapsed();
    let said = scene.said("first.txt");
    assert!(ended.is_some(), "the pull hung past 60 s:\n{said}");
    assert!(
        !ended.is_some_and(|s| s.success()),
        "a cut pull is not a success:\n{said}"
    );
    let big = said
        .lines()
        .find(|l| l.contains("/big.bin"))
        .unwrap_or_default();
    eprintln!(
        "the cut pull ended {took:?} after the fault; {}",
        big.trim()
    );
    (took, big.trim().to_string())
}

/// Checked last, so the resume is proven whatever this says: once the link is gone (the socket
/// closed, or the keepalive's 1 s × (2 + 1) passed), the pull ends within 10 s and says why.
fn ended_soon((took, big): (Duration, String)) {
    assert!(
        took < Duration::from_secs(10),
        "the cut pull lingered {took:?} after the link was gone; its big file says: {big}"
    );
}

#[test]
fn a_pull_through_a_partition_resumes_whole_once_healed() {
    let Some(ns) = Netns::or_skip("pull through a partition") else {
        return;
    };
    let mut lab = Lab::new();
    let sshd = lab.start_host_in("walled", &ns);
    let run = stage(&sshd);
    let entry = lab.host_entry(&sshd);
    let scene = Scene::new(lab, run, entry, false);
    let mut first = scene.pull_under_way();
    ns.partition(sshd.port);
    // Nothing refused, nothing answers: the keepalive (1 s × 2) ends the session.
    let ended = ends_unfinished(&scene, &mut first);
    let had = scene.left_behind();
    ns.heal(sshd.port);
    scene.resumes(&had);
    ended_soon(ended);
}

/// Narrowed to 56 kbit/s mid-pull, the link still carries the pull, slowly (default keepalive,
/// 5 s × 3): watched for 40 s, past the old SFTP request timeout (30 s; one 255 KiB read takes
/// ~37 s on this link, and a copy's reads now wait for the link, not for a timeout of their
/// own). The token bucket's 10 s queue can hold back every whole SSH packet for longer than
/// the keepalive window, and then the connection is declared lost, as OpenSSH's
/// ServerAliveCountMax would: the pull may end, but only saying so (never "Timeout"). Stopped
/// (Ctrl-C, as a user would) or ended, it resumes whole on a wide link.
#[test]
fn a_pull_over_a_link_narrowed_to_56kbit_keeps_going_or_says_the_link_was_lost_and_resumes() {
    let Some(ns) = Netns::or_skip("pull over 56 kbit/s") else {
        return;
    };
    let mut lab = Lab::new();
    let sshd = lab.start_host_in("narrow", &ns);
    let run = stage(&sshd);
    let entry = lab.host_entry(&sshd);
    let scene = Scene::new(lab, run, entry, true);
    let mut first = scene.pull_under_way();
    ns.narrow(56);
    // What was queued before the narrowing drains first; then ~7 000 bytes/s cross the link.
    std::thread::sleep(Duration::from_secs(4));
    let mut seen = ns.bytes_from_box();
    let mut died = None;
    for window in 1..=6 {
        std::thread::sleep(Duration::from_secs(6));
        let now = ns.bytes_from_box();
        assert!(
            now - seen < 150_000,
            "the link was not narrowed: {}",
            now - seen
        );
        if let Some(status) = first.try_wait().expect("wait") {
            died = Some((4 + 6 * window, status));
            break;
        }
        assert!(now > seen, "no byte crossed the link in 6 s at 56 kbit/s");
        seen = now;
    }
    if died.is_none() {
        let _ = Command::new("kill")
            .args(["-INT", &first.id().to_string()])
            .status();
        assert!(
            wait_bounded(&mut first, Duration::from_secs(10)).is_some(),
            "Ctrl-C ends it"
        );
    }
    let said = scene.said("first.txt");
    let had = scene.left_behind();
    ns.widen();
    scene.resumes(&had);
    let big = said
        .lines()
        .find(|l| l.contains("/big.bin"))
        .unwrap_or_default();
    if let Some((secs, status)) = died {
        eprintln!(
            "ended {secs} s after the narrowing ({status}): {}",
            big.trim()
        );
        assert!(
            big.contains("connection lost: no answer to keepalives"),
            "a pull over a live 56 kbit/s link ended ({status}) without saying the link was lost; \
             its big file says: {}",
            big.trim()
        );
    }
}

#[test]
fn a_pull_cut_by_sshd_restarting_in_a_loop_resumes_whole() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("flappy");
    let run = stage(&sshd);
    let entry = lab.host_entry(&sshd);
    let scene = Scene::new(lab, run, entry, false);
    let mut first = scene.pull_under_way();
    for _ in 0..3 {
        sshd.restart();
        std::thread::sleep(Duration::from_millis(700));
    }
    let ended = ends_unfinished(&scene, &mut first);
    let had = scene.left_behind();
    scene.resumes(&had);
    ended_soon(ended);
}

/// A reboot: every process on the box gone at once, the box down for a few seconds, back with
/// a new boot id and the same host key.
#[test]
fn a_pull_cut_by_a_reboot_resumes_whole() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("rb");
    let run = stage(&sshd);
    let entry = lab.host_entry(&sshd);
    let scene = Scene::new(lab, run, entry, false);
    let mut first = scene.pull_under_way();
    sshd.kill();
    let ended = ends_unfinished(&scene, &mut first);
    let had = scene.left_behind();
    std::thread::sleep(Duration::from_secs(3));
    sshd.shim_boot_id("5e1f0c2a-7b3d-4e8f-9a6b-1c2d3e4f5a6b");
    sshd.restart();
    scene.resumes(&had);
    ended_soon(ended);
}

/// The connection cut mid-stream between here and a box that stays up (a NAT or an uplink
/// dropping it): the box's sessions end with it.
#[test]
fn a_pull_cut_mid_stream_resumes_whole() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("far");
    let run = stage(&sshd);
    let proxy = DelayProxy::start(sshd.port, Duration::from_millis(1));
    let entry = lab.host_entry_via(&sshd, proxy.port);
    let scene = Scene::new(lab, run, entry, false);
    let mut first = scene.pull_under_way();
    proxy.cut();
    let ended = ends_unfinished(&scene, &mut first);
    let had = scene.left_behind();
    scene.resumes(&had);
    ended_soon(ended);
}
