//! Pulls against what a user would run instead, side by side in one run, through a delay proxy
//! (tests/support/delay.rs) at 0, 30 and 100 ms round trip in front of a real loopback sshd:
//! one large checkpoint, and 500 small eval files of ~4 KiB. rigwatch's pull (copy, SHA-256 on
//! both ends, verify) vs `rsync -e ssh` and `scp` of the same files; client CPU per GiB from
//! this process's own and its children's CPU time (the delay proxy runs in this process, so
//! every tool's figure includes it), box CPU per GiB from the box's sshd and everything it
//! started (its connection, login shells, sftp-server, tar, hashing). Then a pull cut at half way and resumed,
//! counting finished bytes sent again. Every row runs on two boxes, both with OpenSSH's
//! sftp-server (started through the login shell, as on a real box): one with an empty home, one
//! whose `~/.bashrc` costs ~0.15 s of CPU at every shell start, as conda's block does. Run:
//! `cargo bench --bench pull`; rows are picked with PULL_BENCH (`large,small,resume`, and `many`
//! for 10 000 and 100 000 files with peak RSS, each tool run twice in both orders),
//! PULL_BENCH_RTT (`0,30,100`) and PULL_BENCH_HOMES (`empty,conda`; `nosftp`: a box without
//! SFTP). rigwatch's pull is timed as the dashboard's `p`: the connection is up, and so are the
//! helper shell and SFTP channel it opened for pulls (their box CPU is counted all the same);
//! PULL_BENCH_COLD=1 times it as `rigwatch pull` does, both still opening; PULL_BENCH_SECOND=1
//! as the connection's second pull, which starts at the link rate its first learned;
//! PULL_BENCH_ALONE=1 times rigwatch alone in the large and small rows. Prints markdown tables;
//! BENCHMARKS.md records a run.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::ledger::Ledger;
use rigwatch::ledger::locks::Act;
use rigwatch::pull::local::part_paths;
use rigwatch::pull::{Progress, PullJob, pull, pull_and_record};
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

/// Wall time, client CPU and box CPU (seconds) of one tool's run.
type Taken = (Duration, f64, f64);

/// CPU the box spent since `before` (its `cpu_seconds`), once the connection's processes have
/// ended and been counted: sshd reaps them a moment after the client goes.
fn box_cpu_since(sshd: &support::Sshd, before: f64) -> f64 {
    let mut last = sshd.cpu_seconds();
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(50));
        let now = sshd.cpu_seconds();
        if now == last {
            break;
        }
        last = now;
    }
    last - before
}

/// Wall time, client CPU and box CPU of one command.
fn timed(sshd: &support::Sshd, mut cmd: Command) -> Taken {
    settle_disk();
    let (start, cpu, box_cpu) = (Instant::now(), cpu_seconds(), sshd.cpu_seconds());
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (took, cpu) = (start.elapsed(), cpu_seconds() - cpu);
    (took, cpu, box_cpu_since(sshd, box_cpu))
}

/// Writes back what the lab and the last tool left dirty before a tool's timed run: a pull
/// makes its copies durable (`syncfs`), rsync and scp do not, so without this the first sync
/// after the lab's setup (100 000 files written just before) paid for all of it, up to 1.6 s
/// of a 100 000-file pull's first chunk.
fn settle_disk() {
    let synced = Command::new("sync").status().is_ok_and(|s| s.success());
    assert!(synced, "sync");
}

struct Measured {
    ours: Taken,
    /// None where `PULL_BENCH_ALONE` left it out.
    rsync: Option<Taken>,
    scp: Option<Taken>,
    /// Round trips in sequence through the delay proxy (`DelayProxy::rounds`): rigwatch's pull
    /// on its connection (as the dashboard's `p`; with `PULL_BENCH_COLD`, after the handshake)
    /// and rsync's whole run, its ssh handshake included.
    rounds: Rounds,
}

/// Round trips in sequence: rigwatch's, rsync's (either left out where it was not counted).
type Rounds = (Option<u32>, Option<u32>);

/// `with_scp` false leaves scp out: for many small files over a delayed link its SFTP mode
/// waits a round trip per request (66 s for 500 files at 30 ms), which says nothing new.
async fn measure(
    lab: &Lab,
    sshd: &support::Sshd,
    proxy: Option<&DelayProxy>,
    src: &Path,
    tag: &str,
    with_scp: bool,
) -> Measured {
    let port = proxy.map_or(sshd.port, |p| p.port);
    // First: it writes the known_hosts line for `port` (a delay proxy's) that scp and rsync use.
    let entry = lab.host_entry_via(sshd, port);
    let remote = format!("{}@127.0.0.1:{}", lab.user, src.display());
    let scp = if with_scp && !alone() {
        let out = lab.path(&format!("scp-{tag}"));
        let mut cmd = Command::new("scp");
        if sshd.name == "nosftp" {
            cmd.arg("-O");
        }
        cmd.args(ssh_options(lab))
            .args(["-r", "-P", &port.to_string()])
            .arg(&remote)
            .arg(&out);
        let took = timed(sshd, cmd);
        if src.is_file() {
            let _ = std::fs::remove_file(&out);
        }
        Some(took)
    } else {
        None
    };
    let rsync = (!alone()).then(|| rsync_run(lab, sshd, port, src, tag));
    let rsync_rounds = proxy.map(DelayProxy::newest_rounds);
    let (ours, ours_rounds) = ours_run(lab, sshd, (&entry, proxy), src, tag).await;
    Measured {
        ours,
        rounds: (ours_rounds, rsync.and(rsync_rounds)),
        rsync,
        scp,
    }
}

/// As `measure` without scp, each tool run twice in the order rsync, rigwatch, rigwatch, rsync,
/// the second two into folders (and a ledger) of their own: each tool's figures are the mean
/// of its two, which the text gives (rigwatch's, then rsync's, in the order they ran). On this VM the tool that went second into a fresh folder of 100 000 files was
/// slowed, rsync by ~20 % (five runs in each order, rsync's median 4.35 s first, 5.19 s after
/// rigwatch), so a fixed order favoured whichever went first.
async fn measure_both_orders(
    lab: &Lab,
    (sshd, proxy): (&support::Sshd, Option<&DelayProxy>),
    src: &Path,
    tag: &str,
) -> (Measured, String) {
    let first = measure(lab, sshd, proxy, src, tag, false).await;
    let first_rsync = first.rsync.expect("the many rows always run rsync");
    let again = format!("{tag}-b");
    let port = proxy.map_or(sshd.port, |p| p.port);
    let entry = lab.host_entry_via(sshd, port);
    let (ours, _) = ours_run(lab, sshd, (&entry, proxy), src, &again).await;
    let rsync = rsync_run(lab, sshd, port, src, &again);
    let mean = |a: Taken, b: Taken| ((a.0 + b.0) / 2, (a.1 + b.1) / 2.0, (a.2 + b.2) / 2.0);
    let runs = format!(
        "rigwatch {:.2}s, {:.2}s; rsync {:.2}s, {:.2}s",
        first.ours.0.as_secs_f64(),
        ours.0.as_secs_f64(),
        first_rsync.0.as_secs_f64(),
        rsync.0.as_secs_f64()
    );
    let both = Measured {
        ours: mean(first.ours, ours),
        rsync: Some(mean(first_rsync, rsync)),
        scp: None,
        rounds: first.rounds,
    };
    (both, runs)
}

/// `rsync -rt` of `src` into the lab's `rsync-{tag}`, timed.
fn rsync_run(lab: &Lab, sshd: &support::Sshd, port: u16, src: &Path, tag: &str) -> Taken {
    let remote = format!("{}@127.0.0.1:{}", lab.user, src.display());
    let ssh = format!("ssh {} -p {port}", ssh_options(lab).join(" "));
    let out = lab.path(&format!("rsync-{tag}"));
    let mut cmd = Command::new("rsync");
    // -t as `rsync -a` would: mtimes kept, so a second run's quick check can skip files.
    cmd.arg("-rt").arg("-e").arg(ssh).arg(&remote).arg(&out);
    let rsync = timed(sshd, cmd);
    // A folder of many files is kept until the lab goes: ext4 skips (by scanning) inodes freed
    // in the last minutes when it makes new ones, so deleting one tool's thousands of files
    // right before the next tool runs slows that tool, not the one that made them.
    if src.is_file() {
        let _ = std::fs::remove_file(&out);
    }
    rsync
}

/// rigwatch's pull of `src` into the lab's `ours-{tag}` from the box `entry` names (through
/// `proxy`, whose round trips it counts), recorded in `{tag}.ledger`, timed.
async fn ours_run(
    lab: &Lab,
    sshd: &support::Sshd,
    (entry, proxy): (&str, Option<&DelayProxy>),
    src: &Path,
    tag: &str,
) -> (Taken, Option<u32>) {
    let dest = lab.path(&format!("ours-{tag}"));
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n{VERIFY}",
        entry,
        src.display(),
        dest.display()
    );
    let config =
        fleet::load(&lab.fleet(&format!("{tag}.toml"), "", &[("box", body)])).expect("fleet");
    let (ours, _, rounds) = our_pull(lab, sshd, (&config, proxy), tag).await;
    if src.is_file() {
        let _ = std::fs::remove_dir_all(&dest);
    }
    (ours, rounds)
}

/// One pull of `config`'s host "box" as `rigwatch pull` runs it (its records into the row's
/// ledger as it goes; the last pull recorded there is the one a re-pull checks against),
/// timed (wall, CPU; the box's CPU from its connection to its close), every file proven.
async fn our_pull(
    lab: &Lab,
    sshd: &support::Sshd,
    (config, proxy): (&rigwatch::config::FleetConfig, Option<&DelayProxy>),
    tag: &str,
) -> (Taken, rigwatch::pull::Pulled, Option<u32>) {
    let mut box_cpu = sshd.cpu_seconds();
    let (pool, session, spec) = support::results::box_to_pull(config).await;
    if std::env::var_os("PULL_BENCH_COLD").is_none() {
        // As the dashboard's `p`: its connection has been up, and with it the helper shell and
        // SFTP channel it opened for pulls. PULL_BENCH_COLD times it as `rigwatch pull` from a
        // fresh process, whose helper and channel are still opening when the pull begins.
        let limits = rigwatch::transport::ExecLimits {
            timeout: Duration::from_secs(30),
            max_output: 64,
        };
        let shell = rigwatch::transport::OneShell::new(&session);
        let helper = rigwatch::transport::BoxExec::exec(&shell, "true", limits);
        let (helper, sftp) = tokio::join!(helper, session.sftp(Duration::from_secs(30)));
        helper.expect("the helper shell");
        if sshd.name != "nosftp" {
            sftp.expect("the SFTP channel");
        }
    }
    let host = &config.hosts[0];
    let pull = |spec: &rigwatch::config::PullConfig, ledger: &str| {
        let mut ledger = Ledger::open(&lab.path(ledger)).expect("ledger");
        let (session, spec) = (&session, spec.clone());
        async move {
            let what = format!("box {}", host.name);
            let (locks, now) = (lab.path("locks"), chrono::Utc::now());
            let held = rigwatch::ledger::locks::try_take(&locks, &host.name, Act::Pull, &what, now)
                .expect("the bench's lock is free");
            pull_and_record(session, host, &spec, &mut ledger, Arc::default(), &held)
                .await
                .expect("pull")
        }
    };
    if std::env::var_os("PULL_BENCH_SECOND").is_some() {
        // As the dashboard's `p` on a connection that has pulled before, which keeps the
        // link's rate its last pull learned: the same files first, untimed, elsewhere.
        let first = rigwatch::config::PullConfig {
            dest: lab.path(&format!("{tag}-first")),
            ..spec.clone()
        };
        pull(&first, &format!("{tag}-first.ledger")).await;
        let _ = std::fs::remove_dir_all(&first.dest);
        box_cpu = sshd.cpu_seconds();
    }
    settle_disk();
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let up = proxy.map(DelayProxy::newest_rounds);
    let pulled = pull(&spec, &format!("{tag}.ledger")).await;
    let (took, cpu) = (start.elapsed(), cpu_seconds() - cpu);
    let rounds = proxy.zip(up).map(|(p, up)| p.newest_rounds() - up);
    assert!(pulled.all_proven(), "{pulled:?}");
    pool.shutdown().await;
    ((took, cpu, box_cpu_since(sshd, box_cpu)), pulled, rounds)
}

/// The same folder pulled again, nothing changed on the box: rsync into its copy (its quick
/// check by size and mtime) against rigwatch against its record (each file's stamp compared,
/// then its local copy hashed and checked again).
async fn repull(
    lab: &Lab,
    (sshd, proxy): (&support::Sshd, Option<&DelayProxy>),
    src: &Path,
    tag: &str,
) -> Measured {
    let port = proxy.map_or(sshd.port, |p| p.port);
    let remote = format!("{}@127.0.0.1:{}", lab.user, src.display());
    let ssh = format!("ssh {} -p {port}", ssh_options(lab).join(" "));
    let mut cmd = Command::new("rsync");
    cmd.arg("-rt")
        .arg("-e")
        .arg(ssh)
        .arg(&remote)
        .arg(lab.path(&format!("rsync-{tag}")));
    let rsync = timed(sshd, cmd);
    let rsync_rounds = proxy.map(DelayProxy::newest_rounds);
    let config = fleet::load(&lab.path(&format!("{tag}.toml"))).expect("fleet");
    let (ours, pulled, rounds) = our_pull(lab, sshd, (&config, proxy), tag).await;
    assert_eq!(
        pulled.tally.sent, 0,
        "a re-pull of unchanged files sends nothing"
    );
    Measured {
        ours,
        rsync: Some(rsync),
        scp: None,
        rounds: (rounds, rsync_rounds),
    }
}

/// Each tool's median over the runs, separately.
fn median(runs: Vec<Measured>) -> Measured {
    fn mid(mut v: Vec<Taken>) -> Taken {
        v.sort_by_key(|m| m.0);
        v[v.len() / 2]
    }
    let scp: Vec<_> = runs.iter().filter_map(|m| m.scp).collect();
    let rsync: Vec<_> = runs.iter().filter_map(|m| m.rsync).collect();
    let rounds = |pick: fn(&Rounds) -> Option<u32>| {
        let mut all: Vec<u32> = runs.iter().filter_map(|m| pick(&m.rounds)).collect();
        all.sort_unstable();
        all.get(all.len() / 2).copied()
    };
    Measured {
        ours: mid(runs.iter().map(|m| m.ours).collect()),
        rsync: (!rsync.is_empty()).then(|| mid(rsync)),
        scp: (!scp.is_empty()).then(|| mid(scp)),
        rounds: (rounds(|r| r.0), rounds(|r| r.1)),
    }
}

fn row(at: &str, case: &str, bytes: u64, m: &Measured) {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    let rate = |d: Duration| bytes as f64 / (1 << 20) as f64 / d.as_secs_f64();
    let o = m.ours.0.as_secs_f64();
    let rounds = match m.rounds {
        (Some(ours), Some(rsync)) => format!("{ours} / {rsync}"),
        (Some(ours), None) => format!("{ours} / —"),
        _ => "—".to_string(),
    };
    // A tool's time, its speed against rigwatch's, its client and box CPU per GiB; dashes
    // where the run left it out.
    let other = |taken: Option<Taken>| match taken {
        Some((d, cpu, box_cpu)) => (
            format!("{:.2}s ({:.1} MiB/s)", d.as_secs_f64(), rate(d)),
            format!("{:.2}×", d.as_secs_f64() / o),
            format!("{:.1}", cpu / gib),
            format!("{:.1}", box_cpu / gib),
        ),
        None => ("—".into(), "—".into(), "—".into(), "—".into()),
    };
    let (rsync, vs_rsync, rsync_cpu, rsync_box) = other(m.rsync);
    let (scp, vs_scp, scp_cpu, scp_box) = other(m.scp);
    println!(
        "| {at} ms | {case} | {o:.2}s ({:.1} MiB/s) | {rsync} | {scp} | {vs_rsync} \
         | {vs_scp} | {:.1} / {rsync_cpu} / {scp_cpu} | {:.1} / {rsync_box} / {scp_box} | {rounds} |",
        rate(m.ours.0),
        m.ours.1 / gib,
        m.ours.2 / gib,
    );
}

/// `PULL_BENCH_ALONE` set: the large and small rows time rigwatch alone (no rsync, no scp), for
/// runs repeated to see its own spread.
fn alone() -> bool {
    std::env::var_os("PULL_BENCH_ALONE").is_some()
}

/// The rows to run, from `PULL_BENCH` (a comma list of `large`, `small`, `many`, `resume`;
/// `many` is the 100 000-file row, left out unless named; `PULL_BENCH_MANY` picks its file
/// counts), `PULL_BENCH_RTT` (ms), `PULL_BENCH_HOMES` (`empty`, `conda`) and
/// `PULL_BENCH_PROXY0` (set: the 0 ms rows through the proxy, of the far rows' file).
fn picked(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

// As many workers as cores, as the `rigwatch` binary runs (`cli`): on a client with cores of its
// own the copy and its hashing are not held to two.
#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `RUST_LOG=rigwatch::pull=debug` prints where each pull's time went.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_timer(tracing_subscriber::fmt::time::uptime())
            .with_writer(std::io::stderr)
            .init();
    }
    let rows = picked("PULL_BENCH", "large,small,resume");
    let rtts: Vec<u64> = picked("PULL_BENCH_RTT", "0,30,100")
        .iter()
        .filter_map(|r| r.parse().ok())
        .collect();
    let homes = picked("PULL_BENCH_HOMES", "empty,conda");
    // The 0 ms rows through the delay proxy too (with no delay), and of the far rows' file: the
    // speed the far rows keep a share of, with the proxy's own CPU in both.
    let proxied = std::env::var_os("PULL_BENCH_PROXY0").is_some();
    // Declared before the lab, so it is unmounted after the lab's folder is gone.
    let disk = support::fresh_disk::FreshDisk::mount(24);
    let mut lab = disk
        .as_ref()
        .map_or_else(Lab::new, |d| Lab::new_in(d.path()));
    // The boxes run OpenSSH's sftp-server, which sshd starts through the login shell, as a
    // real box does; one has an empty home, the other a conda-like one. `nosftp` is an empty
    // home on a box with no SFTP at all (a minimal image): rigwatch streams every file over
    // exec, scp uses its legacy protocol.
    let mut boxes = Vec::new();
    for home in &homes {
        let mut sshd = lab.start_host(home);
        match home.as_str() {
            "nosftp" => sshd.without_sftp(),
            _ => sshd.external_sftp(),
        }
        if home == "conda" {
            println!(
                "conda-like ~/.bashrc: {:.2} s per shell start here",
                sshd.conda_like_home()
            );
        }
        boxes.push((home.clone(), sshd));
    }
    let run = lab.path("run");
    std::fs::create_dir_all(run.join("evals")).expect("dir");
    let big = run.join("big.bin");
    let medium = run.join("ckpt.bin");
    if rows.iter().any(|r| r == "large" || r == "resume") {
        support::write_random(&big, LOOPBACK_LARGE, 1);
        support::write_random(&medium, DELAYED_LARGE, 2);
    }
    let small_bytes = write_evals(&run.join("evals"), SMALL_FILES);
    println!(
        "| home | RTT | case | rigwatch | rsync -e ssh | scp | rigwatch vs rsync | vs scp | client CPU s/GiB (rigwatch / rsync / scp) | box CPU s/GiB (rigwatch / rsync / scp) | round trips in sequence (rigwatch / rsync) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (home, sshd) in &boxes {
        for &rtt in &rtts {
            let proxy = (rtt > 0 || proxied)
                .then(|| DelayProxy::start(sshd.port, Duration::from_millis(rtt / 2)));
            let at = format!("{home} | {rtt}");
            if rows.iter().any(|r| r == "large") {
                let (large, size): (&PathBuf, u64) = if rtt == 0 && !proxied {
                    (&big, LOOPBACK_LARGE)
                } else {
                    (&medium, DELAYED_LARGE)
                };
                // Three rounds, each tool's median: the two cores are shared by both ends and
                // the delay proxy, and one run of the 256 MiB file at 30 ms ranged from 3.9x to
                // 5.4x rsync's speed from one run to the next.
                let mut runs = Vec::new();
                for round in 0..3 {
                    let tag = format!("large-{home}-{rtt}-{round}");
                    runs.push(measure(&lab, sshd, proxy.as_ref(), large, &tag, true).await);
                }
                let label = format!("one {} MiB file (median of 3)", size >> 20);
                row(&at, &label, size, &median(runs));
            }
            if rows.iter().any(|r| r == "small") {
                let tag = format!("small-{home}-{rtt}");
                let m = measure(
                    &lab,
                    sshd,
                    proxy.as_ref(),
                    &run.join("evals"),
                    &tag,
                    rtt == 0,
                )
                .await;
                let label = format!("{SMALL_FILES} files of ~4 KiB");
                row(&at, &label, small_bytes, &m);
            }
            if rows.iter().any(|r| r == "many") {
                many(&lab, (sshd, proxy.as_ref()), &at, &run).await;
            }
        }
    }
    if rows.iter().any(|r| r == "resume") {
        resume(&lab, &boxes[0].1, &big).await;
    }
}

/// Eval results as a run writes them: JSON of ~4 KiB each, proven by the built-in check.
fn write_evals(dir: &Path, files: usize) -> u64 {
    std::fs::create_dir_all(dir).expect("dir");
    let mut bytes = 0;
    for i in 0..files {
        let scores: Vec<String> = (0..200 + i % 100)
            .map(|j| format!("{:.6}", ((i * 7919 + j * 104_729) % 1_000_003) as f64 / 1e6))
            .collect();
        let text = format!("{{\"step\": {i}, \"scores\": [{}]}}\n", scores.join(", "));
        std::fs::write(dir.join(format!("eval-{i:04}.json")), &text).expect("eval");
        bytes += text.len() as u64;
    }
    bytes
}

/// 10 000 and 100 000 files of ~40 bytes on loopback: the time against rsync, and this
/// process's peak RSS during each pull (VmHWM, reset before it), which must not grow with the
/// file count.
async fn many(lab: &Lab, to: (&support::Sshd, Option<&DelayProxy>), at: &str, run: &Path) {
    let sshd = to.0;
    let counts = picked("PULL_BENCH_MANY", "10000,100000");
    for files in counts.iter().filter_map(|n| n.parse::<usize>().ok()) {
        let dir = run.join(format!("many-{files}"));
        if !dir.exists() {
            support::results::write_cells(&dir, files, 1000);
        }
        let bytes: u64 = walk(&dir).iter().sum();
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let tag = format!("many-{files}-{}-{}", sshd.name, to.1.map_or(0, |p| p.port));
        let (m, runs) = measure_both_orders(lab, to, &dir, &tag).await;
        let label = format!(
            "{files} files of ~40 B, the mean of two each ({runs}; peak RSS {})",
            peak_rss()
        );
        row(at, &label, bytes, &m);
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let again = repull(lab, to, &dir, &tag).await;
        let label = format!(
            "re-pull of the {files}, unchanged (peak RSS {})",
            peak_rss()
        );
        row(at, &label, bytes, &again);
    }
}

/// This process's peak RSS since it was last reset (`/proc/self/clear_refs`).
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_string()))
        .unwrap_or_default()
}

/// Sizes of every file under `dir`.
fn walk(dir: &Path) -> Vec<u64> {
    let mut sizes = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let meta = entry.metadata().expect("meta");
        if meta.is_dir() {
            sizes.extend(walk(&entry.path()));
        } else {
            sizes.push(meta.len());
        }
    }
    sizes
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
