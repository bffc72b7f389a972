//! What monitoring costs the monitored box, and what `status` costs in wall time.
//! Run: `cargo bench --bench box_cpu`. Prints markdown tables; BENCHMARKS.md records a run.
//!
//! 1. CPU seconds spent ON THE BOX (sshd and everything under it) per minute of monitoring at a
//!    2 s period: rigwatch's two long-lived streams vs the same probe by a fresh `ssh` per poll
//!    vs by OpenSSH ControlMaster.
//! 2. `rigwatch status` wall time on 1, 10 and 50 hosts vs a fresh `ssh` per host running the
//!    same one-shot probe.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use rigwatch::config::{HostConfig, fleet};
use rigwatch::monitor::commands::{new_nonce, probe_command};
use rigwatch::monitor::live;
use rigwatch::transport::Pool;
use support::{GpuShim, Lab, Sshd};
use tokio::sync::mpsc;

const PERIOD: Duration = Duration::from_secs(2);
const WINDOW: Duration = Duration::from_secs(30);

/// The one-shot probe a script would run per poll: the GPU query and the probe script.
fn one_shot(host: &HostConfig) -> String {
    probe_command(host, &new_nonce(), None)
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

fn per_minute(cpu: f64) -> f64 {
    cpu * 60.0 / WINDOW.as_secs_f64()
}

fn main() {
    let mut lab = Lab::new();
    let box_a = lab.start_host("box");
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
        if std::env::var_os("RIGWATCH_BENCH_BREAKDOWN").is_some() {
            for (pid, comm, ticks) in box_a.cpu_breakdown() {
                let was = before.iter().find(|b| b.0 == pid).map_or(0, |b| b.2);
                eprintln!("{pid:>7} {:>5} ticks  {comm}", ticks - was);
            }
        }
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

    println!();
    println!("| hosts | rigwatch status | fresh ssh per host | fresh ssh / status |");
    println!("|---:|---:|---:|---:|");
    let hosts: Vec<Sshd> = (0..50)
        .map(|i| {
            let h = lab.start_host(&format!("s{i}"));
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
        let children: Vec<_> = hosts[..n]
            .iter()
            .zip(&fleet_n.hosts)
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
