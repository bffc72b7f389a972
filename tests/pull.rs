//! Pulling results home against a real sshd: a 1 GiB file and many small ones, a link that dies
//! mid-pull and a resume that re-sends no finished byte, and the ledger that records it.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::ledger::Ledger;
use rigwatch::pull::Depth;
use rigwatch::pull::local::{part_paths, sha256_file};
use rigwatch::pull::{Progress, PullJob, pull};
use rigwatch::transport::Pool;
use support::Lab;
use support::results::{box_to_pull, hash_logging_box, pull_fleet, pull_on, write_small};

const BIG: u64 = 1 << 30;

/// A pool on `config`, one pull of its host "box" against `previous`, then the pool shut down.
async fn pull_once(
    config: &rigwatch::config::FleetConfig,
    previous: Option<&rigwatch::ledger::PullRecord>,
) -> rigwatch::ledger::PullRecord {
    let (pool, session, spec) = box_to_pull(config).await;
    let record = pull_on(&session, &spec, previous).await;
    pool.shutdown().await;
    record
}

/// Bytes already on local disk for each remote file: a finished copy, a `.part`, or nothing.
fn on_disk(record: &rigwatch::ledger::PullRecord, dest: &std::path::Path) -> BTreeMap<String, u64> {
    record
        .files
        .iter()
        .map(|f| {
            let local = rigwatch::pull::names::to_path(&f.local_path);
            let have = std::fs::metadata(&local)
                .map(|m| m.len())
                .or_else(|_| std::fs::metadata(part_paths(dest, &local).0).map(|m| m.len()))
                .unwrap_or(0);
            (f.remote_path.clone(), have)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_cut_by_a_dead_link_resumes_without_resending_finished_bytes() {
    cut_and_resume(true).await;
}

/// The same on a box without SFTP, where big files come as streams read from byte N.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_cut_on_a_box_without_sftp_resumes_over_exec_without_resending() {
    cut_and_resume(false).await;
}

/// A 1 GiB checkpoint and 201 small files, the link killed a quarter of the way, the box back,
/// the pull again: every file whole, and only the bytes not already here crossed the link.
async fn cut_and_resume(with_sftp: bool) {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    if !with_sftp {
        sshd.without_sftp();
    }
    let run = sshd.dir.join("workspace/run");
    support::write_random(&run.join("final_ckpts/big.bin"), BIG, 0);
    write_small(&run, 200);
    let dest = lab.path("results/box");
    let config = fleet::load(&pull_fleet(&lab, &sshd, &run, &dest)).expect("fleet");
    let host = config.hosts[0].clone();
    let spec = host.pull.clone().expect("pull config");
    let mut ledger = Ledger::open(&lab.path("state/ledger.sqlite")).expect("ledger");

    let pool = Pool::start(&config);
    pool.settle(Duration::from_secs(20)).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    let progress = Arc::new(Progress::default());
    let first = {
        let progress = Arc::clone(&progress);
        let spec = spec.clone();
        tokio::spawn(
            async move { pull(&session, &PullJob::of("box", &spec, None), progress).await },
        )
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while progress.bytes_done.load(Ordering::Relaxed) < 256 << 20 {
        assert!(Instant::now() < deadline, "the first pull never got going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sshd.kill();
    let mut first = first
        .await
        .expect("task")
        .expect("a cut pull still returns its record");
    first.id = ledger.record_pull(&first).expect("record");
    pool.shutdown().await;
    let big_remote = run
        .join("final_ckpts/big.bin")
        .to_string_lossy()
        .into_owned();
    let big_first = first
        .files
        .iter()
        .find(|f| f.remote_path == big_remote)
        .expect("big in the first record");
    assert!(
        big_first.error.is_some(),
        "the cut pull must not call big.bin good"
    );
    assert!(!first.files.iter().all(|f| f.is_good()));

    let before = on_disk(&first, &dest);
    assert!(
        before[&big_remote] >= 128 << 20,
        "some of big.bin arrived: {before:?}"
    );
    assert!(before[&big_remote] < BIG);

    sshd.restart();
    let previous = ledger.latest_pull("box").expect("ledger read");
    let second = pull_once(&config, previous.as_ref()).await;

    assert_eq!(second.files.len(), 202, "{:?}", second.unmatched);
    every_file_good_and_only_missing_bytes_sent(&second, &before);
    for f in &second.files {
        assert_eq!(
            sha256_file(&rigwatch::pull::names::to_path(&f.local_path)).ok(),
            sha256_file(Path::new(&f.remote_path)).ok()
        );
    }
    let resent: u64 = second.files.iter().map(|f| f.sent).sum();
    let missing: u64 = second
        .files
        .iter()
        .map(|f| f.size - before.get(&f.remote_path).copied().unwrap_or(0))
        .sum();
    assert_eq!(resent, missing);
    assert!(dest.join("final_ckpts/big.bin").exists());
    assert!(dest.join("final_ckpts/cell007/metrics.json").exists());
    assert!(dest.join("metrics.jsonl").exists());
    assert!(
        !part_paths(&dest, &dest.join("final_ckpts/big.bin"))
            .0
            .exists()
    );

    ledger.record_pull(&second).expect("record second");
    let latest = ledger.latest_pull("box").expect("read").expect("one");
    assert!(latest.files.iter().all(|f| f.is_good()));
}

/// Small files travel as tar batches; a link cut while batches are in flight loses only those
/// batches: every file that landed is not sent again, every other file is sent whole, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_during_small_file_batches_resends_no_finished_file() {
    const FILES: usize = 4000;
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    let evals = run.join("final_ckpts/evals");
    std::fs::create_dir_all(&evals).expect("dirs");
    for i in 0..FILES {
        let line = format!("{{\"cell\": {i}, \"loss\": 0.{i:04}}}\n");
        std::fs::write(evals.join(format!("e{i:04}.jsonl")), line.repeat(500)).expect("eval");
    }
    std::fs::write(run.join("metrics.jsonl"), "{\"step\": 1}\n").expect("jsonl");
    // Every batch's tar but the first waits, so the cut falls between batches however fast
    // the box is (a box that no longer hashes them sent all 4 000 before the cut came).
    let first_tar = sshd.dir.join("first-tar");
    sshd.shim_script(
        "tar",
        &format!(
            "#!/bin/sh\nmkdir '{}' 2>/dev/null || sleep 5\nexec /usr/bin/tar \"$@\"\n",
            first_tar.display()
        ),
    );
    let dest = lab.path("results/box");
    let config = fleet::load(&pull_fleet(&lab, &sshd, &run, &dest)).expect("fleet");
    let spec = config.hosts[0].pull.clone().expect("pull config");

    let pool = Pool::start(&config);
    pool.settle(Duration::from_secs(20)).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    let progress = Arc::new(Progress::default());
    let first = {
        let (progress, spec) = (Arc::clone(&progress), spec.clone());
        tokio::spawn(
            async move { pull(&session, &PullJob::of("box", &spec, None), progress).await },
        )
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while progress.bytes_done.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "no batch ever landed");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    sshd.kill();
    let first = first.await.expect("task").expect("a cut pull returns");
    pool.shutdown().await;
    let before = on_disk(&first, &dest);
    let landed = before.values().filter(|&&n| n > 0).count();
    eprintln!("landed before the cut: {landed} of {FILES}");
    assert!(
        landed > 0 && landed < FILES,
        "the cut must fall between batches: {landed} of {FILES} landed"
    );
    assert!(
        !before.keys().any(|p| p.ends_with(".part")),
        "nothing half-written under a final name"
    );

    sshd.shim_script("tar", "#!/bin/sh\nexec /usr/bin/tar \"$@\"\n");
    sshd.restart();
    let second = pull_once(&config, Some(&first)).await;
    assert_eq!(second.files.len(), FILES + 1);
    // A file whose batch was cut is handed to SFTP, which may have left a `.part` when the
    // link died: it resumes like any other, so only the bytes not yet here may travel.
    every_file_good_and_only_missing_bytes_sent(&second, &before);
}

/// Every file of a resumed pull is good, and sent exactly the bytes `before` did not have.
fn every_file_good_and_only_missing_bytes_sent(
    pull: &rigwatch::ledger::PullRecord,
    before: &BTreeMap<String, u64>,
) {
    for f in &pull.files {
        assert!(
            f.is_good(),
            "{}: {:?} {}",
            f.remote_path,
            f.error,
            f.verification
        );
        let had = before.get(&f.remote_path).copied().unwrap_or(0);
        assert_eq!(
            f.sent,
            f.size - had,
            "{}: only the bytes not already here cross the link",
            f.remote_path
        );
    }
}

/// A small file whose bytes arrive other than the box holds them (a tar that mangles its
/// stream, as a bad disk or a broken pipe would) is recorded with the hash of what arrived,
/// which is not the box's file: the teardown's final check re-hashes every proven file on the
/// box and refuses on it (DESIGN.md rule 4: for a file carried in a stream, that re-hash
/// stands for the box's hash at pull time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_file_that_arrives_wrong_is_refused_by_the_final_check() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    write_small(&run, 5);
    sshd.shim_script(
        "tar",
        "#!/bin/sh\n/usr/bin/tar \"$@\" | sed 's/acc/ACC/g'\n",
    );
    let dest = lab.path("results/box");
    let config = fleet::load(&pull_fleet(&lab, &sshd, &run, &dest)).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let record = pull_on(&session, &spec, None).await;
    let cells = || {
        record
            .files
            .iter()
            .filter(|f| f.remote_path.ends_with("metrics.json"))
    };
    assert_eq!(cells().count(), 5);
    for f in cells() {
        let local = rigwatch::pull::names::to_path(&f.local_path);
        let here = std::fs::read_to_string(&local).expect("the copy");
        assert!(here.contains("ACC"), "the mangled bytes arrived: {here}");
        assert_eq!(f.remote_sha256, f.local_sha256, "{f:?}");
    }
    let host = &config.hosts[0];
    let stat = rigwatch::pull::check_host(Some(&session), host, Some(&record), Depth::Stat).await;
    assert!(stat.is_current(), "by stat nothing changed: {stat:?}");
    let content =
        rigwatch::pull::check_host(Some(&session), host, Some(&record), Depth::Content).await;
    pool.shutdown().await;
    let words = format!("{content:?}");
    assert!(!content.is_current(), "{words}");
    for f in cells() {
        let name = f.remote_path.rsplit('/').nth(1).expect("cell folder");
        assert!(words.contains(name), "{name} named in {words}");
    }
}

/// A box whose tar is missing or fails: every small file still comes home, by SFTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_box_without_a_working_tar_still_pulls_every_small_file() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    write_small(&run, 30);
    sshd.shim_script("tar", "#!/bin/sh\necho 'tar: not found' >&2\nexit 127\n");
    let dest = lab.path("results/box");
    let config = fleet::load(&pull_fleet(&lab, &sshd, &run, &dest)).expect("fleet");
    let record = pull_once(&config, None).await;
    assert_eq!(record.files.len(), 31);
    for f in &record.files {
        assert!(f.is_good(), "{}: {:?}", f.remote_path, f.error);
        assert_eq!(f.sent, f.size, "{}", f.remote_path);
    }
}

/// sshd starts the login user's shell for every exec channel and for the SFTP subsystem (a real
/// box's sftp-server): with conda's block in `~/.bashrc` each start costs ~0.15 s of the box's
/// CPU. A connection asks everything of one helper shell and keeps one SFTP channel, so 500
/// small files and a 64 MiB checkpoint start two (the helper and sftp-server), and a second
/// pull over the same connection starts none. A connection that opened no SFTP channel (one
/// that does not pull as it connects) opens none for a host whose last pull had no file too
/// big for tar: one shell, as rsync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_starts_at_most_two_login_shells_on_the_box() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    sshd.external_sftp();
    let log = sshd.log_login_shells();
    let run = sshd.dir.join("workspace/run");
    support::write_random(&run.join("final_ckpts/big.bin"), 64 << 20, 3);
    write_small(&run, 499);
    let dest = lab.path("results/box");
    let config = fleet::load(&pull_fleet(&lab, &sshd, &run, &dest)).expect("fleet");
    let shells = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (pool, session, spec) = box_to_pull(&config).await;
    let record = pull_on(&session, &spec, None).await;
    assert_eq!(record.files.len(), 501);
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let started = shells();
    assert!(
        !started.is_empty() && started.len() <= 2,
        "{} login shells: {started:#?}",
        started.len()
    );
    // The same connection's next pull, of a checkpoint written again, starts none.
    support::write_random(&run.join("final_ckpts/big.bin"), 4 << 20, 5);
    let again = pull_on(&session, &spec, Some(&record)).await;
    assert!(again.files.iter().all(|f| f.is_good()), "{again:?}");
    assert_eq!(shells(), started, "the second pull started a shell");
    pool.shutdown().await;

    // The run's folder now holds small files only. Over a connection that opened no SFTP
    // channel, the pull after the one that saw it opens none unless a file needs it.
    std::fs::remove_file(run.join("final_ckpts/big.bin")).expect("rm");
    let watching = Pool::start(&config);
    watching.settle(Duration::from_secs(30)).await;
    let session = watching
        .get("box")
        .and_then(|l| l.session())
        .expect("session");
    let small_only = pull_on(&session, &spec, Some(&again)).await;
    std::fs::write(run.join("final_ckpts/extra.json"), b"{\"extra\": 1}\n").expect("write");
    let before = shells().len();
    let extra_pulled = pull_on(&session, &spec, Some(&small_only)).await;
    assert!(
        extra_pulled.files.iter().all(|f| f.is_good()),
        "{extra_pulled:?}"
    );
    let extra = dest.join("final_ckpts/extra.json");
    assert_eq!(std::fs::read(&extra).expect("pulled"), b"{\"extra\": 1}\n");
    let started = shells().split_off(before);
    assert!(started.is_empty(), "login shells: {started:#?}");
    // A checkpoint that appears again still comes, over the channel opened when it is listed.
    support::write_random(&run.join("final_ckpts/big.bin"), 4 << 20, 4);
    let back = pull_on(&session, &spec, Some(&extra_pulled)).await;
    watching.shutdown().await;
    assert!(back.files.iter().all(|f| f.is_good()), "{back:?}");
    let big = back
        .files
        .iter()
        .find(|f| f.remote_path.ends_with("/big.bin"));
    assert_eq!(big.map(|f| f.sent), Some(4 << 20), "{back:?}");
}

/// A file carried in a tar stream is not hashed on the box during the pull: the hash taken
/// here over the bytes received is the one recorded (DESIGN.md rule 4). The box's second look
/// after tar read it, and the teardown's re-hash on the box against the record, stand for the
/// box's side; a separate `sha256sum` over every small file was 28 % of the box's CPU in a
/// 100 000-file pull.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tar_carried_file_is_hashed_here_not_on_the_box() {
    let mut lab = Lab::new();
    let (_sshd, log, _, fleet) = hash_logging_box(&mut lab, 300);
    let config = fleet::load(&fleet).expect("fleet");
    let record = pull_once(&config, None).await;
    assert_eq!(record.files.len(), 301);
    assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
    let hashed = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(hashed, "", "the box hashed tar-carried files");
    for f in &record.files {
        assert!(f.local_sha256.is_some(), "{f:?}");
        assert_eq!(f.remote_sha256, f.local_sha256, "{f:?}");
    }
}

/// A copy that does not load never replaces an earlier one that does, on the path most small
/// files take (tar, then checked and renamed where the `.part` waits): a results JSON cut on
/// the box after a pull that proved it stays home as it was, the cut version waiting as its
/// `.part` and its record saying why; a file that does not load with no earlier copy does not
/// take its name either (a file browser would show it as the result): it waits as a complete
/// `.part`, its record saying it failed and where it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_that_does_not_load_never_replaces_one_that_does() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    std::fs::create_dir_all(&run).expect("run");
    let good = "{\"loss\": 0.5}\n";
    std::fs::write(run.join("metrics.json"), good).expect("metrics");
    let dest = lab.path("results/box");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n",
        lab.host_entry(&sshd),
        run.display(),
        dest.display()
    );
    let config = fleet::load(&lab.fleet("fleet.toml", "", &[("box", body)])).expect("fleet");
    let first = pull_once(&config, None).await;
    assert!(first.files.iter().all(|f| f.verified), "{first:?}");
    std::fs::write(run.join("metrics.json"), "{\"loss\": 0.").expect("cut");
    std::fs::write(run.join("new.json"), "{\"loss\"").expect("new");
    let second = pull_once(&config, Some(&first)).await;
    let record = |name: &str| {
        let found = second.files.iter().find(|f| f.remote_path.ends_with(name));
        found.unwrap_or_else(|| panic!("no record of {name}: {second:?}"))
    };
    let kept = record("metrics.json");
    let why = kept.error.as_deref().unwrap_or_default();
    assert!(!kept.verified, "{kept:?}");
    assert!(
        why.contains("the earlier copy, which loads, was kept"),
        "{why}"
    );
    let local = rigwatch::pull::names::to_path(&kept.local_path);
    assert_eq!(std::fs::read_to_string(&local).expect("kept"), good);
    let waiting = std::fs::read_to_string(part_paths(&dest, &local).0).expect("part");
    assert_eq!(waiting, "{\"loss\": 0.");
    let new = record("new.json");
    let why = new.error.as_deref().unwrap_or_default();
    assert!(!new.verified, "{new:?}");
    assert!(!new.verification.is_empty(), "{new:?}");
    assert!(
        why.contains("not under its name, until a copy that loads is pulled"),
        "{why}"
    );
    let named = rigwatch::pull::names::to_path(&new.local_path);
    assert!(
        !named.exists(),
        "a copy that does not load is not at {named:?}"
    );
    let waiting = std::fs::read_to_string(part_paths(&dest, &named).0).expect("part");
    assert_eq!(waiting, "{\"loss\"");
}
