//! The box's sftp-server dying in the middle of a copy while the connection lives (killed, out
//! of memory): the copy learns it from the channel's end, not from its reads' idle timeout
//! (two minutes): the pull ends saying so, what arrived kept in the `.part`, and the next pull
//! on the same connection finishes it on a new channel from there.

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::pull::{Progress, PullJob, pull};
use support::Lab;
use support::delay::DelayProxy;
use support::results::{box_to_pull, pull_fleet_via, pull_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_whose_sftp_server_dies_ends_at_once_and_the_next_pull_resumes_it() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    sshd.external_sftp();
    let folder = sshd.dir.join("workspace/run/final_ckpts");
    support::write_random(&folder.join("ckpt.bin"), 64 << 20, 11);
    // 8 MiB/s: the copy takes ~8 s, time enough to kill its server half way.
    let proxy = DelayProxy::start_limited(sshd.port, Duration::from_millis(5), Some(8 << 20));
    let check = Some("test -s {file}");
    let fleet = pull_fleet_via(&lab, (&sshd, proxy.port), &folder, check, "far.toml");
    let config = fleet::load(&fleet).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let progress = Arc::new(Progress::default());
    let running = {
        let (progress, spec, session) = (Arc::clone(&progress), spec.clone(), session.clone());
        tokio::spawn(
            async move { pull(&session, &PullJob::of("box", &spec, None), progress).await },
        )
    };
    let copying = || progress.bytes_done.load(Ordering::Relaxed) >= 4 << 20;
    support::wait_until(Duration::from_secs(60), copying).await;
    assert!(copying(), "the copy never got going");
    // Its own box's sftp-server, by its pid here (the box has a process namespace of its own).
    let servers = || -> Vec<u32> {
        let listed = sshd.cpu_breakdown().into_iter();
        listed
            .filter(|(_, command, _)| command.contains("sftp-server"))
            .map(|(pid, ..)| pid)
            .collect()
    };
    let server = servers();
    assert_eq!(server.len(), 1, "{:?}", sshd.cpu_breakdown());
    let killed = std::process::Command::new("kill")
        .args(["-9", &server[0].to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let began = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(150), running).await;
    let took = began.elapsed();
    let record = ended
        .expect("the pull ended")
        .expect("task")
        .expect("a record");
    // Not a speed bound: the reads' idle timeout is 120 s, which this must not wait for (it
    // did: 120.6 s).
    assert!(
        took < Duration::from_secs(30),
        "the pull ended {took:?} after its sftp-server died"
    );
    assert_eq!(record.files.len(), 1, "{record:?}");
    let said = record.files[0].error.clone().unwrap_or_default();
    assert!(said.contains("sftp-server ended"), "{record:?}");

    let again = pull_on(&session, &spec, Some(&record)).await;
    let now = servers();
    pool.shutdown().await;
    assert!(again.files[0].is_good(), "{again:?}");
    assert!(
        again.files[0].sent < 64 << 20,
        "the resumed pull sent everything: {again:?}"
    );
    let pulled = std::fs::read(&again.files[0].local_path).expect("pulled");
    let sent = std::fs::read(folder.join("ckpt.bin")).expect("sent");
    assert!(pulled == sent, "the pulled checkpoint differs");
    assert!(
        !now.is_empty() && !now.contains(&server[0]),
        "no second sftp-server finished the copy: {now:?}"
    );
}
