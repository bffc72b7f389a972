//! Faults a long `rigwatch watch` must report as they happen, on real sshd boxes, each bounded:
//! a box that reboots (new boot id, same host key) and a name that stops resolving (an ssh
//! config alias whose HostName vanishes from /etc/hosts, in a mount namespace of the watch's
//! own, so this machine's /etc is never touched).

mod support;

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::Lab;

/// A running watch whose events are read as they come.
struct Watch {
    child: Child,
    events: Arc<Mutex<Vec<Value>>>,
}

impl Watch {
    fn start(lab: &Lab, mut cmd: Command, config: &Path) -> Watch {
        let mut child = cmd
            .args(["watch", "--for", "120", "--config"])
            .arg(config)
            .env("XDG_STATE_HOME", lab.path("state"))
            .env_remove("SSH_AUTH_SOCK")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("watch");
        let events = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&events);
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let event = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
                into.lock().expect("events").push(event);
            }
        });
        Watch { child, events }
    }

    /// The first event for `host` of `kind` in `state`, waited for up to `limit`.
    fn wait_for(&self, host: &str, kind: &str, state: &str, limit: Duration) -> Option<Value> {
        let start = Instant::now();
        while start.elapsed() < limit {
            let found = self
                .events
                .lock()
                .expect("events")
                .iter()
                .find(|e| e["host"] == host && e["kind"] == kind && e["state"] == state)
                .cloned();
            if found.is_some() {
                return found;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    fn all(&self) -> Vec<Value> {
        self.events.lock().expect("events").clone()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const FAST: &str = "[alerts]\ngroup_wait_secs = 1\n";

#[test]
fn a_box_that_reboots_is_reported_rebooted_and_watched_on() {
    let mut lab = Lab::new();
    let mut rb = lab.start_host("rb");
    let config = lab.fleet("fleet.toml", FAST, &[("box-rb", lab.host_entry(&rb))]);
    let watch = Watch::start(&lab, Command::new(env!("CARGO_BIN_EXE_rigwatch")), &config);
    // Two probes (poll 1 s) at the first boot id, then the box goes down and comes back with a
    // new one, its host key unchanged.
    std::thread::sleep(Duration::from_secs(4));
    rb.kill();
    rb.shim_boot_id("3c2b1a09-8f7e-4d6c-b5a4-938271605f4e");
    rb.restart();
    let rebooted = watch.wait_for("box-rb", "rebooted", "firing", Duration::from_secs(20));
    let Some(event) = rebooted else {
        panic!("no reboot reported: {:?}", watch.all())
    };
    assert!(
        event["message"]
            .as_str()
            .is_some_and(|m| m.contains("rebooted")),
        "{event}"
    );
    assert!(
        watch
            .all()
            .iter()
            .all(|e| e["kind"] != "hostkey_refused" && e["kind"] != "auth_refused"),
        "same key, same login: {:?}",
        watch.all()
    );
}

#[test]
fn a_name_that_stops_resolving_is_down_naming_the_lookup_and_heals_when_it_is_back() {
    if support::whoami() != "root" {
        println!("SKIPPED a name that stops resolving: a mount namespace needs root");
        return;
    }
    let mut lab = Lab::new();
    let mut named = lab.start_host("named");
    let name = "rigwatch-lab-box.test";
    let hosts = lab.path("hosts");
    let resolving = format!("127.0.0.1 localhost\n127.0.0.1 {name}\n");
    std::fs::write(&hosts, &resolving).expect("hosts");
    // Files only: no DNS server is asked, so the lookup fails at once and the same everywhere.
    let nsswitch = lab.path("nsswitch.conf");
    std::fs::write(&nsswitch, "hosts: files\n").expect("nsswitch");
    let base = std::fs::read_to_string(&lab.ssh_config).expect("ssh config");
    std::fs::write(
        &lab.ssh_config,
        format!(
            "Host named\n    HostName {name}\n    Port {}\n    User {}\n{base}",
            named.port, lab.user
        ),
    )
    .expect("ssh config");
    let mut known = std::fs::read_to_string(&lab.known_hosts).expect("known_hosts");
    known.push_str(&format!(
        "[{name}]:{} {}\n",
        named.port,
        named.host_public_key()
    ));
    std::fs::write(&lab.known_hosts, known).expect("known_hosts");
    let entry = format!(
        "ssh = \"named\"\nidentity = \"{}\"",
        lab.client_key.display()
    );
    let config = lab.fleet("fleet.toml", FAST, &[("box-n", entry)]);

    // The watch in its own mount namespace, with the lab's /etc/hosts and nsswitch.conf bound
    // over the machine's (written in place from now on, so the bind keeps following them).
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind \"$1\" /etc/hosts && mount --bind \"$2\" /etc/nsswitch.conf && shift 2 && exec \"$@\"")
        .arg("own-etc")
        .arg(&hosts)
        .arg(&nsswitch)
        .arg(env!("CARGO_BIN_EXE_rigwatch"));
    let watch = Watch::start(&lab, cmd, &config);
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        watch.all().iter().all(|e| e["kind"] != "link_down"),
        "up while the name resolves: {:?}",
        watch.all()
    );

    // The name goes; a live connection does not need it, the next one does: the box restarts.
    std::fs::write(&hosts, "127.0.0.1 localhost\n").expect("hosts");
    named.restart();
    let down = watch.wait_for("box-n", "link_down", "firing", Duration::from_secs(15));
    let Some(event) = down else {
        panic!("no link_down: {:?}", watch.all())
    };
    let said = event.to_string();
    assert!(said.contains("lookup"), "names the failed lookup: {said}");

    std::fs::write(&hosts, &resolving).expect("hosts");
    let healed = watch.wait_for("box-n", "link_down", "resolved", Duration::from_secs(20));
    assert!(healed.is_some(), "not healed: {:?}", watch.all());
}
