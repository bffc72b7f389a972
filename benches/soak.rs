//! The soak: many loopback boxes (real sshd each) watched by `rigwatch watch` at a 2 s poll for a
//! bounded time, its resident memory, open file descriptors and the age of each box's newest
//! reading (the poll's latency as a user sees it: how stale the freshest figure is) sampled every
//! 10 s and printed at the start, middle and end. Flat is the pass.
//! Run: `cargo bench --bench soak` (200 boxes, 10 minutes);
//! RIGWATCH_SOAK_BOXES=N and RIGWATCH_SOAK_SECS=S for another size or a shorter run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Lab, Sshd, free_port, scrape};

const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Time for every box's first connection and reading before the first sample is taken.
const WARM_UP: Duration = Duration::from_secs(30);

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Sample {
    at: Duration,
    rss_mb: f64,
    fds: usize,
    /// Boxes with a reading, and the median and worst age of their newest one, in seconds.
    reporting: usize,
    age_median: f64,
    age_max: f64,
}

fn sample(pid: u32, metrics_port: u16, at: Duration) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let mut ages: Vec<f64> = scrape(metrics_port)
        .lines()
        .filter(|l| l.starts_with("rigwatch_host_data_age_seconds{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    ages.sort_by(f64::total_cmp);
    Sample {
        at,
        rss_mb: rss_kb / 1024.0,
        fds,
        reporting: ages.len(),
        age_median: ages.get(ages.len() / 2).copied().unwrap_or(f64::NAN),
        age_max: ages.last().copied().unwrap_or(f64::NAN),
    }
}

fn main() {
    let boxes = env_or("RIGWATCH_SOAK_BOXES", 200) as usize;
    let secs = env_or("RIGWATCH_SOAK_SECS", 600);
    let mut lab = Lab::new();
    let started = Instant::now();
    let hosts: Vec<Sshd> = (0..boxes)
        .map(|i| lab.start_host(&format!("b{i}")))
        .collect();
    eprintln!("{boxes} sshd boxes started in {:?}", started.elapsed());
    // The lab's fleet, at the poll and keepalive a user gets by default but for a 2 s poll.
    let path = lab.fleet_of("fleet.toml", &hosts);
    let text = std::fs::read_to_string(&path).expect("fleet");
    let text = text
        .replace("poll_secs = 1\n", "poll_secs = 2\n")
        .replace("keepalive_secs = 1\nkeepalive_max = 2\n", "")
        .replace("connect_timeout_secs = 3\n", "");
    std::fs::write(&path, text).expect("fleet");

    let metrics_port = free_port();
    let mut watch = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["watch", "--for", &(secs + 60).to_string(), "--metrics"])
        .arg(format!("127.0.0.1:{metrics_port}"))
        .arg("--config")
        .arg(&path)
        .env("XDG_STATE_HOME", lab.path("state"))
        .env_remove("SSH_AUTH_SOCK")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("rigwatch watch");
    let pid = watch.id();
    std::thread::sleep(WARM_UP);
    let begin = Instant::now();
    let mut samples = Vec::new();
    while begin.elapsed() < Duration::from_secs(secs) {
        samples.push(sample(pid, metrics_port, begin.elapsed()));
        std::thread::sleep(SAMPLE_EVERY);
    }
    samples.push(sample(pid, metrics_port, begin.elapsed()));
    let _ = watch.kill();
    let _ = watch.wait();

    println!(
        "\n{boxes} loopback boxes, poll 2 s, {secs} s after a {} s warm-up (rigwatch watch)\n",
        WARM_UP.as_secs()
    );
    println!("| when | RSS | open fds | boxes with a reading | reading age median | max |");
    println!("|---|---:|---:|---:|---:|---:|");
    let n = samples.len();
    for (label, s) in [
        ("start", &samples[0]),
        ("middle", &samples[n / 2]),
        ("end", &samples[n - 1]),
    ] {
        println!(
            "| {label} ({:.0} s) | {:.1} MB | {} | {}/{boxes} | {:.1} s | {:.1} s |",
            s.at.as_secs_f64(),
            s.rss_mb,
            s.fds,
            s.reporting,
            s.age_median,
            s.age_max
        );
    }
    let peak_rss = samples.iter().map(|s| s.rss_mb).fold(0.0, f64::max);
    let worst_age = samples.iter().map(|s| s.age_max).fold(0.0, f64::max);
    let fds: Vec<usize> = samples.iter().map(|s| s.fds).collect();
    println!(
        "\nover all {n} samples: peak RSS {peak_rss:.1} MB, fds {}..{}, worst reading age {worst_age:.1} s",
        fds.iter().min().unwrap_or(&0),
        fds.iter().max().unwrap_or(&0)
    );
}
