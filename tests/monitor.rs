//! Live monitoring over real sshd: one long-lived command per host (its two nvidia-smi loops and
//! the probe loop share one channel and one login shell, not a process per sample), the
//! nvidia-smi loops restarted on the box when they end, all of it resumed after a reconnect.

mod support;

use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::monitor::live;
use rigwatch::readings::GpuAvailability;
use rigwatch::readings::{Observation as HostUpdate, Update};
use rigwatch::transport::Pool;
use support::{GpuShim, Lab, wait_until};
use tokio::sync::mpsc;

const PERIOD: Duration = Duration::from_millis(400);

/// Collects updates for `host` until `done` says so or `limit` passes.
async fn collect(
    rx: &mut mpsc::Receiver<Update>,
    limit: Duration,
    mut done: impl FnMut(&[HostUpdate]) -> bool,
) -> Vec<HostUpdate> {
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < limit && !done(&seen) {
        if let Ok(Some(update)) = tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
        {
            seen.push(update.observation);
        }
    }
    seen
}

/// The live streams of one host named `box` (config `body`), over a fresh pool.
fn watch_box(
    lab: &Lab,
    body: String,
) -> (
    Pool,
    mpsc::Receiver<Update>,
    Vec<tokio::task::JoinHandle<()>>,
) {
    let path = lab.fleet("fleet.toml", "", &[("box", body)]);
    let fleet = fleet::load(&path).expect("fleet");
    let pool = Pool::start(&fleet);
    let (tx, rx) = mpsc::channel(1024);
    let link = pool.get("box").expect("link");
    let tasks = live::spawn(fleet.hosts[0].clone(), link.watch_session(), PERIOD, tx);
    (pool, rx, tasks)
}

fn count(updates: &[HostUpdate], f: impl Fn(&HostUpdate) -> bool) -> usize {
    updates.iter().filter(|u| f(u)).count()
}

fn is_gpu(u: &HostUpdate) -> bool {
    matches!(u, HostUpdate::Gpu(_))
}

fn is_host(u: &HostUpdate) -> bool {
    matches!(u, HostUpdate::Host(_))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gpu_process_and_one_probe_loop_feed_readings_and_restart_when_killed() {
    let mut lab = Lab::new();
    let mut host = lab.start_host("box");
    host.shim_nvidia_smi(&GpuShim::LOAD);
    host.shim_tmux(true);
    let (pool, mut rx, tasks) =
        watch_box(&lab, format!("{}\nrun = \"train\"", lab.host_entry(&host)));

    let updates = collect(&mut rx, Duration::from_secs(20), |u| {
        count(u, is_gpu) >= 4 && count(u, is_host) >= 4
    })
    .await;
    assert!(
        count(&updates, is_gpu) >= 4 && count(&updates, is_host) >= 4,
        "{updates:?}"
    );
    let HostUpdate::Gpu(reading) = updates.iter().rfind(|u| is_gpu(u)).expect("gpu") else {
        unreachable!()
    };
    assert_eq!(reading.gpus[0].sm_clock_mhz, Some(1365));
    let HostUpdate::Host(sample) = updates.iter().rfind(|u| is_host(u)).expect("host") else {
        unreachable!()
    };
    assert_eq!(sample.sample.tmux_panes[0].session, "train");
    assert!(sample.sample.uptime.is_some() && !sample.sample.mounts.is_empty());
    assert_eq!(
        sample.sample.gpu_processes.as_ref().map(|p| p[0].pid),
        Some(467)
    );
    assert_eq!(
        host.execs_seen(),
        1,
        "one long-lived command carries the GPUs, the compute apps and the probe, however many \
         samples"
    );

    // The box's nvidia-smi dies: the stream says so and is started again.
    host.kill_tool("nvidia-smi");
    let updates = collect(&mut rx, Duration::from_secs(20), |u| {
        u.iter()
            .any(|x| matches!(x, HostUpdate::GpuAvailability(GpuAvailability::Failing(_))))
            && u.iter()
                .rev()
                .take_while(|x| !matches!(x, HostUpdate::GpuAvailability(_)))
                .filter(|x| is_gpu(x))
                .count()
                >= 2
    })
    .await;
    assert!(
        updates
            .iter()
            .any(|x| matches!(x, HostUpdate::GpuAvailability(GpuAvailability::Failing(_)))),
        "{updates:?}"
    );
    assert_eq!(
        host.execs_seen(),
        1,
        "the box started its nvidia-smi again itself: no new command, no new login shell"
    );

    // sshd killed and back: the streams follow the pool onto the new connection.
    host.kill();
    host.restart();
    let back = wait_until(Duration::from_secs(20), || {
        pool.get("box").is_some_and(|l| l.state().is_usable())
    })
    .await;
    assert!(back.is_some());
    let updates = collect(&mut rx, Duration::from_secs(20), |u| {
        count(u, is_gpu) >= 2 && count(u, is_host) >= 2
    })
    .await;
    assert!(
        count(&updates, is_gpu) >= 2 && count(&updates, is_host) >= 2,
        "resumed: {updates:?}"
    );
    for task in tasks {
        task.abort();
    }
    pool.shutdown().await;
}

/// A box whose `~/.bashrc` costs what conda's does pays it once for monitoring, not once per
/// stream: the GPU loop, the compute-apps loop and the probe loop start from one login shell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_a_box_starts_one_login_shell_on_it() {
    let mut lab = Lab::new();
    let host = lab.start_host("box");
    host.shim_nvidia_smi(&GpuShim::LOAD);
    let log = host.log_login_shells();
    let (pool, mut rx, tasks) = watch_box(&lab, lab.host_entry(&host));
    let updates = collect(&mut rx, Duration::from_secs(20), |u| {
        count(u, is_gpu) >= 4
            && u.iter().any(|x| {
                matches!(x, HostUpdate::Host(r) if r.sample.gpu_processes.as_ref()
                    .is_some_and(|p| !p.is_empty()))
            })
    })
    .await;
    assert!(count(&updates, is_gpu) >= 4, "{updates:?}");
    let errors: Vec<_> = updates
        .iter()
        .filter(|u| matches!(u, HostUpdate::ProbeError(_)))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let shells = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(shells.lines().count(), 1, "login shells started:\n{shells}");
    for task in tasks {
        task.abort();
    }
    pool.shutdown().await;
    // The loops go with the channel: nothing rigwatch started is left on the box.
    let left = wait_until(Duration::from_secs(10), || {
        host.cpu_breakdown()
            .iter()
            .all(|(_, command, _)| command.contains("sshd") || command.contains("unshare"))
    })
    .await;
    assert!(
        left.is_some(),
        "left on the box: {:?}",
        host.cpu_breakdown()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_drivers_fall_back_and_boxes_without_nvidia_smi_say_so() {
    let mut lab = Lab::new();
    let old = lab.start_host("old");
    old.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/q_idle_csv.txt",
        apps: "h100/apps_idle.txt",
        legacy_driver: true,
    });
    let cpu = lab.start_host("cpu");
    let path = lab.fleet(
        "fleet.toml",
        "",
        &[("old", lab.host_entry(&old)), ("cpu", lab.host_entry(&cpu))],
    );
    let fleet = fleet::load(&path).expect("fleet");
    let pool = Pool::start(&fleet);
    let (tx_old, mut rx_old) = mpsc::channel(1024);
    let (tx_cpu, mut rx_cpu) = mpsc::channel(1024);
    let mut tasks = live::spawn(
        fleet.hosts[0].clone(),
        pool.get("old").expect("old").watch_session(),
        PERIOD,
        tx_old,
    );
    tasks.extend(live::spawn(
        fleet.hosts[1].clone(),
        pool.get("cpu").expect("cpu").watch_session(),
        PERIOD,
        tx_cpu,
    ));

    let updates = collect(&mut rx_old, Duration::from_secs(20), |u| {
        count(u, is_gpu) >= 2
    })
    .await;
    let HostUpdate::Gpu(reading) = updates
        .iter()
        .find(|u| is_gpu(u))
        .expect("readings after the fallback")
    else {
        unreachable!()
    };
    assert_eq!(reading.gpus[0].sm_clock_max_mhz, Some(1980));
    assert!(
        reading.gpus[0].event_reasons.is_some(),
        "legacy throttle field read"
    );

    let updates = collect(&mut rx_cpu, Duration::from_secs(20), |u| {
        u.iter()
            .any(|x| matches!(x, HostUpdate::GpuAvailability(GpuAvailability::NoNvidiaSmi)))
    })
    .await;
    assert!(
        updates
            .iter()
            .any(|x| matches!(x, HostUpdate::GpuAvailability(GpuAvailability::NoNvidiaSmi))),
        "{updates:?}"
    );
    assert!(!updates.iter().any(is_gpu));
    let blamed: Vec<_> = updates
        .iter()
        .filter(|u| matches!(u, HostUpdate::ProbeError(_)))
        .collect();
    assert!(
        blamed.is_empty(),
        "a box without GPUs is no error: {blamed:?}"
    );
    for task in tasks {
        task.abort();
    }
    pool.shutdown().await;
}

/// A stream that ends because the connection ended is the link's news, not the GPU's or the
/// probe's: killing sshd must not produce "nvidia-smi is failing" or "probe loop ended".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_link_is_not_blamed_on_the_gpu_or_the_probe() {
    let mut lab = Lab::new();
    let mut host = lab.start_host("box");
    host.shim_nvidia_smi(&GpuShim::LOAD);
    let (pool, mut rx, tasks) = watch_box(&lab, lab.host_entry(&host));
    let updates = collect(&mut rx, Duration::from_secs(20), |u| {
        count(u, is_gpu) >= 2 && count(u, is_host) >= 2
    })
    .await;
    assert!(count(&updates, is_gpu) >= 2, "{updates:?}");

    host.kill();
    let down = wait_until(Duration::from_secs(15), || {
        pool.get("box").is_some_and(|l| l.state().word() == "down")
    })
    .await;
    assert!(down.is_some(), "the link went down");
    // What the streams said while and after the link went: a few periods' worth.
    let updates = collect(&mut rx, Duration::from_secs(3), |_| false).await;
    let blamed: Vec<_> = updates
        .iter()
        .filter(|u| {
            matches!(u, HostUpdate::GpuAvailability(GpuAvailability::Failing(_)))
                || matches!(u, HostUpdate::ProbeError(_))
        })
        .collect();
    assert!(blamed.is_empty(), "blamed on the box: {blamed:?}");
    for task in tasks {
        task.abort();
    }
    pool.shutdown().await;
}
