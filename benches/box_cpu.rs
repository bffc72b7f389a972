//! What monitoring costs the monitored box, and what `status` costs in wall time.
//! Run: `cargo bench --bench box_cpu`. Prints markdown tables; BENCHMARKS.md records a run.
//!
//! 1. CPU seconds spent ON THE BOX (sshd and everything under it) per minute of monitoring at a
//!    2 s period: rigwatch's one long-lived command vs the same probe by a fresh `ssh` per poll
//!    vs by OpenSSH ControlMaster.
//! 2. 20 boxes whose `nvidia-smi` is a stand-in costing 30 ms of CPU per start (as a real one
//!    does): the probe's CPU per box, and the whole machine's cost of watching them (every box
//!    plus rigwatch itself) against a fresh `ssh` per host per poll (every box plus the clients).
//! 3. `rigwatch status` wall time on 1, 10 and 50 hosts vs a fresh `ssh` per host running the
//!    same one-shot probe.
//!
//! `RIGWATCH_BENCH_HOME=conda` gives the boxes of parts 1 and 2 a login shell that costs ~0.15 s
//! of CPU at every start (conda's block in ~/.bashrc); `RIGWATCH_BENCH_ONLY=one` runs part 1
//! alone, `RIGWATCH_BENCH_ONLY=twenty` part 2. Part 2 also says what the start costs: the login
//! shells sshd ran and the CPU of the first 10 s.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rigwatch::config::{HostConfig, fleet};
use rigwatch::monitor::commands::{new_nonce, probe_command};
use rigwatch::monitor::live;
use rigwatch::probe::script::sh_quote;
use rigwatch::readings::Observation;
use rigwatch::transport::Pool;
use support::{GpuShim, Lab, Sshd};
use tokio::sync::mpsc;

const PERIOD: Duration = Duration::from_secs(2);
const WINDOW: Duration = Duration::from_secs(30);

/// The one-shot probe a script would run per poll: the GPU query and the probe script, its
/// settings piped to its stdin as rigwatch sends them.
fn one_shot(host: &HostConfig) -> String {
    let probe = probe_command(host, &new_nonce());
    let input = String::from_utf8_lossy(&probe.input);
    format!("printf %s {} | {}", sh_quote(&input), probe.line)
}

/// With RIGWATCH_BENCH_BREAKDOWN set: CPU ticks per process on `host` since `before`.
fn print_breakdown(host: &Sshd, before: &[(u32, String, u64)]) {
    if std::env::var_os("RIGWATCH_BENCH_BREAKDOWN").is_none() {
        return;
    }
    for (pid, comm, ticks) in host.cpu_breakdown() {
        let was = before.iter().find(|b| b.0 == pid).map_or(0, |b| b.2);
        eprintln!("{pid:>7} {:>5} ticks  {comm}", ticks - was);
    }
}

/// The one-shot probe on every host at once, each by a fresh `ssh`, as a script would poll.
fn fresh_ssh_round(lab: &Lab, hosts: &[Sshd], configs: &[HostConfig]) {
    let children: Vec<_> = hosts
        .iter()
        .zip(configs)
        .map(|(h, cfg)| {
            lab.openssh(h, None)
                .arg(one_shot(cfg))
                .spawn()
                .expect("ssh")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success());
    }
}

/// Box CPU seconds over WINDOW while `poll` runs every PERIOD.
fn box_cpu_polling(host: &Sshd, mut poll: impl FnMut()) -> f64 {
    let before = host.cpu_seconds();
    let start = Instant::now();
    while start.elapsed() < WINDOW {
        let tick = Instant::now();
        poll();
        std::thread::sleep(PERIOD.saturating_sub(tick.elapsed()));
    }
    host.cpu_seconds() - before
}

const BOXES: usize = 20;
/// The start's window: connections are up before it; the streams start at its beginning.
const START: Duration = Duration::from_secs(10);

fn conda_home() -> bool {
    std::env::var("RIGWATCH_BENCH_HOME").as_deref() == Ok("conda")
}

fn twenty_boxes(lab: &mut Lab, runtime: &tokio::runtime::Runtime) {
    let boxes: Vec<Sshd> = (0..BOXES)
        .map(|i| {
            let h = lab.start_host(&format!("c{i}"));
            h.real_df();
            h.shim_costly_nvidia_smi(
                &GpuShim {
                    query_gpu: "h100/q_load_csv.txt",
                    apps: "h100/apps_load.txt",
                    legacy_driver: false,
                },
                Duration::from_millis(30),
            );
            h.shim_tmux(true);
            if conda_home() {
                h.conda_like_home();
            }
            h
        })
        .collect();
    let entries: Vec<(&str, String)> = boxes
        .iter()
        .map(|h| {
            (
                h.name.as_str(),
                format!("{}\nrun = \"train\"\nmounts = [\"/\"]", lab.host_entry(h)),
            )
        })
        .collect();
    let config = lab.fleet("twenty.toml", "", &entries);
    let fleet = fleet::load(&config).expect("fleet");
    let boxes_cpu = || boxes.iter().map(Sshd::cpu_seconds).sum::<f64>();

    let (ours_box, ours_self) = runtime.block_on(async {
        let pool = Pool::start(&fleet);
        pool.settle(Duration::from_secs(30)).await;
        let (tx, mut rx) = mpsc::channel(65536);
        let mut tasks = Vec::new();
        // The start: every box's login shell and the loops' first nvidia-smi (30 ms each).
        let (start_box, start_self) = (boxes_cpu(), support::own_cpu().0);
        let execs_before: usize = boxes.iter().map(Sshd::execs_seen).sum();
        for host in &fleet.hosts {
            let link = pool.get(&host.name).expect("link");
            tasks.extend(live::spawn(
                host.clone(),
                link.watch_session(),
                PERIOD,
                tx.clone(),
            ));
        }
        // Counts probe readings, so a loop that stopped cycling cannot pass for a cheap one.
        let readings = Arc::new(AtomicU64::new(0));
        let drain = tokio::spawn({
            let readings = Arc::clone(&readings);
            async move {
                while let Some(update) = rx.recv().await {
                    if matches!(update.observation, Observation::Host(_)) {
                        readings.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        tokio::time::sleep(START).await;
        let (box_before, self_before) = (boxes_cpu(), support::own_cpu().0);
        let shells = boxes.iter().map(Sshd::execs_seen).sum::<usize>() - execs_before;
        println!(
            "start, first {} s: {shells} login shells on {BOXES} boxes; boxes {:.2} CPU-s, \
             rigwatch {:.2} CPU-s, whole {:.2} CPU-s",
            START.as_secs(),
            box_before - start_box,
            self_before - start_self,
            box_before - start_box + self_before - start_self
        );
        let readings_before = readings.load(Ordering::Relaxed);
        let parts_before = boxes[0].cpu_breakdown();
        tokio::time::sleep(WINDOW).await;
        let used = (boxes_cpu() - box_before, support::own_cpu().0 - self_before);
        let cycles = readings.load(Ordering::Relaxed) - readings_before;
        let expected = (WINDOW.as_secs_f64() / PERIOD.as_secs_f64()) as u64 * BOXES as u64;
        println!("probe readings in the window: {cycles} (one per box per period: {expected})");
        assert!(
            cycles * 10 >= expected * 9,
            "the probe loops stopped cycling"
        );
        print_breakdown(&boxes[0], &parts_before);
        for t in tasks {
            t.abort();
        }
        drain.abort();
        pool.shutdown().await;
        used
    });

    let (box_before, clients_before) = (boxes_cpu(), support::own_cpu().1);
    let start = Instant::now();
    while start.elapsed() < WINDOW {
        let tick = Instant::now();
        fresh_ssh_round(lab, &boxes, &fleet.hosts);
        std::thread::sleep(PERIOD.saturating_sub(tick.elapsed()));
    }
    let (fresh_box, fresh_clients) = (
        boxes_cpu() - box_before,
        support::own_cpu().1 - clients_before,
    );

    let pct = |cpu: f64| cpu / WINDOW.as_secs_f64() * 100.0;
    let n = BOXES as f64;
    println!();
    println!(
        "| {BOXES} boxes, 2 s period, nvidia-smi stand-in 30 ms CPU per start | on each box (% of a core) | this machine: rigwatch / ssh clients (% of a core) | whole cost (% of a core) |"
    );
    println!("|---|---:|---:|---:|");
    println!(
        "| rigwatch streams | {:.2} % | {:.2} % | {:.2} % |",
        pct(ours_box) / n,
        pct(ours_self),
        pct(ours_box + ours_self)
    );
    println!(
        "| fresh ssh per host per poll | {:.2} % | {:.2} % | {:.2} % |",
        pct(fresh_box) / n,
        pct(fresh_clients),
        pct(fresh_box + fresh_clients)
    );
    println!(
        "\nwatching costs {:.3} of a fresh ssh per host per poll (probe CPU per box per 2 s cycle: {:.1} ms)",
        (ours_box + ours_self) / (fresh_box + fresh_clients).max(1e-9),
        ours_box / n / (WINDOW.as_secs_f64() / PERIOD.as_secs_f64()) * 1000.0
    );
}

fn per_minute(cpu: f64) -> f64 {
    cpu * 60.0 / WINDOW.as_secs_f64()
}

fn main() {
    let mut lab = Lab::new();
    // `RIGWATCH_BENCH_ONLY=twenty` runs part 2 alone, for iterating on the probe's cost.
    if std::env::var("RIGWATCH_BENCH_ONLY").as_deref() == Ok("twenty") {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        twenty_boxes(&mut lab, &runtime);
        return;
    }
    let box_a = lab.start_host("box");
    box_a.real_df();
    if conda_home() {
        println!(
            "conda-like ~/.bashrc on the box: {:.2} s per shell start here",
            box_a.conda_like_home()
        );
    }
    box_a.shim_nvidia_smi(&GpuShim {
        query_gpu: "h100/q_load_csv.txt",
        apps: "h100/apps_load.txt",
        legacy_driver: false,
    });
    box_a.shim_tmux(true);
    let body = format!(
        "{}\nrun = \"train\"\nmounts = [\"/\"]",
        lab.host_entry(&box_a)
    );
    let config = lab.fleet("box.toml", "", &[("box", body)]);
    let fleet = fleet::load(&config).expect("fleet");
    let host = fleet.hosts[0].clone();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");

    let streams = runtime.block_on(async {
        let pool = Pool::start(&fleet);
        pool.settle(Duration::from_secs(20)).await;
        let (tx, mut rx) = mpsc::channel(4096);
        let link = pool.get("box").expect("link");
        let tasks = live::spawn(host.clone(), link.watch_session(), PERIOD, tx);
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        // Let the streams start (the one-time shell start-up is part of a session, not a poll).
        tokio::time::sleep(Duration::from_secs(3)).await;
        let before = box_a.cpu_breakdown();
        let before_total = box_a.cpu_seconds();
        tokio::time::sleep(WINDOW).await;
        let used = box_a.cpu_seconds() - before_total;
        print_breakdown(&box_a, &before);
        for t in tasks {
            t.abort();
        }
        drain.abort();
        pool.shutdown().await;
        used
    });

    let fresh = box_cpu_polling(&box_a, || {
        let status = lab
            .openssh(&box_a, None)
            .arg(one_shot(&host))
            .status()
            .expect("ssh");
        assert!(status.success());
    });

    let socket = lab.path("cm.sock");
    let mut master = lab.openssh(&box_a, Some(&socket));
    master.args(["-o", "ControlMaster=yes", "-o", "ControlPersist=120", "-fN"]);
    assert!(master.status().expect("master").success());
    let muxed = box_cpu_polling(&box_a, || {
        let status = lab
            .openssh(&box_a, Some(&socket))
            .arg(one_shot(&host))
            .status()
            .expect("ssh");
        assert!(status.success());
    });
    let _ = lab
        .openssh(&box_a, Some(&socket))
        .args(["-O", "exit"])
        .status();

    let core_pct = |cpu: f64| cpu / WINDOW.as_secs_f64() * 100.0;
    println!("| method | box CPU-s per minute | % of one core | vs rigwatch |");
    println!("|---|---:|---:|---:|");
    for (name, cpu) in [
        ("rigwatch streams", streams),
        ("fresh ssh per poll", fresh),
        ("ControlMaster per poll", muxed),
    ] {
        println!(
            "| {name} | {:.3} | {:.2} % | {:.1}× |",
            per_minute(cpu),
            core_pct(cpu),
            cpu / streams.max(1e-9)
        );
    }

    if std::env::var("RIGWATCH_BENCH_ONLY").as_deref() == Ok("one") {
        return;
    }
    twenty_boxes(&mut lab, &runtime);

    println!();
    println!("| hosts | rigwatch status | fresh ssh per host | fresh ssh / status |");
    println!("|---:|---:|---:|---:|");
    let hosts: Vec<Sshd> = (0..50)
        .map(|i| {
            let h = lab.start_host(&format!("s{i}"));
            h.real_df();
            h.shim_nvidia_smi(&GpuShim {
                query_gpu: "h100/q_idle_csv.txt",
                apps: "h100/apps_idle.txt",
                legacy_driver: false,
            });
            h
        })
        .collect();
    for n in [1usize, 10, 50] {
        let config = lab.fleet_of(&format!("status{n}.toml"), &hosts[..n]);
        let start = Instant::now();
        let out = support::rigwatch()
            .args(["status", "--json", "--config"])
            .arg(&config)
            .env("XDG_STATE_HOME", lab.path("state"))
            .output()
            .expect("status");
        let status_time = start.elapsed();
        assert!(!out.stdout.is_empty(), "status printed nothing");
        let fleet_n = fleet::load(&config).expect("fleet");
        let start = Instant::now();
        fresh_ssh_round(&lab, &hosts[..n], &fleet_n.hosts);
        let fresh_time = start.elapsed();
        let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
        println!(
            "| {n} | {} | {} | {:.1}× |",
            ms(status_time),
            ms(fresh_time),
            fresh_time.as_secs_f64() / status_time.as_secs_f64()
        );
    }
}
