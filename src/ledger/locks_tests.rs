use super::*;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_790_000_000 + secs, 0).unwrap_or_default()
}

#[test]
fn only_a_pull_waits_and_only_for_a_pull() {
    use Act::*;
    for want in [Pull, Teardown, Kill] {
        assert_eq!(meet(want, None), Meet::Take, "{want:?} on a free target");
        assert_eq!(
            meet(want, Some(None)),
            Meet::Refuse,
            "{want:?}, holder unknown"
        );
        for held in [Pull, Teardown, Kill] {
            let expected = if (want, held) == (Pull, Pull) {
                Meet::Wait
            } else {
                Meet::Refuse
            };
            assert_eq!(
                meet(want, Some(Some(held))),
                expected,
                "{want:?} vs {held:?}"
            );
        }
    }
}

#[test]
fn a_held_target_names_who_holds_it_and_is_free_once_dropped() {
    let dir = tempfile::tempdir().expect("dir");
    let first = try_take(dir.path(), "gpu-1", Act::Pull, "box gpu-1", at(0)).expect("free");
    assert!(first.covers("gpu-1") && !first.covers("gpu-2"));
    // A second open of the same file, as another process would make: flock sees two owners.
    let busy = try_take(dir.path(), "gpu-1", Act::Teardown, "box gpu-1", at(5))
        .expect_err("held by the pull");
    let Busy::By(h) = &busy else {
        panic!("{busy:?}")
    };
    assert_eq!(
        (h.act, h.pid, h.since),
        (Act::Pull, std::process::id(), at(0))
    );
    assert_eq!(
        busy.to_string(),
        format!(
            "a pull of box gpu-1 is running in pid {} since {}",
            std::process::id(),
            at(0).format("%Y-%m-%d %H:%M:%S UTC")
        )
    );
    // Another target is its own.
    let other = try_take(dir.path(), "gpu-2", Act::Kill, "box gpu-2", at(6));
    assert!(other.is_ok(), "{other:?}");
    assert!(holder_of(dir.path(), "gpu-1", "box gpu-1").is_some());
    drop(first);
    assert!(holder_of(dir.path(), "gpu-1", "box gpu-1").is_none());
    let again = try_take(dir.path(), "gpu-1", Act::Teardown, "box gpu-1", at(7));
    assert!(again.is_ok(), "{again:?}");
}

#[test]
fn names_that_differ_only_in_odd_characters_get_their_own_locks() {
    let dir = tempfile::tempdir().expect("dir");
    let a = try_take(dir.path(), "a/b", Act::Pull, "box a/b", at(0)).expect("a/b");
    let b = try_take(dir.path(), "a_b", Act::Pull, "box a_b", at(0));
    assert!(b.is_ok(), "a/b and a_b are two targets: {b:?}");
    let c = try_take(dir.path(), "a/b", Act::Pull, "box a/b", at(0));
    assert!(c.is_err(), "the same name is the same lock");
    drop(a);
}

/// The destroy's stdin is the lock: it reads nothing from it, and a copy of the descriptor is
/// the same lock (what keeps a destroy's box held once its rigwatch is killed is checked end
/// to end in tests/destroy_outcome.rs).
#[test]
fn a_command_handed_the_lock_reads_nothing_from_it() {
    let dir = tempfile::tempdir().expect("dir");
    let held = try_take(dir.path(), "vast", Act::Teardown, "box vast", at(0)).expect("free");
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg("wc -c")
        .stdin(held.inherit().expect("descriptor"))
        .stdout(std::process::Stdio::piped())
        .output()
        .expect("sh");
    let read = String::from_utf8_lossy(&child.stdout);
    assert_eq!(read.trim(), "0", "the lock file reads as empty");
    let busy = try_take(dir.path(), "vast", Act::Pull, "box vast", at(1));
    assert!(busy.is_err(), "held while rigwatch holds it");
    drop(held);
    let after = try_take(dir.path(), "vast", Act::Pull, "box vast", at(2));
    assert!(after.is_ok(), "{after:?}");
}

#[tokio::test]
async fn a_second_pull_waits_for_the_first_and_a_teardown_does_not() {
    let dir = tempfile::tempdir().expect("dir");
    let first = try_take(dir.path(), "gpu-1", Act::Pull, "box gpu-1", Utc::now()).expect("free");
    let mut heard = Vec::new();
    let refused = take(
        dir.path(),
        "gpu-1",
        Act::Teardown,
        "box gpu-1",
        true,
        &mut |b| heard.push(b.to_string()),
    )
    .await;
    assert!(
        refused.is_err() && heard.is_empty(),
        "a teardown never waits"
    );
    let no_wait = take(
        dir.path(),
        "gpu-1",
        Act::Pull,
        "box gpu-1",
        false,
        &mut |_| {},
    )
    .await;
    assert!(no_wait.is_err(), "--no-wait");
    let path = dir.path().to_path_buf();
    let second = tokio::spawn(async move {
        let mut heard = Vec::new();
        let held = take(&path, "gpu-1", Act::Pull, "box gpu-1", true, &mut |b| {
            heard.push(b.to_string())
        })
        .await;
        (held.is_ok(), heard)
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        !second.is_finished(),
        "the second pull waits while the first holds it"
    );
    drop(first);
    let (took, heard) = tokio::time::timeout(Duration::from_secs(10), second)
        .await
        .expect("taken within the bound")
        .expect("task");
    assert!(took);
    assert_eq!(heard.len(), 1, "told once: {heard:?}");
    assert!(
        heard[0].starts_with("a pull of box gpu-1 is running in pid"),
        "{heard:?}"
    );
}

#[test]
fn a_holder_line_that_is_not_ours_is_unknown_and_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let held = try_take(dir.path(), "x", Act::Pull, "box x", at(0)).expect("free");
    let (_, who) = files(dir.path(), "x");
    std::fs::write(&who, "\x1b]52;c;garbage\n").expect("write");
    let busy = try_take(dir.path(), "x", Act::Pull, "box x", at(1)).expect_err("held");
    assert!(matches!(busy, Busy::Unknown(_)), "{busy:?}");
    assert_eq!(meet(Act::Pull, busy.holder_act()), Meet::Refuse);
    drop(held);
}

/// Linux's `/proc/locks` (a Mac has no such table).
#[cfg(target_os = "linux")]
#[test]
fn the_kernel_s_table_names_the_locked_file_by_device_and_inode() {
    let dev = nix::sys::stat::makedev(8, 1);
    let table = "1: FLOCK  ADVISORY  WRITE 4711 08:01:1234567 0 EOF\n\
                 2: POSIX  ADVISORY  WRITE 4712 08:01:7654321 0 EOF\n\
                 3: FLOCK  ADVISORY  WRITE 4713 fd:02:7654321 0 EOF\n";
    assert!(flocked(table, dev, 1_234_567));
    assert!(
        !flocked(table, dev, 7_654_321),
        "a POSIX lock, and another device's flock"
    );
    assert!(flocked(table, nix::sys::stat::makedev(0xfd, 2), 7_654_321));
    assert!(!flocked("", dev, 1_234_567));
}

#[test]
fn the_dashboard_s_look_names_each_held_target_once() {
    let dir = tempfile::tempdir().expect("dir");
    let _held = try_take(dir.path(), "gpu-1", Act::Pull, "box gpu-1", at(0)).expect("free");
    let free = try_take(dir.path(), "gpu-2", Act::Pull, "box gpu-2", at(0)).expect("free");
    drop(free);
    let targets = ["gpu-1", "gpu-2", "never"].map(|k| (k.to_string(), format!("box {k}")));
    let seen = holders(dir.path(), targets);
    assert_eq!(seen.keys().collect::<Vec<_>>(), ["gpu-1"], "{seen:?}");
    assert!(
        seen["gpu-1"].starts_with("a pull of box gpu-1 is running in pid"),
        "{seen:?}"
    );
}
