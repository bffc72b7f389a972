//! The SSH pool against real sshd processes: commands, per-host PATH, channel slots, aliases
//! through ~/.ssh/config, ProxyJump, and 50 hosts from one process.

mod support;

use std::time::Duration;

use rigwatch::config::fleet;
use rigwatch::transport::{ExecLimits, LinkState, Pool, TransportError};
use support::{Lab, wait_until};

const SETTLE: Duration = Duration::from_secs(20);

fn limits(secs: u64) -> ExecLimits {
    ExecLimits {
        timeout: Duration::from_secs(secs),
        ..ExecLimits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_carries_commands_and_each_host_has_its_own_path() {
    let mut lab = Lab::new();
    let gpu = lab.start_host("gpu");
    let cpu = lab.start_host("cpu");
    gpu.shim_from_capture("nvidia-smi", "h100/nvsmi_L.txt");
    let path = lab.fleet(
        "fleet.toml",
        "",
        &[("gpu", lab.host_entry(&gpu)), ("cpu", lab.host_entry(&cpu))],
    );
    let fleet = fleet::load(&path).expect("fleet");
    let pool = Pool::start(&fleet);
    let states = pool.settle(SETTLE).await;
    for (name, state) in &states {
        assert_eq!(state.word(), "up", "{name}: {state:?}");
        let LinkState::Up { banner, auth, .. } = state else {
            unreachable!()
        };
        assert!(banner.starts_with("SSH-2.0-OpenSSH"), "{banner}");
        assert!(auth.contains("client_ed25519"), "{auth}");
    }

    let out = pool
        .exec("gpu", "nvidia-smi -L", limits(10))
        .await
        .expect("exec");
    assert_eq!(out.exit_status, Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("NVIDIA H100 80GB HBM3"));
    let out = pool
        .exec("cpu", "nvidia-smi -L", limits(10))
        .await
        .expect("exec");
    assert_eq!(out.exit_status, Some(127), "no shim on the cpu host");

    // Twenty commands, five at a time, over the one connection: sshd sees one TCP connection.
    let before = gpu.connections_seen();
    let mut tasks = Vec::new();
    let link = pool.get("gpu").expect("link").session().expect("session");
    for i in 0..20 {
        let session = std::sync::Arc::clone(&link);
        tasks.push(tokio::spawn(async move {
            // Generous: the 50-host test in this binary loads the same two cores meanwhile.
            session.exec(&format!("echo n{i}"), limits(30)).await
        }));
    }
    for (i, task) in tasks.into_iter().enumerate() {
        let out = task.await.expect("join").expect("exec");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("n{i}"));
    }
    assert_eq!(
        gpu.connections_seen(),
        before,
        "no new TCP connection for commands"
    );
    assert_eq!(before, 1);
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_is_capped_and_a_hung_command_times_out_and_frees_its_slot() {
    let mut lab = Lab::new();
    let host = lab.start_host("box");
    let path = lab.fleet(
        "fleet.toml",
        "max_sessions = 2",
        &[("box", lab.host_entry(&host))],
    );
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    pool.settle(SETTLE).await;

    let capped = ExecLimits {
        timeout: Duration::from_secs(10),
        max_output: 1000,
    };
    let out = pool
        .exec("box", "head -c 100000 /dev/zero", capped)
        .await
        .expect("exec");
    assert!(out.truncated);
    assert_eq!(out.stdout.len(), 1000);
    assert_eq!(out.exit_status, Some(0), "the command still ran to its end");

    for _ in 0..3 {
        let err = pool
            .exec("box", "sleep 30", limits(1))
            .await
            .expect_err("times out");
        assert!(
            matches!(
                err,
                TransportError::Timeout {
                    stage: "command",
                    ..
                }
            ),
            "{err}"
        );
    }
    // With 2 slots and 3 abandoned sleeps, a fresh command still gets a channel: timed-out
    // channels were released locally, and the link is still up.
    let out = pool
        .exec("box", "echo alive", limits(10))
        .await
        .expect("slot available");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "alive");
    assert!(pool.get("box").expect("link").state().is_usable());
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aliases_resolve_through_ssh_config_with_include_wildcards_and_proxyjump() {
    let mut lab = Lab::new();
    let bastion = lab.start_host("bastion");
    let inner = lab.start_host("inner");
    let included = lab.path("included.conf");
    std::fs::write(
        &included,
        format!(
            "Host gpu-*\n    HostName 127.0.0.1\n    User {user}\n    Port {inner}\n    ProxyJump {user}@127.0.0.1:{bastion}\n",
            user = lab.user,
            inner = inner.port,
            bastion = bastion.port
        ),
    )
    .expect("include");
    let base = std::fs::read_to_string(&lab.ssh_config).expect("config");
    std::fs::write(
        &lab.ssh_config,
        format!("Include {}\n{base}", included.display()),
    )
    .expect("config");

    let path = lab.fleet("fleet.toml", "", &[("gpu", "ssh = \"gpu-7\"".to_string())]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let states = pool.settle(SETTLE).await;
    assert_eq!(states[0].1.word(), "up", "{:?}", states[0].1);
    let out = pool
        .exec("gpu", "echo $SSH_CONNECTION", limits(10))
        .await
        .expect("exec");
    let conn = String::from_utf8_lossy(&out.stdout);
    assert!(
        conn.trim().ends_with(&inner.port.to_string()),
        "reached the inner host: {conn}"
    );
    let bastion_log = bastion.log_text();
    assert!(
        bastion_log.contains(&format!("direct-tcpip: listen 127.0.0.1 port 0, originator 127.0.0.1 port 0 to 127.0.0.1 port {}", inner.port))
            || bastion_log.contains(&format!("target 127.0.0.1 port {}", inner.port)),
        "the bastion forwarded to the inner host:\n{bastion_log}"
    );
    pool.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_hosts_from_one_process() {
    let mut lab = Lab::new();
    let hosts: Vec<_> = (0..50).map(|i| lab.start_host(&format!("h{i}"))).collect();
    let path = lab.fleet_of("fleet.toml", &hosts);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let up = wait_until(Duration::from_secs(60), || {
        pool.links().iter().all(|l| l.state().is_usable())
    })
    .await;
    assert!(
        up.is_some(),
        "not all up: {:?}",
        pool.links()
            .iter()
            .map(|l| (l.name.clone(), l.state().word()))
            .collect::<Vec<_>>()
    );
    let runs = hosts
        .iter()
        .map(|h| pool.exec(&h.name, "echo $((6*7))", limits(20)));
    let outs = futures::future::join_all(runs).await;
    for (host, out) in hosts.iter().zip(outs) {
        let out = out.unwrap_or_else(|e| panic!("{}: {e}", host.name));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
        assert_eq!(
            host.connections_seen(),
            1,
            "{} got exactly one connection",
            host.name
        );
    }
    pool.shutdown().await;
}

/// A box out of processes: sshd answers the exec request with a failure (it could not fork).
/// The command is said refused at once, not after its timeout, and the link stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_the_box_cannot_start_is_refused_at_once() {
    let mut lab = Lab::new();
    lab.unprivileged();
    let sshd = lab.start_host("box");
    let fleet =
        fleet::load(&lab.fleet_of("fleet.toml", std::slice::from_ref(&sshd))).expect("fleet");
    sshd.limit_processes(1);
    let pool = Pool::start(&fleet);
    let states = pool.settle(SETTLE).await;
    assert!(states.iter().all(|(_, s)| s.word() == "up"), "{states:?}");
    let started = std::time::Instant::now();
    let out = pool.exec("box", "echo hello", limits(60)).await;
    let took = started.elapsed();
    let err = out.expect_err("no process slot on the box: the command cannot start");
    assert!(
        err.to_string().contains("could not start the command"),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "refused after {took:?}");
    // A long-lived stream (the probe loop, the GPU stream) is refused as it starts, not a
    // stream that ends later with no exit status.
    let link = pool.get("box").expect("link");
    let session = link.session().expect("session");
    let stream = tokio::time::timeout(Duration::from_secs(20), session.stream("echo hi", 100))
        .await
        .expect("answered before the timeout");
    assert!(
        matches!(stream, Err(TransportError::CommandRefused)),
        "{:?}",
        stream.map(|_| "a stream")
    );
    assert_eq!(link.state().word(), "up");
}

/// One helper shell carries a command whose output floods in while the next commands' scripts
/// (megabytes of file names, as a pull of 100 000 files sends) are still being written to its
/// stdin: both directions keep moving. Before, the helper stopped reading while it waited to
/// write; russh's queue for the channel filled, the whole connection stopped reading (the
/// window adjust the write waited for among what it left unread), and a 100 000-file pull hung
/// for good with 60 KB unread in the socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shell_reads_a_flood_while_it_writes_long_scripts() {
    use rigwatch::transport::{BoxExec, OneShell};
    let mut lab = Lab::new();
    let (_host, pool, session) = one_box(&mut lab).await;
    let shell = OneShell::new(&session);
    let roomy = ExecLimits {
        timeout: Duration::from_secs(60),
        max_output: 64 << 20,
    };
    // 3 MB of script per command: past sshd's 2 MiB window for the shell's stdin.
    let long = format!(": {}\necho done", "x".repeat(100).repeat(30_000));
    let flood = shell.exec("head -c 30000000 /dev/zero", roomy);
    let scripts = futures::future::join_all((0..3).map(|_| shell.exec(&long, roomy)));
    let both = async { tokio::join!(flood, scripts) };
    let (flood, scripts) = tokio::time::timeout(Duration::from_secs(90), both)
        .await
        .expect("the helper shell stalled: a flood and long scripts at once");
    assert_eq!(flood.expect("flood").stdout.len(), 30_000_000);
    for out in scripts {
        assert_eq!(
            String::from_utf8_lossy(&out.expect("script").stdout),
            "done\n"
        );
    }
    pool.shutdown().await;
}

/// The same class on the two other paths that write a command's stdin: a command given 3 MB of
/// input (a long list of mounts or files) that prints a flood before it reads any, and a
/// stream whose stdin gets 3 MB while it floods. Before, each wrote all its input before
/// reading again and stalled the connection until the command's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_is_written_while_a_flood_is_read() {
    use rigwatch::transport::StreamEvent;
    let mut lab = Lab::new();
    let (_host, pool, session) = one_box(&mut lab).await;
    let input = vec![b'x'; 3_000_000];
    let flood_then_read = "head -c 30000000 /dev/zero; wc -c";
    let roomy = ExecLimits {
        timeout: Duration::from_secs(60),
        max_output: 64 << 20,
    };
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        session.exec_with_input(flood_then_read, &input, roomy),
    )
    .await
    .expect("stalled writing input while output flooded")
    .expect("exec");
    assert_eq!(out.stdout.len(), 30_000_000 + "3000000\n".len());
    assert!(out.stdout.ends_with(b"3000000\n"));

    let (mut lines, stdin) = session
        .stream_with_input(
            "head -c 30000000 /dev/zero | tr '\\0' x | fold -w 4096; head -c 3000000 >/dev/null",
            64,
        )
        .await
        .expect("stream");
    stdin.send(input).await.expect("stdin");
    drop(stdin);
    let ended = tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(event) = lines.recv().await {
            if let StreamEvent::Ended { exit_status, .. } = event {
                return exit_status;
            }
        }
        None
    })
    .await
    .expect("the stream stalled writing its stdin while it flooded");
    assert_eq!(ended, Some(0));
    pool.shutdown().await;
}

/// A pool on one lab box, settled, and the box's session (the box lives while its `Sshd` does).
async fn one_box(
    lab: &mut Lab,
) -> (
    support::Sshd,
    Pool,
    std::sync::Arc<rigwatch::transport::Session>,
) {
    let host = lab.start_host("box");
    let path = lab.fleet("fleet.toml", "", &[("box", lab.host_entry(&host))]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    pool.settle(SETTLE).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    (host, pool, session)
}

/// The SFTP channel is opened without waiting for the subsystem's answer (its init goes right
/// behind the request): a box that has SFTP opens it and says its read size; one whose sshd has
/// no `Subsystem sftp` line says so as soon as sshd refuses, not after the init's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sftp_opens_in_one_go_and_a_box_without_it_says_so_at_once() {
    let mut lab = Lab::new();
    let (mut host, pool, session) = one_box(&mut lab).await;
    let sftp = session
        .sftp(Duration::from_secs(30))
        .await
        .expect("the box has SFTP");
    // OpenSSH 8.9+ answers reads of up to 255 KiB whole and says so.
    assert_eq!(sftp.max_read().await, Some(261_120));
    drop(sftp);
    pool.shutdown().await;

    host.without_sftp();
    let path = lab.fleet("bare.toml", "", &[("box", lab.host_entry(&host))]);
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    pool.settle(SETTLE).await;
    let session = pool.get("box").and_then(|l| l.session()).expect("session");
    let refused = session
        .sftp(Duration::from_secs(30))
        .await
        .map(|_| "an SFTP channel")
        .expect_err("sshd has no SFTP subsystem");
    let said = refused.to_string();
    assert!(said.contains("no SFTP subsystem"), "{said}");
    assert!(!said.contains("timed out"), "{said}");
    pool.shutdown().await;
}

/// The lab's own readiness check is its sshd saying it listens, not an answer on its port: a
/// port `free_port` gave back can be taken by another test's listener before sshd binds it,
/// and a probe that listener answered once reported a box up whose sshd had exited (a status
/// run then found the port refused). Here another listener holds the port as the box starts
/// again: the lab says so rather than handing out a box with no sshd.
#[test]
#[should_panic(expected = "could not listen")]
fn a_lab_box_whose_port_another_listener_holds_is_not_reported_up() {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    sshd.kill();
    let _held = std::net::TcpListener::bind(("127.0.0.1", sshd.port)).expect("the box's port");
    sshd.restart();
}
