//! The test lab: real OpenSSH `sshd` processes on loopback ports, each with its own host key,
//! authorized_keys, config, log and PATH (so a test can put shim tools first on one host), plus a
//! known_hosts file and an ssh client config for them. Nothing here mocks SSH.
#![allow(dead_code)]

pub mod delay;
pub mod fresh_disk;
pub mod kube;
pub mod kube_exec;
pub mod netns;
pub mod results;
pub mod silent;
pub mod slurm;
mod sshd;
mod standin;
pub mod tmux;
pub mod vast_box;

pub use sshd::Sshd;
use sshd::clock_ticks_per_second;

use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// The plain account the lab logs in as when a case depends on permissions and the tests run
/// as root (root reads every folder, so an unreadable one cannot be shown as root).
const LAB_USER: &str = "rigwatch-lab";

pub struct Lab {
    pub dir: tempfile::TempDir,
    /// Key the client uses; every host authorizes it.
    pub client_key: PathBuf,
    pub known_hosts: PathBuf,
    /// A client config for `ssh -G` (passed as `ssh_config`), so the user's own is never read.
    pub ssh_config: PathBuf,
    pub user: String,
    next_id: usize,
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn keygen(path: &Path, passphrase: &str) {
    run(Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            passphrase,
            "-C",
            "rigwatch-lab",
            "-f",
        ])
        .arg(path));
}

/// `size` bytes that do not repeat at any block boundary (xorshift from `seed`), so a misplaced
/// chunk changes the hash: a checkpoint stand-in.
pub fn write_random(path: &Path, size: u64, seed: u64) {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("dirs");
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ seed;
    let mut block = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        for chunk in block.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
        }
        let n = left.min(block.len() as u64) as usize;
        file.write_all(&block[..n]).expect("write");
        left -= n as u64;
    }
    file.flush().expect("flush");
}

/// CPU seconds of this process, and of the children it has waited for (utime, stime, cutime,
/// cstime in /proc/self/stat), for benches that compare in-process work with spawned tools.
pub fn own_cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|x| x.parse().ok())
        .collect();
    let tick = clock_ticks_per_second();
    match f.as_slice() {
        [u, s, cu, cs] => ((u + s) / tick, (cu + cs) / tick),
        _ => (0.0, 0.0),
    }
}

/// What `watch --metrics 127.0.0.1:PORT` serves now, through curl as a scraper would fetch
/// it; empty while nothing answers (bounded: 5 s).
pub fn scrape(port: u16) -> String {
    Command::new("curl")
        .args(["-sS", "--max-time", "5"])
        .arg(format!("http://127.0.0.1:{port}/metrics"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

pub fn whoami() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Lab {
    /// `rigwatch watch --for SECS [extra…] --config CONFIG` with this lab's state folder and
    /// no agent, its stdout and stderr piped.
    pub fn watch(&self, config: &Path, secs: u32, extra: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_rigwatch"))
            .args(["watch", "--for", &secs.to_string()])
            .args(extra)
            .arg("--config")
            .arg(config)
            .env("XDG_STATE_HOME", self.path("state"))
            .env_remove("SSH_AUTH_SOCK")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("watch")
    }

    pub fn new() -> Lab {
        Lab::new_in(&std::env::temp_dir())
    }

    /// A lab whose folder is made in `root` (a bench's fresh filesystem).
    pub fn new_in(root: &Path) -> Lab {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: apt-get install openssh-server"
        );
        if whoami() == "root" {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let dir = tempfile::Builder::new()
            .prefix("rigwatch-lab")
            .tempdir_in(root)
            .expect("tempdir");
        let client_key = dir.path().join("client_ed25519");
        keygen(&client_key, "");
        let known_hosts = dir.path().join("known_hosts");
        std::fs::write(&known_hosts, "").expect("known_hosts");
        let ssh_config = dir.path().join("ssh_config");
        std::fs::write(
            &ssh_config,
            format!("Host *\n    IdentityFile {}\n", client_key.display()),
        )
        .expect("ssh_config");
        Lab {
            dir,
            client_key,
            known_hosts,
            ssh_config,
            user: whoami(),
            next_id: 0,
        }
    }

    /// From now on, hosts are logged in to as a user without root's rights: `rigwatch-lab`
    /// (made here when missing) when the tests run as root, else the user running them. The
    /// lab's folder becomes traversable so that user's sshd can read its authorized_keys.
    pub fn unprivileged(&mut self) {
        use std::os::unix::fs::PermissionsExt as _;
        if whoami() == "root" {
            let exists = |name: &str| {
                Command::new("id")
                    .arg(name)
                    .output()
                    .is_ok_and(|o| o.status.success())
            };
            if !exists(LAB_USER) {
                // Parallel tests may race to make it; whoever loses finds it made.
                let _ = Command::new("useradd")
                    .args(["-M", "-d", "/nonexistent", "-s", "/bin/sh", LAB_USER])
                    .output();
                assert!(exists(LAB_USER), "useradd {LAB_USER} failed");
            }
            // useradd leaves the password "!", a locked account that sshd without PAM refuses.
            run(Command::new("usermod").args(["-p", "*", LAB_USER]));
            self.user = LAB_USER.to_string();
        }
        std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod lab");
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `name`'s pull lock in the lab's own lock folder, as the CLI and the dashboard take it
    /// before a pull (`ledger::locks`).
    pub fn pull_lock(&self, name: &str) -> rigwatch::ledger::locks::Held {
        let what = format!("box {name}");
        let (dir, now) = (self.path("locks"), chrono::Utc::now());
        rigwatch::ledger::locks::try_take(
            &dir,
            name,
            rigwatch::ledger::locks::Act::Pull,
            &what,
            now,
        )
        .expect("the lab's lock is free")
    }

    /// Starts a host and records its key in the lab's known_hosts.
    pub fn start_host(&mut self, name: &str) -> Sshd {
        let sshd = self.start_unknown_host(name);
        self.trust(&sshd);
        sshd
    }

    /// Starts a host that the lab's known_hosts does not list.
    pub fn start_unknown_host(&mut self, name: &str) -> Sshd {
        self.start_host_at(name, "127.0.0.1", None)
    }

    /// Starts a host in the network namespace `ns`, listening on its box address, and records
    /// its key.
    pub fn start_host_in(&mut self, name: &str, ns: &netns::Netns) -> Sshd {
        let sshd = self.start_host_at(name, &ns.box_addr, Some(ns.name.clone()));
        self.trust(&sshd);
        sshd
    }

    fn start_host_at(&mut self, name: &str, addr: &str, netns: Option<String>) -> Sshd {
        self.next_id += 1;
        let dir = self.dir.path().join(format!("host{}-{name}", self.next_id));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).expect("host dir");
        keygen(&dir.join("host_ed25519"), "");
        let pubkey = std::fs::read_to_string(self.client_key.with_extension("pub"))
            .or_else(|_| std::fs::read_to_string(format!("{}.pub", self.client_key.display())))
            .expect("client pubkey");
        std::fs::write(dir.join("authorized_keys"), pubkey).expect("authorized_keys");
        let mut sshd = Sshd {
            name: name.to_string(),
            addr: addr.to_string(),
            port: 0,
            config: dir.join("sshd_config"),
            log: dir.join("sshd.log"),
            bin,
            dir,
            child: None,
            readiness_probes: 0,
            sftp: true,
            netns,
            sftp_server: None,
        };
        // A box's disk is the box's, never this machine's: a CI machine's own disk at 92 % put a
        // disk alert on every lab box and hid the readings tests wait for.
        sshd.shim_df_captured();
        // A port taken by another listener before sshd bound it: another port.
        let started = (0..5).any(|_| sshd.start_on(free_port()));
        assert!(started, "sshd {name} found no free port in 5 tries");
        sshd
    }

    /// Appends the host's current key to the lab's known_hosts.
    pub fn trust(&self, sshd: &Sshd) {
        let mut text = std::fs::read_to_string(&self.known_hosts).unwrap_or_default();
        let _ = writeln!(
            text,
            "[{}]:{} {}",
            sshd.addr,
            sshd.port,
            sshd.host_public_key()
        );
        std::fs::write(&self.known_hosts, text).expect("write known_hosts");
    }

    /// The OpenSSH client a user would run against `host` (batch mode, the lab's key and
    /// known_hosts, no user config), through the ControlMaster socket `control` when given.
    pub fn openssh(&self, host: &Sshd, control: Option<&Path>) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args([
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
        ])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", self.known_hosts.display()))
        .arg("-i")
        .arg(&self.client_key)
        .args(["-p", &host.port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if let Some(path) = control {
            cmd.arg("-o").arg(format!("ControlPath={}", path.display()));
        }
        cmd.arg(format!("{}@127.0.0.1", self.user));
        cmd
    }

    /// Writes a fleet.toml: the lab's known_hosts and ssh config, fast keepalives and retries so
    /// fault tests finish quickly, then `extra` (more global keys) and one `[[host]]` per entry.
    pub fn fleet(&self, file: &str, extra: &str, hosts: &[(&str, String)]) -> PathBuf {
        let mut text = format!(
            "known_hosts = \"{}\"\nssh_config = \"{}\"\npoll_secs = 1\nkeepalive_secs = 1\n\
             keepalive_max = 2\nconnect_timeout_secs = 3\nreconnect_max_secs = 2\n{extra}\n",
            self.known_hosts.display(),
            self.ssh_config.display()
        );
        for (name, body) in hosts {
            let _ = writeln!(text, "[[host]]\nname = \"{name}\"\n{body}\n");
        }
        let path = self.dir.path().join(file);
        std::fs::write(&path, text).expect("write fleet");
        path
    }

    /// A fleet.toml of `hosts`, each under its own name with the lab key.
    pub fn fleet_of(&self, file: &str, hosts: &[Sshd]) -> PathBuf {
        let entries: Vec<(&str, String)> = hosts
            .iter()
            .map(|h| (h.name.as_str(), self.host_entry(h)))
            .collect();
        self.fleet(file, "", &entries)
    }

    /// As `host_entry`, reached at another loopback `port` (a delay proxy in front of the box),
    /// whose known_hosts line carries the box's key.
    pub fn host_entry_via(&self, sshd: &Sshd, port: u16) -> String {
        let mut text = std::fs::read_to_string(&self.known_hosts).unwrap_or_default();
        let _ = writeln!(text, "[127.0.0.1]:{port} {}", sshd.host_public_key());
        std::fs::write(&self.known_hosts, text).expect("write known_hosts");
        self.host_entry(sshd)
            .replace(&format!(":{}\"", sshd.port), &format!(":{port}\""))
    }

    /// The `[[host]]` body for a plain user@127.0.0.1:port target with the lab key.
    pub fn host_entry(&self, sshd: &Sshd) -> String {
        format!(
            "ssh = \"{}@{}:{}\"\nidentity = \"{}\"",
            self.user,
            sshd.addr,
            sshd.port,
            self.client_key.display()
        )
    }
}

/// Polls `check` every 50 ms until it holds or `limit` passes; returns how long it took.
pub async fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check().then(|| start.elapsed())
}

pub fn rigwatch() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rigwatch"));
    cmd.env_remove("SSH_AUTH_SOCK")
        .env_remove("RIGWATCH_CONFIG");
    cmd
}

impl Lab {
    /// rigwatch on `fleet`, its state and config folders in the lab, no terminal on stdin.
    pub fn rigwatch_on(&self, fleet: &Path) -> Command {
        let mut cmd = rigwatch();
        cmd.arg("--config")
            .arg(fleet)
            .env("XDG_STATE_HOME", self.path("state"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .stdin(Stdio::null());
        cmd
    }
}

/// Runs rigwatch with `args` on `config`, its state in `state`, and parses stdout as JSON.
pub fn rigwatch_json(
    args: &[&str],
    config: &Path,
    state: &Path,
) -> (Option<i32>, serde_json::Value) {
    rigwatch_json_env(args, config, state, &[])
}

/// `rigwatch_json` with extra environment variables (a shim's log file, say).
pub fn rigwatch_json_env(
    args: &[&str],
    config: &Path,
    state: &Path,
    env: &[(&str, &Path)],
) -> (Option<i32>, serde_json::Value) {
    let out = rigwatch()
        .args(args)
        .arg("--config")
        .arg(config)
        .env("XDG_STATE_HOME", state)
        .envs(env.iter().copied())
        .output()
        .expect("run rigwatch");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), json)
}

/// The host named `name` in a `status --json` document.
pub fn json_host<'a>(json: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    json["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("no host {name}"))
}

/// Waits up to 5 s for a file or socket to appear.
pub fn wait_for_path(path: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !path.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A capture from tests/fixtures: its command line, its output and its exit status.
pub struct Capture {
    pub command: String,
    pub body: String,
    pub exit: i32,
}

pub fn capture(name: &str) -> Capture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines: Vec<&str> = text.lines().collect();
    let command = lines
        .remove(0)
        .strip_prefix("$ ")
        .unwrap_or_else(|| panic!("{name}: no $ line"))
        .to_string();
    let exit = lines
        .pop()
        .and_then(|l| {
            l.strip_prefix("[exit ")?
                .strip_suffix(']')?
                .parse::<i32>()
                .ok()
        })
        .unwrap_or_else(|| panic!("{name}: no [exit N] line"));
    let mut body = lines.join("\n");
    if !body.is_empty() {
        body.push('\n');
    }
    Capture {
        command,
        body,
        exit,
    }
}

impl Capture {
    /// The output as `--format=csv` prints it: a capture taken with `noheader` gets the header
    /// line nvidia-smi would have printed, built from the capture's own field list, so a shim
    /// can answer rigwatch's headed query with it.
    pub fn with_header(&self) -> String {
        if !self.command.contains("noheader") {
            return self.body.clone();
        }
        let fields = self
            .command
            .split_whitespace()
            .find_map(|w| {
                w.strip_prefix("--query-gpu=")
                    .or_else(|| w.strip_prefix("--query-compute-apps="))
            })
            .unwrap_or_else(|| panic!("{}: not a --query capture", self.command));
        format!(
            "{}\n{}",
            fields.split(',').collect::<Vec<_>>().join(", "),
            self.body
        )
    }
}

/// What a shim `nvidia-smi` on one host answers.
pub struct GpuShim<'a> {
    pub query_gpu: &'a str,
    pub apps: &'a str,
    /// Refuse `clocks_event_reasons.*` like a driver that predates it.
    pub legacy_driver: bool,
}

impl GpuShim<'static> {
    /// The H100 under load, power-capped: SM clock 1365 of 1980 MHz, 719 of 700 W.
    pub const LOAD: GpuShim<'static> = GpuShim {
        query_gpu: "h100/q_load_csv.txt",
        apps: "h100/apps_load.txt",
        legacy_driver: false,
    };
}

impl Sshd {
    fn write_script(&self, name: &str, text: &str) {
        let path = self.bin.join(name);
        std::fs::write(&path, text).expect("shim");
        run(Command::new("chmod").arg("755").arg(&path));
    }

    /// Puts `tool` on the box's PATH as a wrapper of the real one (found on the PATH after
    /// the shims) that first appends each argument after `--` to `log`, a line each.
    pub fn shim_logging_args(&self, tool: &str, log: &Path) {
        self.write_script(
            tool,
            &format!(
                "#!/bin/sh
after=
for a in \"$@\"; do
  [ -n \"$after\" ] && printf '%s\\n' \"$a\" >> '{}'
  [ \"$a\" = -- ] && after=1
done
PATH=/usr/local/bin:/usr/bin:/bin exec {tool} \"$@\"
",
                log.display()
            ),
        );
    }

    fn write_data(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join("shimdata");
        std::fs::create_dir_all(&path).expect("shimdata");
        let file = path.join(name);
        std::fs::write(&file, text).expect("shim data");
        file
    }

    /// `nvidia-smi` replaying captures: `--query-gpu` and `--query-compute-apps`, each looping
    /// under `-lms`.
    pub fn shim_nvidia_smi(&self, shim: &GpuShim<'_>) {
        let gpu = self.write_data("query_gpu.txt", &capture(shim.query_gpu).with_header());
        let apps = self.write_data("apps.txt", &capture(shim.apps).with_header());
        let refusal = capture("handwritten/q_legacy_driver_handwritten.txt");
        let refusal = self.write_data("refusal.txt", &refusal.body);
        let legacy = if shim.legacy_driver {
            format!(
                "case \"$*\" in *clocks_event_reasons.*) cat '{}'; exit 2;; esac\n",
                refusal.display()
            )
        } else {
            String::new()
        };
        self.write_script(
            "nvidia-smi",
            &format!(
                "#!/bin/sh\n{legacy}case \"$*\" in\n\
                 *--query-gpu=*-lms*) ms=$(printf '%s' \"$*\" | sed -n 's/.*-lms \\([0-9]*\\).*/\\1/p');\n\
                   s=$(awk \"BEGIN {{ print ${{ms:-1000}} / 1000 }}\"); while :; do cat '{gpu}'; sleep $s; done;;\n\
                 *--query-gpu=*) cat '{gpu}';;\n\
                 *--query-compute-apps=*-lms*) ms=$(printf '%s' \"$*\" | sed -n 's/.*-lms \\([0-9]*\\).*/\\1/p');\n\
                   s=$(awk \"BEGIN {{ print ${{ms:-1000}} / 1000 }}\"); while :; do cat '{apps}'; sleep $s; done;;\n\
                 *--query-compute-apps=*) cat '{apps}';;\n\
                 *) echo \"shim nvidia-smi: unexpected arguments: $*\" >&2; exit 9;;\nesac\n",
                gpu = gpu.display(),
                apps = apps.display()
            ),
        );
    }

    /// Kills this host's running shim `tool` (and only this host's), as a crash on the box would.
    pub fn kill_tool(&self, tool: &str) {
        let pattern = format!("{}/{tool}", self.bin.display());
        let killed = Command::new("pkill")
            .arg("-f")
            .arg(&pattern)
            .status()
            .expect("pkill");
        assert!(killed.success(), "no process matched {pattern}");
    }

    /// `tmux` replaying `tmux_run.txt` (a session `train` with a live pane) or `tmux_ls.txt` (no
    /// server). The tmux_run capture ran `tmux ls` then `list-panes`: one line of each.
    pub fn shim_tmux(&self, running: bool) {
        let (ls, panes, exit) = if running {
            let c = capture("h100/tmux_run.txt");
            let lines: Vec<&str> = c.body.lines().collect();
            (format!("{}\n", lines[0]), format!("{}\n", lines[1]), 0)
        } else {
            let c = capture("h100/tmux_ls.txt");
            (c.body.clone(), c.body.clone(), c.exit)
        };
        let ls = self.write_data("tmux_ls.txt", &ls);
        let panes = self.write_data("tmux_panes.txt", &panes);
        self.write_script(
            "tmux",
            &format!(
                "#!/bin/sh\ncase \"$1\" in\nls) cat '{}';;\nlist-panes) cat '{}';;\nesac\nexit {exit}\n",
                ls.display(),
                panes.display()
            ),
        );
    }

    /// Every lab box's `df` (written when it starts): GNU's `--output`, `-PB1` and `-Pi` replay
    /// the H100 box's captures (its `/` 21 % used), whatever mounts are asked for.
    fn shim_df_captured(&self) {
        self.shim_df(true, "h100/df_Pi.txt");
    }

    /// This machine's own `df` on the box again, for a bench that measures what the probe costs
    /// a box (a real `df`, not the replaying shim).
    pub fn real_df(&self) {
        std::fs::remove_file(self.bin.join("df")).expect("the df shim");
    }

    /// A `df` without `--output` (as busybox's), whose `-Pi` replays `capture_name` and `-PB1`
    /// the H100 box's capture: the probe falls back to the two.
    pub fn shim_df_inodes(&self, capture_name: &str) {
        self.shim_df(false, capture_name);
    }

    /// A `df` replaying captures: `-PB1` the H100 box's, `-Pi` `inodes`, and `--output` the H100
    /// box's where `gnu` (else refused, as busybox's `df` does); anything else fails, saying so.
    fn shim_df(&self, gnu: bool, inodes: &str) {
        let output = if gnu {
            let data = self.write_data("df_output.txt", &capture("h100/df_output.txt").body);
            format!("cat '{}'", data.display())
        } else {
            "echo \"df: unrecognized option '--output'\" >&2; exit 1".to_string()
        };
        let bytes = self.write_data("df_PB1.txt", &capture("h100/df_PB1.txt").body);
        let inodes = self.write_data("df_Pi.txt", &capture(inodes).body);
        self.write_script(
            "df",
            &format!(
                "#!/bin/sh\ncase \"$*\" in\n*--output*) {output};;\n\
                 -PB1*) cat '{}';;\n-Pi*) cat '{}';;\n\
                 *) echo \"shim df: unexpected arguments: $*\" >&2; exit 9;;\nesac\n",
                bytes.display(),
                inodes.display()
            ),
        );
    }

    /// The box's boot id, as `cat /proc/sys/kernel/random/boot_id` reads it; other files are real.
    pub fn shim_boot_id(&self, boot_id: &str) {
        let data = self.write_data("boot_id", &format!("{boot_id}\n"));
        self.write_script(
            "cat",
            &format!(
                "#!/bin/sh\nif [ \"$1\" = /proc/sys/kernel/random/boot_id ]; then exec /bin/cat '{}'; fi\nexec /bin/cat \"$@\"\n",
                data.display()
            ),
        );
    }

    /// Slurm's `squeue` printing `lines` whatever it is asked, and recording its arguments in
    /// `squeue.args` under the host's directory (returned).
    pub fn shim_squeue(&self, lines: &str) -> PathBuf {
        let data = self.write_data("squeue.txt", lines);
        let args = self.dir.join("squeue.args");
        self.write_script(
            "squeue",
            &format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\ncat '{}'\n",
                args.display(),
                data.display()
            ),
        );
        args
    }
}

/// A sink program that appends each event it is given (stdin) as one line to `out`.
pub fn recorder(lab: &Lab, name: &str) -> (PathBuf, PathBuf) {
    let out = lab.path(&format!("{name}.calls"));
    let script = lab.path(&format!("{name}.sh"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n{{ cat; printf ' %s\\n' \"$RIGWATCH_KIND\"; }} >> '{}'\n",
            out.display()
        ),
    )
    .expect("sink script");
    let chmod = Command::new("chmod").arg("+x").arg(&script).status();
    assert!(chmod.is_ok_and(|s| s.success()));
    (script, out)
}

/// Looks every 50 ms until `done` says yes or `limit` has passed; whether it said yes (a last
/// look at the limit included).
pub fn poll_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

/// `kill -NAME pid`, which must succeed.
pub fn signal(pid: impl std::fmt::Display, name: &str) {
    let ok = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill -{name} {pid}");
}
