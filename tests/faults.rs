//! Faults real rented boxes produce, on real sshd processes, each bounded in time: a killed
//! sshd, a frozen box, a rebuilt box with a new host key, wrong credentials.

mod support;

use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::transport::{ExecLimits, LinkState, Pool, TransportError};
use support::{Lab, keygen, wait_until};

fn word(pool: &Pool, host: &str) -> &'static str {
    pool.get(host).expect("host").state().word()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_sshd_goes_down_then_comes_back_on_its_own() {
    let mut lab = Lab::new();
    let mut host = lab.start_host("box");
    let path = lab.fleet("fleet.toml", "", &[("box", lab.host_entry(&host))]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    assert!(
        wait_until(Duration::from_secs(15), || word(&pool, "box") == "up")
            .await
            .is_some()
    );

    host.kill();
    let took = wait_until(Duration::from_secs(10), || word(&pool, "box") == "down").await;
    assert!(
        took.is_some(),
        "not down after a kill: {:?}",
        pool.get("box").map(|l| l.state())
    );
    let LinkState::Down { reason, .. } = pool.get("box").expect("host").state() else {
        unreachable!()
    };
    assert!(!reason.is_empty());
    let err = pool
        .exec("box", "true", ExecLimits::default())
        .await
        .expect_err("down");
    assert!(
        matches!(err, TransportError::LinkDown(_)),
        "fails at once with the link state: {err}"
    );

    let port = host.port;
    host.restart();
    assert_eq!(host.port, port);
    let back = wait_until(Duration::from_secs(15), || word(&pool, "box") == "up").await;
    assert!(
        back.is_some(),
        "did not reconnect: {:?}",
        pool.get("box").map(|l| l.state())
    );
    let out = pool
        .exec("box", "echo back", ExecLimits::default())
        .await
        .expect("exec after reconnect");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "back");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_box_is_noticed_within_the_keepalive_window_and_never_blocks_callers() {
    let mut lab = Lab::new();
    let host = lab.start_host("box");
    let path = lab.fleet("fleet.toml", "", &[("box", lab.host_entry(&host))]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    assert!(
        wait_until(Duration::from_secs(15), || word(&pool, "box") == "up")
            .await
            .is_some()
    );

    host.freeze();
    let started = Instant::now();
    let err = pool
        .exec(
            "box",
            "true",
            ExecLimits {
                timeout: Duration::from_secs(2),
                ..ExecLimits::default()
            },
        )
        .await
        .expect_err("a frozen box answers nothing");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "exec returned in bounded time: {err}"
    );
    // keepalive 1 s × (2 + 1) plus a poll: well inside 10 s.
    let took = wait_until(Duration::from_secs(10), || word(&pool, "box") == "down").await;
    assert!(
        took.is_some(),
        "frozen box not marked down: {:?}",
        pool.get("box").map(|l| l.state())
    );
    let LinkState::Down { reason, .. } = pool.get("box").expect("host").state() else {
        unreachable!()
    };
    assert!(
        reason.contains("keepalive") || reason.contains("timed out"),
        "{reason}"
    );

    host.thaw();
    let back = wait_until(Duration::from_secs(20), || word(&pool, "box") == "up").await;
    assert!(
        back.is_some(),
        "did not recover after thaw: {:?}",
        pool.get("box").map(|l| l.state())
    );
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_host_key_is_refused_and_never_retried() {
    let mut lab = Lab::new();
    let mut host = lab.start_host("box");
    let path = lab.fleet("fleet.toml", "", &[("box", lab.host_entry(&host))]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    assert!(
        wait_until(Duration::from_secs(15), || word(&pool, "box") == "up")
            .await
            .is_some()
    );

    host.replace_host_key();
    let refused = wait_until(Duration::from_secs(15), || {
        word(&pool, "box") == "hostkey-refused"
    })
    .await;
    assert!(
        refused.is_some(),
        "{:?}",
        pool.get("box").map(|l| l.state())
    );
    let LinkState::HostkeyRefused { reason, .. } = pool.get("box").expect("host").state() else {
        unreachable!()
    };
    assert!(reason.contains("HOST KEY CHANGED"), "{reason}");
    assert!(
        reason.contains("known_hosts:1"),
        "names the file and line: {reason}"
    );
    // The fix edits the file rigwatch read, not ~/.ssh/known_hosts (ssh-keygen's default).
    let fix = format!(
        "`ssh-keygen -f '{}' -R '[127.0.0.1]:{}'`",
        lab.known_hosts.display(),
        host.port
    );
    assert!(reason.contains(&fix), "the fix names the file: {reason}");

    // Several backoff periods later (cap 2 s) the pool has not tried again.
    let seen = host.connections_seen();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        host.connections_seen(),
        seen,
        "a changed key must not be retried"
    );
    assert_eq!(word(&pool, "box"), "hostkey-refused");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_host_is_refused_unless_accept_new_records_it() {
    let mut lab = Lab::new();
    let host = lab.start_unknown_host("box");
    let path = lab.fleet("fleet.toml", "", &[("box", lab.host_entry(&host))]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let states = pool.settle(Duration::from_secs(15)).await;
    let LinkState::HostkeyRefused { reason, .. } = &states[0].1 else {
        panic!("{:?}", states[0].1)
    };
    assert!(reason.contains("not in known_hosts"), "{reason}");
    assert!(
        reason.contains(&format!("ssh-keyscan -p {} 127.0.0.1", host.port)),
        "says how: {reason}"
    );
    assert!(
        reason.contains("SHA256:"),
        "shows the fingerprint: {reason}"
    );
    pool.shutdown().await;

    let body = format!("{}\naccept_new = true", lab.host_entry(&host));
    let path = lab.fleet("tofu.toml", "", &[("box", body)]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let states = pool.settle(Duration::from_secs(15)).await;
    assert_eq!(states[0].1.word(), "up", "{:?}", states[0].1);
    let known = std::fs::read_to_string(&lab.known_hosts).expect("known_hosts");
    assert!(
        known.contains(&format!(
            "[127.0.0.1]:{} {}",
            host.port,
            host.host_public_key()
        )),
        "{known}"
    );
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_user_and_wrong_key_are_auth_refused_with_the_reason() {
    let mut lab = Lab::new();
    let host = lab.start_host("box");
    let stranger = lab.path("stranger_ed25519");
    keygen(&stranger, "");
    let hosts = [
        (
            "wrong-user",
            format!(
                "ssh = \"{}\"\nidentity = \"{}\"",
                host.spec("nosuchuser"),
                lab.client_key.display()
            ),
        ),
        (
            "wrong-key",
            format!(
                "ssh = \"{}\"\nidentity = \"{}\"",
                host.spec(&lab.user),
                stranger.display()
            ),
        ),
        (
            "no-key",
            format!(
                "ssh = \"{}\"\nidentity = \"{}\"",
                host.spec(&lab.user),
                lab.path("missing").display()
            ),
        ),
    ];
    let path = lab.fleet("fleet.toml", "", &hosts);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let states = pool.settle(Duration::from_secs(20)).await;
    for (name, state) in &states {
        let LinkState::AuthRefused { reason, .. } = state else {
            panic!("{name}: {state:?}")
        };
        match name.as_str() {
            "wrong-user" => assert!(
                reason.starts_with("nosuchuser:") && reason.contains("rejected"),
                "{reason}"
            ),
            "wrong-key" => assert!(reason.contains("stranger_ed25519 (rejected)"), "{reason}"),
            _ => assert!(reason.contains("no identity to offer"), "{reason}"),
        }
    }
    pool.shutdown().await;
}

/// A peer that accepts TCP and never speaks SSH. The connect timeout (3 s in the lab's fleet) is
/// the whole wait for a connection, whatever stage it hangs in: the host is down by then, not
/// after a second attempt, and the message states the time that really passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_speaks_ssh_is_down_after_the_timeout_saying_how_long() {
    let lab = Lab::new();
    let peer = support::silent::SilentPeer::start();
    let entry = format!(
        "ssh = \"{}@127.0.0.1:{}\"\nidentity = \"{}\"",
        lab.user,
        peer.port,
        lab.client_key.display()
    );
    let path = lab.fleet("fleet.toml", "", &[("mute", entry)]);
    let started = Instant::now();
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let states = pool.settle(Duration::from_secs(20)).await;
    let took = started.elapsed().as_secs_f64();
    let LinkState::Down { reason, .. } = &states[0].1 else {
        panic!("not down after {took:.1}s: {states:?}")
    };
    assert!(
        took <= 3.0 + 1.0,
        "took {took:.1}s for a 3 s timeout: {reason}"
    );
    let said =
        support::silent::stated_secs(reason).unwrap_or_else(|| panic!("no figure: {reason}"));
    assert!(
        (said - took).abs() <= 1.0,
        "said {said}s, took {took:.1}s: {reason}"
    );
    pool.shutdown().await;
}
