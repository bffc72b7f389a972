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
    let pool = Pool::start(config);
    pool.settle(Duration::from_secs(30)).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    (pool, session, spec)
}
