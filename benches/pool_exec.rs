//! One small command on N hosts: rigwatch's pool vs a fresh `ssh` per host vs OpenSSH
//! ControlMaster, against real loopback sshd processes. Run: `cargo bench --bench pool_exec`.
//! Prints a markdown table (medians of ROUNDS rounds); BENCHMARKS.md records a run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::transport::{ExecLimits, Pool};
use support::{Lab, Sshd};

const ROUNDS: usize = 7;
const COMMAND: &str = "echo ok";

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Starts every command at once and waits for all: one "poll" of the fleet.
fn run_all(mut commands: Vec<Command>) -> Duration {
    let start = Instant::now();
    let children: Vec<_> = commands
        .iter_mut()
        .map(|c| c.spawn().expect("spawn ssh"))
        .collect();
    for mut child in children {
        let status = child.wait().expect("wait ssh");
        assert!(status.success(), "ssh failed");
    }
    start.elapsed()
}

fn control_path(lab: &Lab, host: &Sshd) -> std::path::PathBuf {
    lab.path(&format!("cm-{}", host.port))
}

fn main() {
    let mut lab = Lab::new();
    let hosts: Vec<Sshd> = (0..50).map(|i| lab.start_host(&format!("h{i}"))).collect();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    println!(
        "| hosts | rigwatch pool | fresh ssh per host | ControlMaster | fresh ssh / pool | ControlMaster / pool |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for n in [1usize, 10, 50] {
        let subset = &hosts[..n];
        let config = lab.fleet_of(&format!("bench{n}.toml"), subset);
        let fleet = fleet::load(&config).expect("fleet");

        let pool_time = runtime.block_on(async {
            let pool = Pool::start(&fleet);
            let states = pool.settle(Duration::from_secs(60)).await;
            assert!(states.iter().all(|(_, s)| s.is_usable()), "pool not up");
            let mut samples = Vec::new();
            for _ in 0..ROUNDS {
                let start = Instant::now();
                let runs = subset
                    .iter()
                    .map(|h| pool.exec(&h.name, COMMAND, ExecLimits::default()));
                for out in futures::future::join_all(runs).await {
                    assert_eq!(out.expect("exec").exit_status, Some(0));
                }
                samples.push(start.elapsed());
            }
            pool.shutdown().await;
            median(samples)
        });

        let fresh = median(
            (0..ROUNDS)
                .map(|_| {
                    run_all(
                        subset
                            .iter()
                            .map(|h| {
                                let mut c = lab.openssh(h, None);
                                c.arg(COMMAND);
                                c
                            })
                            .collect(),
                    )
                })
                .collect(),
        );

        for h in subset {
            let mut master = lab.openssh(h, Some(&control_path(&lab, h)));
            master.args(["-o", "ControlMaster=yes", "-o", "ControlPersist=120", "-fN"]);
            assert!(
                master.status().expect("master").success(),
                "ControlMaster did not start"
            );
        }
        let muxed = median(
            (0..ROUNDS)
                .map(|_| {
                    run_all(
                        subset
                            .iter()
                            .map(|h| {
                                let mut c = lab.openssh(h, Some(&control_path(&lab, h)));
                                c.arg(COMMAND);
                                c
                            })
                            .collect(),
                    )
                })
                .collect(),
        );
        for h in subset {
            let mut exit = lab.openssh(h, Some(&control_path(&lab, h)));
            exit.args(["-O", "exit"]);
            let _ = exit.status();
        }

        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        let ratio = |d: Duration| format!("{:.1}×", d.as_secs_f64() / pool_time.as_secs_f64());
        println!(
            "| {n} | {} | {} | {} | {} | {} |",
            ms(pool_time),
            ms(fresh),
            ms(muxed),
            ratio(fresh),
            ratio(muxed)
        );
    }
}
