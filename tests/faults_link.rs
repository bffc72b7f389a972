//! Faults of the link between rigwatch and a box, on real sshd processes, each bounded in time:
//! latency (100 ms and 2 s round trips) and a cut mid-stream through the delay proxy, an sshd
//! restarting in a loop, a partition (iptables DROP in a network namespace the test makes) and a
//! 56 kbit/s link (`tc tbf` there). Each checks the link state the fault should give, that it
//! heals on its own, and that another host's commands never wait on the faulty one.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rigwatch::config::fleet;
use rigwatch::transport::{ExecLimits, LinkState, Pool};
use support::delay::DelayProxy;
use support::netns::Netns;
use support::{Lab, Sshd, wait_until};

fn state(pool: &Pool, host: &str) -> LinkState {
    pool.get(host).expect("host").state()
}

fn limits(secs: u64) -> ExecLimits {
    ExecLimits {
        timeout: Duration::from_secs(secs),
        ..ExecLimits::default()
    }
}

/// A command on the healthy `steady` host answers in well under a second, whatever the other
/// host's link is doing: no caller waits on a faulty box.
async fn steady_answers(pool: &Pool) {
    // Its first connection is not what is measured: on a loaded machine it may still be
    // coming up when the faulty box already is (an exec then fails at once, no session).
    let up = wait_until(Duration::from_secs(15), || {
        state(pool, "steady").word() == "up"
    })
    .await;
    assert!(
        up.is_some(),
        "steady never came up: {:?}",
        state(pool, "steady")
    );
    let started = Instant::now();
    let out = pool.exec("steady", "echo ok", limits(5)).await;
    let took = started.elapsed();
    assert!(
        out.as_ref().is_ok_and(|o| o.stdout == b"ok\n") && took < Duration::from_secs(2),
        "the healthy host waited {took:?}: {out:?}"
    );
}

/// Every kind of state `host` passes through, recorded as it changes.
fn record_states(pool: &Pool, host: &str) -> Arc<Mutex<Vec<&'static str>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut rx = pool.get(host).expect("host").watch_state();
    let into = Arc::clone(&seen);
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let word = rx.borrow_and_update().word();
            let mut seen = into.lock().expect("states");
            if seen.last() != Some(&word) {
                seen.push(word);
            }
        }
    });
    seen
}

/// The fleet at `path` with rigwatch's default keepalive (5 s × 3) instead of the lab's fast one
/// (1 s × 2), and `connect_secs` to connect: a slow link's handshake takes several round trips,
/// and one SSH packet (up to 32 KiB) takes 4.7 s at 56 kbit/s, longer than the lab's window.
fn with_default_keepalive(path: &std::path::Path, connect_secs: u32) {
    let text = std::fs::read_to_string(path).expect("fleet");
    let text = text
        .replace("keepalive_secs = 1\nkeepalive_max = 2\n", "")
        .replace(
            "connect_timeout_secs = 3\n",
            &format!("connect_timeout_secs = {connect_secs}\n"),
        );
    std::fs::write(path, text).expect("fleet");
}

/// A fleet of `far` (through a delay proxy on `port`) and `steady`, given `connect_secs` and
/// the default keepalive when `slow`; once `steady` is up.
async fn fleet_via(lab: &Lab, far: &Sshd, port: u16, steady: &Sshd, slow: Option<u32>) -> Pool {
    let hosts = [
        ("far", lab.host_entry_via(far, port)),
        ("steady", lab.host_entry(steady)),
    ];
    let path = lab.fleet("fleet.toml", "", &hosts);
    if let Some(connect_secs) = slow {
        with_default_keepalive(&path, connect_secs);
    }
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let up = wait_until(Duration::from_secs(15), || {
        state(&pool, "steady").word() == "up"
    })
    .await;
    assert!(up.is_some(), "{:?}", state(&pool, "steady"));
    pool
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100ms_link_is_up_and_a_cut_mid_stream_heals_on_its_own() {
    let mut lab = Lab::new();
    let far = lab.start_host("far");
    let steady = lab.start_host("steady");
    let proxy = DelayProxy::start(far.port, Duration::from_millis(50));
    let pool = fleet_via(&lab, &far, proxy.port, &steady, None).await;
    let up = wait_until(Duration::from_secs(20), || {
        state(&pool, "far").word() == "up"
    })
    .await;
    assert!(up.is_some(), "{:?}", state(&pool, "far"));
    let rtt = state(&pool, "far").rtt_ms().expect("rtt");
    assert!((100.0..1000.0).contains(&rtt), "round trip {rtt} ms");

    // A command streaming when the link is cut: it ends with an error in bounded time, the host
    // is down at once (the socket closed; no keepalive wait needed), then back by itself.
    let states = record_states(&pool, "far");
    let running = pool.exec(
        "far",
        "for i in $(seq 50); do echo $i; sleep 0.1; done",
        limits(20),
    );
    let cut_at = Instant::now();
    let (out, ()) = tokio::join!(running, async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        proxy.cut();
    });
    assert!(
        out.as_ref().map_or(true, |o| o.exit_status.is_none()),
        "a cut command is not reported finished: {out:?}"
    );
    assert!(cut_at.elapsed() < Duration::from_secs(5), "{out:?}");
    steady_answers(&pool).await;
    let back = wait_until(Duration::from_secs(15), || {
        state(&pool, "far").word() == "up"
    })
    .await;
    assert!(back.is_some(), "{:?}", state(&pool, "far"));
    let seen = states.lock().expect("states").clone();
    assert!(seen.contains(&"down"), "the cut was seen: {seen:?}");
    let out = pool
        .exec("far", "echo back", limits(10))
        .await
        .expect("exec");
    assert_eq!(out.stdout, b"back\n");
    pool.shutdown().await;
}

/// A 2 s round trip (a box on the far side of the world on a bad night) is slow, not down: with
/// the default keepalive (5 s × 3) it is "degraded", commands still run, and it never flaps.
/// (With the lab's 1 s × 2 no answer could come back within the window: it would be down.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2s_link_is_degraded_never_down_and_commands_still_run() {
    let mut lab = Lab::new();
    let far = lab.start_host("far");
    let steady = lab.start_host("steady");
    let proxy = DelayProxy::start(far.port, Duration::from_secs(1));
    let pool = fleet_via(&lab, &far, proxy.port, &steady, Some(40)).await;
    let states = record_states(&pool, "far");
    steady_answers(&pool).await;
    let slow = wait_until(Duration::from_secs(60), || {
        state(&pool, "far").word() == "degraded"
    })
    .await;
    assert!(slow.is_some(), "{:?}", state(&pool, "far"));
    let LinkState::Degraded { reason, .. } = state(&pool, "far") else {
        unreachable!()
    };
    // A ping waits at most max(poll, 1.5 s): past that the link is said slow by its timeout.
    assert!(
        reason.starts_with("slow") || reason.starts_with("ping timed out"),
        "{reason}"
    );
    steady_answers(&pool).await;
    let out = pool
        .exec("far", "echo far", limits(30))
        .await
        .expect("exec");
    assert_eq!(out.stdout, b"far\n");
    let seen = states.lock().expect("states").clone();
    assert!(!seen.contains(&"down"), "slow is not down: {seen:?}");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sshd_restarting_in_a_loop_is_followed_and_heals_and_never_stalls_others() {
    let mut lab = Lab::new();
    let mut flappy = lab.start_host("flappy");
    let steady = lab.start_host("steady");
    let hosts = [
        ("flappy", lab.host_entry(&flappy)),
        ("steady", lab.host_entry(&steady)),
    ];
    let pool = Pool::start(&fleet::load(&lab.fleet("fleet.toml", "", &hosts)).expect("fleet"));
    let up = wait_until(Duration::from_secs(15), || {
        state(&pool, "flappy").word() == "up"
    })
    .await;
    assert!(up.is_some(), "{:?}", state(&pool, "flappy"));
    let states = record_states(&pool, "flappy");
    for _ in 0..6 {
        flappy.restart();
        steady_answers(&pool).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    let back = wait_until(Duration::from_secs(15), || {
        state(&pool, "flappy").word() == "up"
    })
    .await;
    assert!(back.is_some(), "{:?}", state(&pool, "flappy"));
    let seen = states.lock().expect("states").clone();
    assert!(seen.contains(&"down"), "the restarts were seen: {seen:?}");
    let out = pool.exec("flappy", "echo here", limits(10)).await;
    assert_eq!(out.expect("exec").stdout, b"here\n");
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_box_is_down_within_the_keepalive_window_and_heals() {
    let Some(ns) = Netns::or_skip("partition") else {
        return;
    };
    let mut lab = Lab::new();
    let boxed = lab.start_host_in("walled", &ns);
    let steady = lab.start_host("steady");
    let hosts = [
        ("walled", lab.host_entry(&boxed)),
        ("steady", lab.host_entry(&steady)),
    ];
    let pool = Pool::start(&fleet::load(&lab.fleet("fleet.toml", "", &hosts)).expect("fleet"));
    let up = wait_until(Duration::from_secs(15), || {
        state(&pool, "walled").word() == "up"
    })
    .await;
    assert!(up.is_some(), "{:?}", state(&pool, "walled"));

    steady_answers(&pool).await;
    ns.partition(boxed.port);
    // Nothing is refused, nothing answers: only the keepalive can tell. 1 s × (2 + 1) and a
    // poll of 1 s: down by 5 s, with 3 s to spare.
    let down = wait_until(Duration::from_secs(8), || {
        state(&pool, "walled").word() == "down"
    })
    .await;
    assert!(down.is_some(), "{:?}", state(&pool, "walled"));
    let LinkState::Down { reason, .. } = state(&pool, "walled") else {
        unreachable!()
    };
    assert!(
        reason.contains("keepalive") || reason.contains("timed out"),
        "{reason}"
    );
    steady_answers(&pool).await;

    ns.heal(boxed.port);
    // Backoff capped at 2 s, then a 3 s connect: back well within 15 s.
    let back = wait_until(Duration::from_secs(15), || {
        state(&pool, "walled").word() == "up"
    })
    .await;
    assert!(back.is_some(), "{:?}", state(&pool, "walled"));
    let out = pool.exec("walled", "echo healed", limits(10)).await;
    assert_eq!(out.expect("exec").stdout, b"healed\n");
    pool.shutdown().await;
}

/// A 56 kbit/s link (the box's side, where its output comes from): slow output arrives whole,
/// the link stays usable all the while, and the other host is not held up. With the lab's 1 s
/// × 2 keepalive it was said down: a 32 KiB packet takes 4.7 s, and no part of a packet counts
/// as an answer (OpenSSH counts the same way); the default 5 s × 3 holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_56kbit_link_delivers_whole_output_slowly_and_stays_up() {
    let Some(ns) = Netns::or_skip("56kbit") else {
        return;
    };
    let mut lab = Lab::new();
    let boxed = lab.start_host_in("narrow", &ns);
    let steady = lab.start_host("steady");
    let hosts = [
        ("narrow", lab.host_entry(&boxed)),
        ("steady", lab.host_entry(&steady)),
    ];
    let path = lab.fleet("fleet.toml", "", &hosts);
    with_default_keepalive(&path, 10);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let up = wait_until(Duration::from_secs(15), || {
        state(&pool, "narrow").word() == "up"
    })
    .await;
    assert!(up.is_some(), "{:?}", state(&pool, "narrow"));
    let states = record_states(&pool, "narrow");
    steady_answers(&pool).await;

    ns.narrow(56);
    // 24 000 bytes of output (32 000 as base64): ~4.6 s at 7 000 bytes/s; instant on loopback.
    let started = Instant::now();
    let (out, ()) = tokio::join!(
        pool.exec("narrow", "head -c 24000 /dev/zero | base64 -w0", limits(60)),
        steady_answers(&pool)
    );
    let took = started.elapsed();
    let out = out.expect("exec over 56 kbit/s");
    assert_eq!(out.stdout.len(), 32_000, "whole output");
    assert!(
        took >= Duration::from_secs(3),
        "the link was not narrowed: {took:?}"
    );
    let seen = states.lock().expect("states").clone();
    assert!(
        !seen.contains(&"down"),
        "a narrow link is not down: {seen:?}"
    );
    assert!(state(&pool, "narrow").is_usable());
    pool.shutdown().await;
}
