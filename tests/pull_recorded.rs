//! Pulls as the CLI and the dashboard run them (`pull_and_record`): the records go into the
//! ledger a chunk at a time, and a re-pull finds each file's last record there a chunk at a
//! time. Against a real sshd.

mod support;

use std::sync::Arc;

use rigwatch::ledger::Ledger;
use rigwatch::pull::{Progress, pull_and_record};
use support::Lab;
use support::results::{box_to_pull, write_cells};

/// 5 000 files (three chunks): a re-pull sends only the one file that changed on the box,
/// every record is in the ledger, and the changed file's new bytes are home.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_repull_sends_only_what_changed_in_any_chunk() {
    const FILES: usize = 5_000;
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = lab.path("run");
    write_cells(&run, FILES, 500);
    let dest = lab.path("home");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n",
        lab.host_entry(&sshd),
        run.display(),
        dest.display()
    );
    let config = rigwatch::config::fleet::load(&lab.fleet("fleet.toml", "", &[("box", body)]))
        .expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let mut ledger = Ledger::open(&lab.path("ledger.sqlite")).expect("ledger");
    let host = &config.hosts[0];
    let progress = || Arc::new(Progress::default());
    let held = lab.pull_lock(&host.name);

    let first = pull_and_record(&session, host, &spec, &mut ledger, progress(), &held)
        .await
        .expect("first pull");
    assert_eq!(first.tally.files, FILES);
    assert!(first.all_proven(), "{first:?}");

    let changed = run.join("d009/m004999.json");
    std::fs::write(
        &changed,
        "{\"cell\": 4999, \"loss\": 0.5, \"again\": true}\n",
    )
    .expect("edit");
    let second = pull_and_record(&session, host, &spec, &mut ledger, progress(), &held)
        .await
        .expect("second pull");
    assert!(second.all_proven(), "{second:?}");
    assert_eq!(second.tally.files, FILES);

    let record = ledger
        .latest_pull("box")
        .expect("ledger")
        .expect("recorded");
    assert_eq!(record.id, second.id);
    assert_eq!(record.files.len(), FILES);
    let sent: Vec<&str> = record
        .files
        .iter()
        .filter(|f| f.sent > 0)
        .map(|f| f.remote_path.as_str())
        .collect();
    assert_eq!(
        sent,
        vec![changed.to_string_lossy()],
        "only the edited file crosses again"
    );
    let home = record
        .files
        .iter()
        .find(|f| f.sent > 0)
        .map(|f| rigwatch::pull::names::to_path(&f.local_path))
        .expect("its copy");
    assert_eq!(
        std::fs::read(home).expect("home copy"),
        std::fs::read(&changed).expect("box copy")
    );
    pool.shutdown().await;
}
