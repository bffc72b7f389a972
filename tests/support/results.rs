//! A run's results on a lab box, as a sweep leaves them, and a fleet that pulls them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rigwatch::config::{FleetConfig, PullConfig};
use rigwatch::transport::{Pool, Session};

use super::{Lab, Sshd};

/// `count` cells' metrics, a folder each (`final_ckpts/cellNNN/metrics.json`), and a
/// `metrics.jsonl` beside them.
pub fn write_small(run: &Path, count: usize) {
    for i in 0..count {
        let dir = run.join(format!("final_ckpts/cell{i:03}"));
        std::fs::create_dir_all(&dir).expect("dirs");
        std::fs::write(
            dir.join("metrics.json"),
            format!("{{\"cell\": {i}, \"acc\": 0.{i}}}\n"),
        )
        .expect("small");
    }
    std::fs::write(run.join("metrics.jsonl"), "{\"step\": 1}\n{\"step\": 2}\n").expect("jsonl");
}

/// A fleet whose host "box" pulls `run`'s `final_ckpts` and `*.jsonl` into `dest`.
pub fn pull_fleet(lab: &Lab, sshd: &Sshd, run: &Path, dest: &Path) -> PathBuf {
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\", \"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry(sshd),
        run.join("final_ckpts").display(),
        run.join("*.jsonl").display(),
        dest.display()
    );
    lab.fleet("fleet.toml", "", &[("box", body)])
}

/// A box "box" whose `sha256sum` logs each file it hashes, one a line, with `count` cells'
/// results (`write_small`) in its run folder: the box, the log, the run folder, and a fleet that
/// pulls them into the lab's `results/box`.
pub fn hash_logging_box(lab: &mut Lab, count: usize) -> (Sshd, PathBuf, PathBuf, PathBuf) {
    let sshd = lab.start_host("box");
    let log = sshd.dir.join("hashed.log");
    sshd.shim_logging_args("sha256sum", &log);
    let run = sshd.dir.join("workspace/run");
    write_small(&run, count);
    let fleet = pull_fleet(lab, &sshd, &run, &lab.path("results/box"));
    (sshd, log, run, fleet)
}

/// A fleet file `name` whose host "box" is reached through `port` (a delay proxy's) and pulls
/// `folder` into the lab's `results/box`, with `[host.pull] verify` where one is given.
pub fn pull_fleet_via(
    lab: &Lab,
    (sshd, port): (&Sshd, u16),
    folder: &Path,
    verify: Option<&str>,
    name: &str,
) -> PathBuf {
    let verify = verify.map_or(String::new(), |v| format!("\nverify = \"{v}\""));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"{verify}",
        lab.host_entry_via(sshd, port),
        folder.display(),
        lab.path("results/box").display()
    );
    lab.fleet(name, "", &[("box", body)])
}

/// `rigwatch pull box` on `fleet` as a person runs it, which must succeed: what it printed.
pub fn pull_box(lab: &Lab, fleet: &Path) -> String {
    let out = lab
        .rigwatch_on(fleet)
        .args(["pull", "box"])
        .output()
        .expect("rigwatch pull");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

/// `count` files of ~40 bytes, `per_folder` to a folder (`dNNN/mNNNNNN.json`), as a sweep's
/// per-cell metrics are.
pub fn write_cells(dir: &Path, count: usize, per_folder: usize) {
    for i in 0..count {
        let sub = dir.join(format!("d{:03}", i / per_folder));
        if i % per_folder == 0 {
            std::fs::create_dir_all(&sub).expect("dir");
        }
        let text = format!(
            "{{\"cell\": {i}, \"loss\": 0.{:06}}}\n",
            i * 7919 % 1_000_000
        );
        std::fs::write(sub.join(format!("m{i:06}.json")), text).expect("file");
    }
}

/// A pool on `config`, settled, with its host "box"'s session and pull settings: what every
/// pull in the tests and benches starts from.
pub async fn box_to_pull(config: &FleetConfig) -> (Pool, Arc<Session>, PullConfig) {
    let spec = config.hosts[0].pull.clone().expect("pull config");
    let pool = Pool::start_for_pulls(config);
    pool.settle(Duration::from_secs(30)).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    (pool, session, spec)
}

/// One pull of "box" over `session`, against `previous`: every file's record kept.
pub async fn pull_on(
    session: &Session,
    spec: &PullConfig,
    previous: Option<&rigwatch::ledger::PullRecord>,
) -> rigwatch::ledger::PullRecord {
    let job = rigwatch::pull::PullJob::of("box", spec, previous);
    let progress = Arc::new(rigwatch::pull::Progress::default());
    rigwatch::pull::pull(session, &job, progress)
        .await
        .expect("pull")
}

/// A pull of "box" over `session`, against `previous`, whose listing stalls in a pull path that
/// names `*.jsonl` (the box's `readlink` of the glob waits for a file, at most 20 s), so what a
/// pull does while the box still lists shows: `listed_meanwhile` is waited for (up to 15 s)
/// before the listing goes on. The pull's record, and how long `listed_meanwhile` took to hold
/// (None: it never did while the box listed).
pub async fn pull_while_listing_stalls(
    (sshd, session): (&Sshd, &Arc<Session>),
    spec: &PullConfig,
    previous: Option<rigwatch::ledger::PullRecord>,
    listed_meanwhile: impl Fn(&rigwatch::pull::Progress) -> bool,
) -> (rigwatch::ledger::PullRecord, Option<Duration>) {
    let go = sshd.dir.join("go");
    sshd.shim_script(
        "readlink",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *.jsonl*) n=0; \
             while [ ! -e '{}' ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done;; esac\n\
             PATH=/usr/local/bin:/usr/bin:/bin exec readlink \"$@\"\n",
            go.display()
        ),
    );
    let progress = Arc::new(rigwatch::pull::Progress::default());
    let pulled = {
        let (session, spec, progress) = (session.clone(), spec.clone(), progress.clone());
        tokio::spawn(async move {
            let job = rigwatch::pull::PullJob::of("box", &spec, previous.as_ref());
            rigwatch::pull::pull(&session, &job, progress).await
        })
    };
    let meanwhile =
        super::wait_until(Duration::from_secs(15), || listed_meanwhile(&progress)).await;
    std::fs::write(&go, "").expect("go");
    let record = pulled.await.expect("task").expect("pull");
    (record, meanwhile)
}

/// How a measured pull is run.
#[derive(Clone, Copy)]
pub enum Way {
    /// `pull`: every record kept and returned.
    Kept,
    /// As the CLI and the dashboard pull (`pull_and_record`): the records go to the ledger.
    Recorded,
}

/// The heap's peak during one pull of `count` cells by `way`, above its level when the pull
/// began, as `heap` counts it (the test binary's allocator: now, and the highest so far; pulls
/// measured one after another must grow, or the peak is an earlier one's). Every file must
/// come home verified.
pub async fn peak_of_pull(
    lab: &Lab,
    sshd: &Sshd,
    count: usize,
    way: Way,
    heap: fn() -> (usize, usize),
) -> usize {
    let run = lab.path(&format!("run-{count}"));
    write_cells(&run, count, 500);
    let dest = lab.path(&format!("home-{count}"));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n",
        lab.host_entry(sshd),
        run.display(),
        dest.display()
    );
    let config = rigwatch::config::fleet::load(&lab.fleet(
        &format!("fleet-{count}.toml"),
        "",
        &[("box", body)],
    ))
    .expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let ledger_path = lab.path(&format!("ledger-{count}.sqlite"));
    let mut ledger = rigwatch::ledger::Ledger::open(&ledger_path).expect("ledger");
    let progress = Arc::new(rigwatch::pull::Progress::default());
    let (before, _) = heap();
    let (peak, record) = match way {
        Way::Kept => {
            let job = rigwatch::pull::PullJob::of("box", &spec, None);
            let record = rigwatch::pull::pull(&session, &job, progress).await;
            (heap().1.saturating_sub(before), record.expect("pull"))
        }
        Way::Recorded => {
            let host = &config.hosts[0];
            let held = lab.pull_lock(&host.name);
            let pulled = rigwatch::pull::pull_and_record(
                &session,
                host,
                &spec,
                &mut ledger,
                progress,
                &held,
            )
            .await;
            // The peak before the record is read back whole to be checked.
            let peak = heap().1.saturating_sub(before);
            let id = pulled.expect("pull").id;
            let record = ledger.latest_pull("box").expect("ledger").expect("one");
            assert_eq!(record.id, id);
            (peak, record)
        }
    };
    let verified = record.files.iter().filter(|f| f.verified).count();
    assert_eq!(
        (verified, record.files.len()),
        (count, count),
        "every file pulled: {:?}",
        record.files.iter().find(|f| !f.verified)
    );
    drop(record);
    pool.shutdown().await;
    peak
}

/// What the extra files of the larger of two pulls (smaller first) cost at the peak, per file.
pub async fn peak_per_file(
    lab: &Lab,
    sshd: &Sshd,
    (small, large): (usize, usize),
    way: Way,
    heap: fn() -> (usize, usize),
) -> usize {
    let low = peak_of_pull(lab, sshd, small, way, heap).await;
    let high = peak_of_pull(lab, sshd, large, way, heap).await;
    let per_file = high.saturating_sub(low) / (large - small);
    eprintln!("peak heap: {low} B for {small} files, {high} B for {large}: {per_file} B per file");
    per_file
}
