//! Pull throughput against a real loopback sshd: `rigwatch`'s SFTP pull (many reads in flight,
//! SHA-256 on both ends, verification) vs `scp` and `rsync -e ssh` of the same 1 GiB file; and a
//! pull cut at half way, then resumed, counting the bytes sent again. Run:
//! `cargo bench --bench pull`. Prints a markdown table; BENCHMARKS.md records a run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::pull::local::part_paths;
use rigwatch::pull::{Progress, PullJob, pull};
use rigwatch::transport::Pool;
use support::Lab;

const SIZE: u64 = 1 << 30;
const ROUNDS: usize = 3;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn openssh_args(lab: &Lab, port: u16) -> Vec<String> {
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
    .into_iter()
    .chain(["-P".to_string(), port.to_string()])
    .collect()
}

fn timed(mut cmd: Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    start.elapsed()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let src = sshd.dir.join("run/big.bin");
    std::fs::create_dir_all(src.parent().expect("parent")).expect("dir");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&src).expect("create"));
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..(SIZE >> 20) {
        for c in block.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c.copy_from_slice(&x.to_le_bytes());
        }
        f.write_all(&block).expect("write");
    }
    f.flush().expect("flush");
    drop(f);

    let mut scp = Vec::new();
    let mut rsync = Vec::new();
    let mut ours = Vec::new();
    for round in 0..ROUNDS {
        let out = lab.path(&format!("scp{round}.bin"));
        let mut cmd = Command::new("scp");
        cmd.args(openssh_args(&lab, sshd.port))
            .arg(format!("{}@127.0.0.1:{}", lab.user, src.display()))
            .arg(&out);
        scp.push(timed(cmd));
        let _ = std::fs::remove_file(&out);

        let ssh = format!(
            "ssh {}",
            openssh_args(&lab, sshd.port)
                .join(" ")
                .replace("-P ", "-p ")
        );
        let out = lab.path(&format!("rsync{round}.bin"));
        let mut cmd = Command::new("rsync");
        cmd.arg("-e")
            .arg(ssh)
            .arg(format!("{}@127.0.0.1:{}", lab.user, src.display()))
            .arg(&out);
        rsync.push(timed(cmd));
        let _ = std::fs::remove_file(&out);

        let dest = lab.path(&format!("ours{round}"));
        let body = format!(
            "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"true {{file}}\"",
            lab.host_entry(&sshd),
            src.display(),
            dest.display()
        );
        let config = fleet::load(&lab.fleet(&format!("f{round}.toml"), "", &[("box", body)]))
            .expect("fleet");
        let pool = Pool::start(&config);
        pool.settle(Duration::from_secs(20)).await;
        let session = pool.get("box").and_then(|l| l.session()).expect("session");
        let spec = config.hosts[0].pull.clone().expect("pull");
        let start = Instant::now();
        let record = pull(
            &session,
            &PullJob::of("box", &spec, None),
            Arc::new(Progress::default()),
        )
        .await
        .expect("pull");
        ours.push(start.elapsed());
        assert!(record.files.iter().all(|f| f.is_good()), "{record:?}");
        pool.shutdown().await;
        let _ = std::fs::remove_dir_all(&dest);
    }

    // Resume: cut the pull at half way by dropping it, then pull again.
    let dest = lab.path("resume");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"true {{file}}\"",
        lab.host_entry(&sshd),
        src.display(),
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
    while progress.bytes_done.load(Ordering::Relaxed) < SIZE / 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cut.abort();
    let _ = cut.await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let had = std::fs::metadata(part_paths(&dest, &dest.join("big.bin")).0)
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

    let mb = SIZE as f64 / (1 << 20) as f64;
    let rate = |d: Duration| mb / d.as_secs_f64();
    let (s, r, o) = (median(scp), median(rsync), median(ours));
    println!("| 1 GiB over loopback sshd (median of {ROUNDS}) | time | MiB/s | rigwatch vs it |");
    println!("|---|---|---|---|");
    println!(
        "| scp | {:.2}s | {:.0} | {:.2}× |",
        s.as_secs_f64(),
        rate(s),
        s.as_secs_f64() / o.as_secs_f64()
    );
    println!(
        "| rsync -e ssh | {:.2}s | {:.0} | {:.2}× |",
        r.as_secs_f64(),
        rate(r),
        r.as_secs_f64() / o.as_secs_f64()
    );
    println!(
        "| rigwatch pull (copy + SHA-256 both ends + verify) | {:.2}s | {:.0} | 1.00× |",
        o.as_secs_f64(),
        rate(o)
    );
    println!();
    println!(
        "resume: cut at {} MiB on disk, resumed pull sent {} MiB = exactly the missing {} MiB; finished bytes re-sent: {}",
        had >> 20,
        sent >> 20,
        (SIZE - had) >> 20,
        sent as i64 - (SIZE - had) as i64
    );
}
