//! Boxes behind one jump host, as a fleet behind a provider's bastion: real sshd processes for
//! the bastion and every box, reached through ProxyJump in the ssh config.

mod support;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use rigwatch::config::fleet;
use rigwatch::transport::{ExecLimits, LinkState, Pool};
use support::{Lab, Sshd, wait_until};

/// Writes a `Host box-N` block per box, each through ProxyJump to `bastion`, and a fleet.toml
/// naming the aliases (`extra_host` appended to each host's entry).
fn behind(lab: &Lab, bastion: &Sshd, boxes: &[Sshd], extra_host: &str) -> PathBuf {
    let mut config = String::new();
    for (i, b) in boxes.iter().enumerate() {
        let _ = writeln!(
            config,
            "Host box-{i}\n    HostName 127.0.0.1\n    User {user}\n    Port {port}\n    \
             ProxyJump {user}@127.0.0.1:{jump}",
            user = lab.user,
            port = b.port,
            jump = bastion.port
        );
    }
    let base = std::fs::read_to_string(&lab.ssh_config).expect("config");
    std::fs::write(&lab.ssh_config, format!("{config}{base}")).expect("config");
    let entries: Vec<(String, String)> = (0..boxes.len())
        .map(|i| {
            (
                format!("box-{i}"),
                format!("ssh = \"box-{i}\"\n{extra_host}"),
            )
        })
        .collect();
    let entries: Vec<(&str, String)> = entries
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    lab.fleet("fleet.toml", "", &entries)
}

fn words(pool: &Pool) -> Vec<(String, &'static str)> {
    pool.links()
        .iter()
        .map(|l| (l.name.clone(), l.state().word()))
        .collect()
}

/// Twelve boxes (more than the bastion's MaxSessions of 10) share one connection to it; when the
/// bastion dies every box is down saying so, and when it is back they share one new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boxes_behind_one_bastion_share_one_connection_to_it() {
    let mut lab = Lab::new();
    let mut bastion = lab.start_host("bastion");
    let boxes: Vec<Sshd> = (0..12).map(|i| lab.start_host(&format!("b{i}"))).collect();
    let path = behind(&lab, &bastion, &boxes, "");
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let up = wait_until(Duration::from_secs(40), || {
        pool.links().iter().all(|l| l.state().is_usable())
    })
    .await;
    assert!(up.is_some(), "not all up: {:?}", words(&pool));
    for (i, b) in boxes.iter().enumerate() {
        let out = pool
            .exec(
                &format!("box-{i}"),
                "echo $SSH_CONNECTION",
                ExecLimits::default(),
            )
            .await
            .expect("exec");
        let conn = String::from_utf8_lossy(&out.stdout);
        assert!(conn.trim().ends_with(&b.port.to_string()), "{conn}");
    }
    assert_eq!(
        bastion.connections_seen(),
        1,
        "one connection to the bastion for 12 boxes"
    );

    bastion.kill();
    // Keepalive 1 s × (2 + 1): every box behind it is down well inside 10 s, naming it.
    let down = wait_until(Duration::from_secs(10), || {
        pool.links().iter().all(|l| l.state().word() == "down")
    })
    .await;
    assert!(down.is_some(), "not all down: {:?}", words(&pool));
    for link in pool.links() {
        let LinkState::Down { reason, .. } = link.state() else {
            unreachable!()
        };
        assert!(reason.contains("jump host"), "{}: {reason}", link.name);
    }

    bastion.restart();
    let back = wait_until(Duration::from_secs(30), || {
        pool.links().iter().all(|l| l.state().is_usable())
    })
    .await;
    assert!(back.is_some(), "not all back: {:?}", words(&pool));
    assert_eq!(
        bastion.connections_seen(),
        2,
        "one new connection to the bastion once it is back"
    );
    pool.shutdown().await;
}

/// Thirty first connections at once behind a bastion nobody has seen, all trusting on first use:
/// the known_hosts file gets one line per key, and OpenSSH itself reads it (strict checking,
/// through the same bastion).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_first_connections_behind_a_new_bastion_leave_a_file_openssh_reads() {
    let mut lab = Lab::new();
    let bastion = lab.start_unknown_host("bastion");
    let boxes: Vec<Sshd> = (0..30)
        .map(|i| lab.start_unknown_host(&format!("b{i}")))
        .collect();
    let path = behind(&lab, &bastion, &boxes, "accept_new = true");
    let pool = Pool::start(&fleet::load(&path).expect("fleet"));
    let up = wait_until(Duration::from_secs(60), || {
        pool.links().iter().all(|l| l.state().is_usable())
    })
    .await;
    assert!(up.is_some(), "not all up: {:?}", words(&pool));
    pool.shutdown().await;

    let known = std::fs::read_to_string(&lab.known_hosts).expect("known_hosts");
    let lines: Vec<&str> = known.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 31, "one line per key:\n{known}");
    for sshd in std::iter::once(&bastion).chain(&boxes) {
        let found = Command::new("ssh-keygen")
            .arg("-F")
            .arg(format!("[127.0.0.1]:{}", sshd.port))
            .arg("-f")
            .arg(&lab.known_hosts)
            .output()
            .expect("ssh-keygen");
        let text = String::from_utf8_lossy(&found.stdout);
        assert!(
            found.status.success() && text.contains(&sshd.host_public_key()),
            "ssh-keygen -F finds {}: {text}",
            sshd.name
        );
    }
    let last = boxes.last().expect("a box");
    let jump = format!(
        "ProxyCommand=ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes \
         -o UserKnownHostsFile={kh} -i {key} -p {port} -W %h:%p {user}@127.0.0.1",
        kh = lab.known_hosts.display(),
        key = lab.client_key.display(),
        port = bastion.port,
        user = lab.user
    );
    let out = lab
        .openssh(last, None)
        .arg("-o")
        .arg(jump)
        .arg("echo through")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("ssh");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "through",
        "OpenSSH with strict checking through the bastion: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
