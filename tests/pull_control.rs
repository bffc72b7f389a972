//! A `rigwatch pull` while a `watch` of the same fleet file holds the box's connection runs on
//! that connection (`runtime::control`): no handshake, no login of its own; elsewhere, or for
//! another fleet file, it connects itself as before.

mod support;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use support::Lab;
use support::delay::DelayProxy;
use support::results::{pull_box, pull_fleet_via, write_small};

/// A far box (100 ms round trip through a proxy that counts connections) with 20 results, and
/// a fleet file that pulls them.
fn far_box(lab: &mut Lab) -> (support::Sshd, DelayProxy, std::path::PathBuf) {
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    write_small(&run, 20);
    let proxy = DelayProxy::start(sshd.port, Duration::from_millis(50));
    let folder = run.join("final_ckpts");
    let fleet = pull_fleet_via(lab, (&sshd, proxy.port), &folder, None, "fleet.toml");
    (sshd, proxy, fleet)
}

/// `watch` on `fleet`, its /metrics on a free port, once it says the box is up.
fn watching(lab: &Lab, fleet: &Path) -> Child {
    let port = support::free_port();
    let mut child = lab
        .rigwatch_on(fleet)
        .args(["watch", "--for", "120", "--metrics"])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("watch");
    let began = std::time::Instant::now();
    let up = loop {
        if support::scrape(port).contains(r#"rigwatch_host_up{host="box"} 1"#) {
            break true;
        }
        if began.elapsed() > Duration::from_secs(30) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if !up {
        let _ = child.kill();
        panic!("watch never saw the box up");
    }
    child
}

#[test]
fn a_pull_runs_on_the_connection_a_watch_of_the_fleet_holds() {
    let mut lab = Lab::new();
    let (_sshd, proxy, fleet) = far_box(&mut lab);
    let mut watch = watching(&lab, &fleet);
    assert_eq!(proxy.connections(), 1, "watch's own connection");

    let said = pull_box(&lab, &fleet);
    assert!(said.starts_with("pull #1 of box"), "{said}");
    assert!(
        said.contains("20 files") && said.contains("20 proven"),
        "{said}"
    );
    assert_eq!(proxy.connections(), 1, "the pull connected itself:\n{said}");
    // The same files, recorded as any pull: the ledger (shared by both) has them.
    let ledger = lab.rigwatch_on(&fleet).args(["ledger", "box"]).output();
    let ledger = String::from_utf8_lossy(&ledger.expect("ledger").stdout).into_owned();
    assert!(ledger.contains("pull #1"), "{ledger}");

    // Another fleet file naming the same box is not this watch's: it connects itself.
    let other = lab.path("other.toml");
    std::fs::copy(&fleet, &other).expect("copy the fleet");
    let said = pull_box(&lab, &other);
    assert!(said.starts_with("pull #2 of box"), "{said}");
    assert_eq!(proxy.connections(), 2, "{said}");

    // Once the watch has gone, its socket answers no more: the pull connects itself.
    let _ = watch.kill();
    let _ = watch.wait();
    let said = pull_box(&lab, &fleet);
    assert!(said.starts_with("pull #3 of box"), "{said}");
    assert_eq!(proxy.connections(), 3, "{said}");
}

/// Only this user's processes are served: the socket and its folder are private.
#[test]
fn the_control_socket_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut lab = Lab::new();
    let (_sshd, _proxy, fleet) = far_box(&mut lab);
    let mut watch = watching(&lab, &fleet);
    let dir = lab.path("state/rigwatch/control");
    let sockets: Vec<_> = std::fs::read_dir(&dir)
        .expect("the control folder")
        .map(|e| e.expect("entry").path())
        .collect();
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(sockets.len(), 1, "{sockets:?}");
    assert_eq!(mode(&sockets[0]), 0o600);
    let _ = Command::new("kill").arg(watch.id().to_string()).status();
    let _ = watch.wait();
    assert!(!sockets[0].exists(), "the socket is removed as watch ends");
}

/// A pull asked from another `PATH` (where its `verify` commands would resolve otherwise) is
/// not served: it connects itself.
#[test]
fn a_pull_from_another_path_connects_itself() {
    let mut lab = Lab::new();
    let (_sshd, proxy, fleet) = far_box(&mut lab);
    let mut watch = watching(&lab, &fleet);
    let path = format!("/nonexistent:{}", std::env::var("PATH").unwrap_or_default());
    let out = lab
        .rigwatch_on(&fleet)
        .args(["pull", "box"])
        .env("PATH", path)
        .output()
        .expect("rigwatch pull");
    let _ = watch.kill();
    let _ = watch.wait();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert_eq!(proxy.connections(), 2, "{said}");
}
