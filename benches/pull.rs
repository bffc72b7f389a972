//! Pulls against what a user would run instead, side by side in one run, through a delay proxy
//! (tests/support/delay.rs) at 0, 30 and 100 ms round trip in front of a real loopback sshd:
//! one large checkpoint, and 500 small eval files of ~4 KiB. rigwatch's pull (copy, SHA-256 on
//! both ends, verify) vs `rsync -e ssh` and `scp` of the same files; client CPU per GiB from
//! this process's own and its children's CPU time. Then a pull cut at half way and resumed,
//! counting finished bytes sent again. Run: `cargo bench --bench pull`. Prints markdown tables;
//! BENCHMARKS.md records a run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::pull::local::part_paths;
use rigwatch::pull::{Progress, PullJob, pull};
use rigwatch::transport::Pool;
use support::Lab;

/// This process's CPU and that of the children it waited for, in seconds.
fn cpu_seconds() -> f64 {
    let (own, children) = support::own_cpu();
    own + children
}
use support::delay::DelayProxy;

const LOOPBACK_LARGE: u64 = 1 << 30;
const DELAYED_LARGE: u64 = 256 << 20;
const SMALL_FILES: usize = 500;
/// The files are random bytes: a command stands in for a checkpoint loader, so the pull is
/// measured whole (copy, both hashes, verification) as a user's would run.
const VERIFY: &str = "[host.pull.verify]\n\"*.bin\" = \"test -s {file}\"";

fn ssh_options(lab: &Lab) -> Vec<String> {
    vec![
        "-F".into(),
        "/dev/null".into(),
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        format!("UserKnownHostsFile={}", lab.known_hosts.display()),
        "-i".into(),
        lab.client_key.display().to_string(),
    ]
}

/// Wall time and client CPU of one command.
fn timed(mut cmd: Command) -> (Duration, f64) {
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (start.elapsed(), cpu_seconds() - cpu)
}

struct Measured {
    ours: (Duration, f64),
    rsync: (Duration, f64),
    scp: Option<(Duration, f64)>,
}

/// `with_scp` false leaves scp out: for many small files over a delayed link its SFTP mode
/// waits a round trip per request (66 s for 500 files at 30 ms), which says nothing new.
async fn measure(
    lab: &Lab,
    sshd: &support::Sshd,
    port: u16,
    src: &Path,
    tag: &str,
    with_scp: bool,
) -> Measured {
    let entry = lab.host_entry_via(sshd, port);
    let remote = format!("{}@127.0.0.1:{}", lab.user, src.display());
    let scp = if with_scp {
        let out = lab.path(&format!("scp-{tag}"));
        let mut cmd = Command::new("scp");
        cmd.args(ssh_options(lab))
            .args(["-r", "-P", &port.to_string()])
            .arg(&remote)
            .arg(&out);
        let took = timed(cmd);
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_file(&out);
        Some(took)
    } else {
        None
    };

    let ssh = format!("ssh {} -p {port}", ssh_options(lab).join(" "));
    let out = lab.path(&format!("rsync-{tag}"));
    let mut cmd = Command::new("rsync");
    cmd.arg("-r").arg("-e").arg(ssh).arg(&remote).arg(&out);
    let rsync = timed(cmd);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&out);

    let dest = lab.path(&format!("ours-{tag}"));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n{VERIFY}",
        entry,
        src.display(),
        dest.display()
    );
    let config =
        fleet::load(&lab.fleet(&format!("{tag}.toml"), "", &[("box", body)])).expect("fleet");
    let pool = Pool::start(&config);
    pool.settle(Duration::from_secs(30)).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    let spec = config.hosts[0].pull.clone().expect("pull");
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let record = pull(
        &session,
        &PullJob::of("box", &spec, None),
        Arc::new(Progress::default()),
    )
    .await
    .expect("pull");
    let ours = (start.elapsed(), cpu_seconds() - cpu);
    let bad: Vec<_> = record.files.iter().filter(|f| !f.is_good()).collect();
    assert!(bad.is_empty(), "{bad:?}");
    pool.shutdown().await;
    let _ = std::fs::remove_dir_all(&dest);
    Measured { ours, rsync, scp }
}

/// Each tool's median over the runs, separately.
fn median(runs: Vec<Measured>) -> Measured {
    fn mid(mut v: Vec<(Duration, f64)>) -> (Duration, f64) {
        v.sort_by_key(|m| m.0);
        v[v.len() / 2]
    }
    let scp: Vec<_> = runs.iter().filter_map(|m| m.scp).collect();
    Measured {
        ours: mid(runs.iter().map(|m| m.ours).collect()),
        rsync: mid(runs.iter().map(|m| m.rsync).collect()),
        scp: (!scp.is_empty()).then(|| mid(scp)),
    }
}

fn row(rtt: u64, case: &str, bytes: u64, m: &Measured) {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    let rate = |d: Duration| bytes as f64 / (1 << 20) as f64 / d.as_secs_f64();
    let (o, r) = (m.ours.0.as_secs_f64(), m.rsync.0.as_secs_f64());
    let (scp, vs_scp, scp_cpu) = match m.scp {
        Some((d, cpu)) => (
            format!("{:.2}s ({:.0} MiB/s)", d.as_secs_f64(), rate(d)),
            format!("{:.2}×", d.as_secs_f64() / o),
            format!("{:.1}", cpu / gib),
        ),
        None => ("—".into(), "—".into(), "—".into()),
    };
    println!(
        "| {rtt} ms | {case} | {o:.2}s ({:.1} MiB/s) | {r:.2}s ({:.1} MiB/s) | {scp} | {:.2}× \
         | {vs_scp} | {:.1} / {:.1} / {scp_cpu} |",
        rate(m.ours.0),
        rate(m.rsync.0),
        r / o,
        m.ours.1 / gib,
        m.rsync.1 / gib,
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("run");
    std::fs::create_dir_all(run.join("evals")).expect("dir");
    let big = run.join("big.bin");
    let medium = run.join("ckpt.bin");
    support::write_random(&big, LOOPBACK_LARGE, 1);
    support::write_random(&medium, DELAYED_LARGE, 2);
    // Eval results as a run writes them: JSON of ~4 KiB each, proven by the built-in check.
    let mut small_bytes = 0;
    for i in 0..SMALL_FILES {
        let scores: Vec<String> = (0..200 + i % 100)
            .map(|j| format!("{:.6}", ((i * 7919 + j * 104_729) % 1_000_003) as f64 / 1e6))
            .collect();
        let text = format!("{{\"step\": {i}, \"scores\": [{}]}}\n", scores.join(", "));
        std::fs::write(run.join(format!("evals/eval-{i:04}.json")), &text).expect("eval");
        small_bytes += text.len() as u64;
    }
    println!(
        "| RTT | case | rigwatch | rsync -e ssh | scp | rigwatch vs rsync | vs scp | client CPU s/GiB (rigwatch / rsync / scp) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for rtt in [0u64, 30, 100] {
        let proxy = (rtt > 0).then(|| DelayProxy::start(sshd.port, Duration::from_millis(rtt / 2)));
        let port = proxy.as_ref().map_or(sshd.port, |p| p.port);
        let (large, size): (&PathBuf, u64) = if rtt == 0 {
            (&big, LOOPBACK_LARGE)
        } else {
            (&medium, DELAYED_LARGE)
        };
        // Loopback is the noisiest case (both ends share this machine's cores): median of 3.
        let rounds = if rtt == 0 { 3 } else { 1 };
        let mut runs = Vec::new();
        for round in 0..rounds {
            runs.push(
                measure(
                    &lab,
                    &sshd,
                    port,
                    large,
                    &format!("large-{rtt}-{round}"),
                    true,
                )
                .await,
            );
        }
        let m = median(runs);
        let label = format!(
            "one {} MiB file{}",
            size >> 20,
            if rounds > 1 { " (median of 3)" } else { "" }
        );
        row(rtt, &label, size, &m);
        let evals = run.join("evals");
        let m = measure(&lab, &sshd, port, &evals, &format!("small-{rtt}"), rtt == 0).await;
        row(
            rtt,
            &format!("{SMALL_FILES} files of ~4 KiB"),
            small_bytes,
            &m,
        );
    }
    resume(&lab, &sshd, &big).await;
}

/// Cut a pull at half way by dropping it, then pull again: the finished bytes must not travel
/// twice.
async fn resume(lab: &Lab, sshd: &support::Sshd, big: &Path) {
    let dest = lab.path("resume");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n{VERIFY}",
        lab.host_entry(sshd),
        big.display(),
        dest.display()
    );
    let config = fleet::load(&lab.fleet("resume.toml", "", &[("box", body)])).expect("fleet");
    let pool = Pool::start(&config);
    pool.settle(Duration::from_secs(20)).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    let spec = config.hosts[0].pull.clone().expect("pull");
    let progress = Arc::new(Progress::default());
    let cut = {
        let (session, spec, progress) = (session.clone(), spec.clone(), progress.clone());
        tokio::spawn(
            async move { pull(&session, &PullJob::of("box", &spec, None), progress).await },
        )
    };
    while progress.bytes_done.load(Ordering::Relaxed) < LOOPBACK_LARGE / 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cut.abort();
    let _ = cut.await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let name = big.file_name().expect("name");
    let had = std::fs::metadata(part_paths(&dest, &dest.join(name)).0)
        .map(|m| m.len())
        .unwrap_or(0);
    let record = pull(
        &session,
        &PullJob::of("box", &spec, None),
        Arc::new(Progress::default()),
    )
    .await
    .expect("resumed pull");
    let sent = record.files[0].sent;
    assert!(record.files[0].is_good());
    pool.shutdown().await;
    println!();
    println!(
        "resume: cut at {} MiB on disk, resumed pull sent {} MiB = exactly the missing {} MiB; \
         finished bytes re-sent: {}",
        had >> 20,
        sent >> 20,
        (LOOPBACK_LARGE - had) >> 20,
        sent as i64 - (LOOPBACK_LARGE - had) as i64
    );
}
