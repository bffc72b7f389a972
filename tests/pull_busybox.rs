//! A box whose tools are busybox's (an Alpine image, whose `openssh-server` comes without
//! sftp-server unless `openssh-sftp-server` is added too): a checkpoint comes over exec, in
//! pieces. busybox's `tail -c +N` reads through the N bytes before a piece instead of seeking
//! to it (GNU tail seeks), so every piece cost the box a read of all that came before it, and a
//! file's pieces the square of its size. What the box reads to send the file is counted here,
//! whatever tool reads it: each of `tail` and `dd` is busybox's, behind a shim that adds what
//! it read (`rchar` of the shim's shell, which holds its reaped child's) to a log.

mod support;

use std::path::PathBuf;

use rigwatch::config::fleet;
use support::Lab;
use support::results::{box_to_pull, pull_on};

/// busybox on this machine (`.ci/run` installs it).
fn busybox() -> PathBuf {
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v busybox"])
        .output()
        .expect("sh");
    let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "busybox is not installed (apt-get install busybox-static)"
    );
    PathBuf::from(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_sent_in_pieces_by_busybox_costs_the_box_one_read_of_it() {
    const SIZE: u64 = 48 << 20;
    let busybox = busybox();
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    sshd.without_sftp();
    let reads = sshd.dir.join("reads.log");
    for tool in ["tail", "dd"] {
        sshd.shim_script(
            tool,
            &format!(
                "#!/bin/sh\n{busybox} {tool} \"$@\"\nst=$?\n\
                 sed -n 's/^rchar: /{tool} /p' /proc/$$/io >> {reads}\nexit $st\n",
                busybox = busybox.display(),
                reads = reads.display()
            ),
        );
    }
    let folder = sshd.dir.join("workspace/run/final_ckpts");
    let ckpt = folder.join("ckpt.bin");
    support::write_random(&ckpt, SIZE, 3);
    let dest = lab.path("results/box");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry(&sshd),
        folder.display(),
        dest.display()
    );
    let config = fleet::load(&lab.fleet("busybox.toml", "", &[("box", body)])).expect("fleet");
    let (pool, session, spec) = box_to_pull(&config).await;
    let record = pull_on(&session, &spec, None).await;
    pool.shutdown().await;

    assert!(
        record.files.len() == 1 && record.files[0].is_good(),
        "{record:?}"
    );
    let pulled = std::fs::read(&record.files[0].local_path).expect("pulled");
    assert!(
        pulled == std::fs::read(&ckpt).expect("checkpoint"),
        "the copy is the box's file"
    );
    let log = std::fs::read_to_string(&reads).unwrap_or_default();
    let counted: Vec<u64> = log
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    assert!(
        counted.iter().filter(|&&n| n > 0).count() >= 2,
        "the file came in pieces, each read by a shimmed tool:\n{log}"
    );
    let read: u64 = counted.iter().sum();
    assert!(
        read <= SIZE + SIZE / 8,
        "the box read {} MiB to send a {} MiB file:\n{log}",
        read >> 20,
        SIZE >> 20
    );
}

/// A box whose `find` is busybox's (no `-printf`, no `-readable`) cannot be listed: the pull
/// says which tool the box lacks and how a box gets it, once for the host, not busybox's usage
/// text as the reason of a listing that failed.
#[test]
fn a_box_whose_find_is_busybox_s_is_told_it_needs_gnu_find() {
    let busybox = busybox();
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    sshd.shim_script(
        "find",
        &format!("#!/bin/sh\nexec {} find \"$@\"\n", busybox.display()),
    );
    let folder = sshd.dir.join("workspace/run/final_ckpts");
    support::write_random(&folder.join("ckpt.bin"), 1 << 20, 4);
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry(&sshd),
        folder.display(),
        lab.path("results/box").display()
    );
    let fleet = lab.fleet("busybox.toml", "", &[("box", body)]);
    let out = lab
        .rigwatch_on(&fleet)
        .args(["pull", "box"])
        .output()
        .expect("pull");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("GNU find"), "{said}");
    assert!(!said.contains("Usage"), "{said}");
}
