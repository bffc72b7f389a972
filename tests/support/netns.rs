//! A network namespace the test makes for one box, joined to this machine by a veth pair on a
//! private /30, so the link can be cut (iptables DROP inside the namespace) or narrowed (`tc
//! tbf` on the box's side) without touching any other interface. Deleting the namespace (on
//! drop) deletes the pair. Needs root, `ip`, `tc` and `iptables`: `Netns::make` says which is
//! missing, and a test that cannot run prints SKIPPED and that reason (`Netns::or_skip`).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

pub struct Netns {
    pub name: String,
    /// The box's address inside the namespace; this machine's end is the /30's other address.
    pub box_addr: String,
}

fn ok(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Makes the namespace and its link, or says why this machine cannot.
    pub fn make() -> Result<Netns, String> {
        if super::whoami() != "root" {
            return Err("network namespaces need root".into());
        }
        for tool in ["ip", "tc", "iptables"] {
            ok(Command::new("sh").args(["-c", &format!("command -v {tool}")])).map_err(|_| {
                format!("{tool} is not installed (apt-get install iproute2 iptables)")
            })?;
        }
        // One /30 per namespace in 198.18.0.0/15, the range set aside for benchmarking networks
        // (RFC 2544), so no real route is shadowed; unique per process and per namespace in it.
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let tag = format!("{:x}x{n}", pid & 0xffff);
        let block = (pid.wrapping_mul(8).wrapping_add(n) % (1 << 15)) * 4;
        let at = |host: u32| {
            let ip = (198u32 << 24) | (18 << 16) | (block + host);
            std::net::Ipv4Addr::from(ip).to_string()
        };
        let (host_addr, box_addr) = (at(1), at(2));
        let ns = Netns {
            name: format!("rwlab-{tag}"),
            box_addr,
        };
        let outer = format!("rwo{tag}");
        let inner = format!("rwi{tag}");
        ok(Command::new("ip").args(["netns", "add", &ns.name]))?;
        let steps: [&[&str]; 7] = [
            &[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ],
            &["link", "set", &inner, "netns", &ns.name],
            &["addr", "add", &format!("{host_addr}/30"), "dev", &outer],
            &["link", "set", &outer, "up"],
            &[
                "netns",
                "exec",
                &ns.name,
                "ip",
                "addr",
                "add",
                &format!("{}/30", ns.box_addr),
                "dev",
                &inner,
            ],
            &["netns", "exec", &ns.name, "ip", "link", "set", &inner, "up"],
            &["netns", "exec", &ns.name, "ip", "link", "set", "lo", "up"],
        ];
        for step in steps {
            ok(Command::new("ip").args(step))?;
        }
        Ok(ns)
    }

    /// `make`, or None after printing why not (on stdout and stderr, so `--nocapture` or a
    /// failing run shows it): the test then checks nothing, and says so.
    pub fn or_skip(test: &str) -> Option<Netns> {
        match Netns::make() {
            Ok(ns) => Some(ns),
            Err(reason) => {
                println!("SKIPPED {test}: {reason}");
                eprintln!("SKIPPED {test}: {reason}");
                None
            }
        }
    }

    fn inside(&self, program: &str, args: &[&str]) -> Result<(), String> {
        ok(Command::new("ip")
            .args(["netns", "exec", &self.name, program])
            .args(args))
    }

    /// Drops every packet to and from the box's `port`, as a partition would: nothing answers,
    /// nothing is refused.
    pub fn partition(&self, port: u16) {
        let port = port.to_string();
        for chain in [["INPUT", "--dport"], ["OUTPUT", "--sport"]] {
            self.inside(
                "iptables",
                &["-A", chain[0], "-p", "tcp", chain[1], &port, "-j", "DROP"],
            )
            .expect("iptables DROP");
        }
    }

    pub fn heal(&self, port: u16) {
        let port = port.to_string();
        for chain in [["INPUT", "--dport"], ["OUTPUT", "--sport"]] {
            self.inside(
                "iptables",
                &["-D", chain[0], "-p", "tcp", chain[1], &port, "-j", "DROP"],
            )
            .expect("iptables -D");
        }
    }

    /// The box's side of the link sends at most `kbit` kbit/s (a token bucket, `tc tbf`).
    pub fn narrow(&self, kbit: u32) {
        let dev = self.inner_dev();
        self.inside(
            "tc",
            &[
                "qdisc",
                "add",
                "dev",
                &dev,
                "root",
                "tbf",
                "rate",
                &format!("{kbit}kbit"),
                "burst",
                "1600",
                "latency",
                "10s",
            ],
        )
        .expect("tc tbf");
    }

    /// Undoes `narrow`: the link is as wide as the veth pair again.
    pub fn widen(&self) {
        let dev = self.inner_dev();
        self.inside("tc", &["qdisc", "del", "dev", &dev, "root"])
            .expect("tc qdisc del");
    }

    /// Bytes this machine has received from the box over the link so far (its end's counter).
    pub fn bytes_from_box(&self) -> u64 {
        let dev = format!("rwo{}", self.name.trim_start_matches("rwlab-"));
        let counter = format!("/sys/class/net/{dev}/statistics/rx_bytes");
        std::fs::read_to_string(&counter)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("no counter at {counter}"))
    }

    fn inner_dev(&self) -> String {
        format!("rwi{}", self.name.trim_start_matches("rwlab-"))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ok(Command::new("ip").args(["netns", "del", &self.name]));
    }
}
