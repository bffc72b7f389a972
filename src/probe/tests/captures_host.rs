//! Host captures: df bytes and inodes, /proc files, tmux and pgrep.

use super::capture;
use crate::probe::*;
use std::time::Duration;

#[test]
fn df_bytes_and_inodes_merge_by_mount() {
    let b = capture!("df_PB1");
    let i = capture!("df_Pi");
    let bytes = parse_df_bytes(&b.body).expect("parses");
    let inodes = parse_df_inodes(&i.body).expect("parses");
    assert_eq!(bytes.len(), 2);
    let root = &bytes[1];
    assert_eq!(
        (root.filesystem.as_str(), root.mount.as_str()),
        ("/dev/vda", "/")
    );
    assert_eq!(root.total_bytes, Some(270_553_174_016));
    assert_eq!(root.used_bytes, Some(17_286_635_520));
    assert_eq!(root.avail_bytes, Some(68_702_302_208));
    let shm = &inodes[0];
    assert_eq!(
        (shm.mount.as_str(), shm.total, shm.used, shm.free),
        ("/dev/shm", Some(16_497_627), Some(1), Some(16_497_626))
    );
    let mounts = merge_df(bytes, inodes);
    let names: Vec<&str> = mounts.iter().map(|m| m.mount.as_str()).collect();
    assert_eq!(names, ["/dev/shm", "/"]);
    let root_inodes = mounts[1].inodes.as_ref().expect("root has inode counts");
    assert_eq!(
        (root_inodes.total, root_inodes.used),
        (Some(16_777_216), Some(123_439))
    );
    assert!(mounts.iter().all(|m| m.bytes.is_some()));
}

#[test]
fn df_row_numbers_checked_against_capacity_column() {
    // On / Used + Available is far below 1-blocks (17.3 G + 68.7 G of 270.6 G), and df's 21 %
    // is used / (used + avail), rounded up: space left is `avail`, never `total - used`.
    let bytes = parse_df_bytes(&capture!("df_PB1").body).expect("parses");
    let r = &bytes[1];
    let (used, avail) = (
        r.used_bytes.unwrap_or(0) as f64,
        r.avail_bytes.unwrap_or(0) as f64,
    );
    assert_eq!((100.0 * used / (used + avail)).ceil(), 21.0);
}

#[test]
fn proc_files() {
    let up = parse_uptime(&capture!("proc_uptime").body).expect("parses");
    assert_eq!(up.up, Duration::from_millis(29_850));
    assert_eq!(up.idle_all_cpus, Duration::from_millis(467_500));
    let load = parse_loadavg(&capture!("loadavg").body).expect("parses");
    assert_eq!((load.one, load.five, load.fifteen), (0.0, 0.0, 0.0));
    assert_eq!(
        (load.runnable, load.total_tasks, load.last_pid),
        (1, 207, 449)
    );
    let nproc: u32 = capture!("nproc").body.trim().parse().expect("a count");
    let online = crate::probe::tests::split(include_str!(
        "../../../tests/fixtures/handwritten/cpus_online_handwritten.txt"
    ));
    assert_eq!(parse_cpus_online(&online.body), Ok(nproc));
    let c = capture!("meminfo");
    assert_eq!(
        c.command, "head -20 /proc/meminfo",
        "a truncated meminfo still parses"
    );
    let mem = parse_meminfo(&c.body).expect("parses");
    assert_eq!(mem.total_bytes, 131_981_020 * 1024);
    assert_eq!(mem.available_bytes, Some(131_478_164 * 1024));
    assert_eq!(
        (mem.swap_total_bytes, mem.swap_free_bytes),
        (Some(0), Some(0))
    );
}

#[test]
fn tmux_without_server_is_no_sessions() {
    let c = capture!("tmux_ls");
    assert_eq!(c.exit, 1);
    assert_eq!(parse_tmux_ls(&c.body), Ok(vec![]));
}

#[test]
fn tmux_with_a_session() {
    let c = capture!("tmux_run");
    // The capture ran `tmux ls` then `tmux list-panes -F ...`: line 1 is ls's, line 2 is not.
    let mut lines = c.body.lines();
    let ls = lines.next().expect("ls line");
    let s = parse_tmux_ls(ls).expect("parses");
    assert_eq!(
        (s[0].name.as_str(), s[0].windows, s[0].attached),
        ("train", 1, false)
    );
    let when = s[0].created.map(|t| t.to_string());
    assert_eq!(when.as_deref(), Some("2026-11-22 14:41:24"));
    let err = parse_tmux_ls(&c.body).expect_err("list-panes line is not ls output");
    assert_eq!(err.line, 2);
}

#[test]
fn pgrep_under_load_and_zombie() {
    let load = parse_pgrep(&capture!("pgrep_load").body).expect("parses");
    let want = ProcessLine {
        pid: 467,
        cmdline: "python3 /tmp/load.py 45".into(),
    };
    assert_eq!(load, [want]);
    let zombie = parse_pgrep(&capture!("zombie_pgrep").body).expect("parses");
    assert_eq!(zombie.len(), 1);
    assert_eq!(zombie[0].pid, 585);
    assert!(
        zombie[0]
            .cmdline
            .starts_with("python3 -c import torch,time; x=torch.empty(")
    );
    assert!(zombie[0].cmdline.ends_with("time.sleep(40)"));
    assert_eq!(parse_pgrep(""), Ok(vec![]), "exit 1, no match");
}

/// One `df --output` call gives both dimensions, the way the probe now asks GNU df: the same
/// mounts and numbers as `-PB1` and `-Pi` (taken a moment apart, so the counts differ a little).
#[test]
fn df_output_gives_bytes_and_inodes_in_one_call() {
    let both = parse_df_output(&capture!("df_output").body).expect("parses");
    let names: Vec<&str> = both.iter().map(|m| m.mount.as_str()).collect();
    assert_eq!(names, ["/dev/shm", "/"]);
    let root = &both[1];
    assert_eq!(root.filesystem, "/dev/vda");
    let bytes = root.bytes.as_ref().expect("bytes");
    assert_eq!(
        (bytes.total_bytes, bytes.used_bytes, bytes.avail_bytes),
        (
            Some(270_553_174_016),
            Some(17_286_643_712),
            Some(68_702_294_016)
        )
    );
    let inodes = root.inodes.as_ref().expect("inodes");
    assert_eq!(
        (inodes.total, inodes.used, inodes.free),
        (Some(16_777_216), Some(123_440), Some(16_653_776))
    );
    assert!(parse_df_output("Filesystem Type 1B-blocks\nnonsense\n").is_err());
}
