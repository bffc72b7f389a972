//! A vast.ai box in the lab for the teardown tests: a real sshd box with results to pull, and the
//! recording `vastai` stand-in (tests/fixtures/providers) answering the read-only listing from a
//! file the test controls. Its destroy drops the instance from that listing, as vast.ai does,
//! unless `RIGWATCH_VASTAI_KEEP` is set (a destroy that said it worked but did not).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use super::tmux::Tmux;
use super::{Lab, rigwatch};

pub struct Setup {
    pub lab: Lab,
    pub fleet: PathBuf,
    pub run: PathBuf,
    pub dest: PathBuf,
    pub shim_log: PathBuf,
    /// What the vastai shim lists: instance 4242 at this box's loopback port.
    pub listing: PathBuf,
    pub port: u16,
    pub _sshd: super::Sshd,
    /// More environment for every rigwatch this setup starts.
    pub extra_env: Vec<(String, String)>,
}

/// A `vastai show instances --raw` listing with instance `id` reached at 127.0.0.1:`port`.
pub fn vast_listing(id: &str, port: u16) -> String {
    format!(
        "[{{\"id\": {id}, \"actual_status\": \"running\", \"cur_state\": \"running\", \
         \"dph_total\": 2.5, \"ssh_host\": \"127.0.0.1\", \"ssh_port\": {port}, \
         \"public_ipaddr\": \"127.0.0.1\", \"ports\": {{\"22/tcp\": [{{\"HostPort\": \"{port}\"}}]}}}}]"
    )
}

pub fn providers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers")
}

pub fn setup() -> Setup {
    setup_with("instance_id = \"4242\"\n", "")
}

/// A vast.ai box with `id_line` in its host entry and `extra` at the top of fleet.toml.
pub fn setup_with(id_line: &str, extra: &str) -> Setup {
    setup_in(Lab::new(), id_line, extra)
}

/// As `setup_with`, in a lab the caller prepared (a plain user, say).
pub fn setup_in(mut lab: Lab, id_line: &str, extra: &str) -> Setup {
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    std::fs::create_dir_all(run.join("final_ckpts")).expect("dirs");
    std::fs::write(run.join("final_ckpts/model.bin"), vec![7u8; 300_000]).expect("model");
    std::fs::write(run.join("final_ckpts/metrics.csv"), "step,loss\n1,0.3\n").expect("csv");
    let dest = lab.path("results/box");
    let body = format!(
        "{}\nprofile = \"vastai\"\n{id_line}price_per_hour = 2.5\n\
         [host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry(&sshd),
        run.join("final_ckpts").display(),
        dest.display()
    );
    let fleet = lab.fleet("fleet.toml", extra, &[("box", body)]);
    let shim_log = lab.path("shim.log");
    let listing = lab.path("vast.json");
    std::fs::write(&listing, vast_listing("4242", sshd.port)).expect("listing");
    Setup {
        fleet,
        run,
        dest,
        shim_log,
        listing,
        port: sshd.port,
        lab,
        _sshd: sshd,
        extra_env: Vec::new(),
    }
}

impl Setup {
    pub fn env(&self) -> Vec<(String, String)> {
        let path = format!(
            "{}:{}",
            providers().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        vec![
            ("PATH".into(), path),
            (
                "XDG_STATE_HOME".into(),
                self.lab.path("state").display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                self.lab.path("config").display().to_string(),
            ),
            (
                "RIGWATCH_SHIM_LOG".into(),
                self.shim_log.display().to_string(),
            ),
            (
                "RIGWATCH_VASTAI_JSON".into(),
                self.listing.display().to_string(),
            ),
        ]
        .into_iter()
        .chain(self.extra_env.iter().cloned())
        .collect()
    }

    /// rigwatch with the lab's environment but no provider shims on PATH.
    pub fn rigwatch_without_shims(&self, args: &[&str]) -> Output {
        let mut cmd = rigwatch();
        cmd.arg("--config").arg(&self.fleet).args(args);
        for (k, v) in self.env() {
            if k != "PATH" {
                cmd.env(k, v);
            }
        }
        cmd.stdin(std::process::Stdio::null())
            .output()
            .expect("run rigwatch")
    }

    pub fn rigwatch(&self, args: &[&str]) -> Output {
        let mut cmd = rigwatch();
        cmd.arg("--config").arg(&self.fleet).args(args);
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd.stdin(std::process::Stdio::null())
            .output()
            .expect("run rigwatch")
    }

    pub fn pull(&self) {
        let out = self.rigwatch(&["pull", "box"]);
        assert!(
            out.status.success(),
            "pull failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // This box still uses the old `verify = "…"`: it works, and the pull says how to move on.
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("is deprecated; name the files it is for under [host.pull.verify]"),
            "{said}"
        );
    }

    /// Every provider CLI call except the read-only listing the dashboard polls for prices.
    pub fn changes(&self) -> Vec<String> {
        std::fs::read_to_string(&self.shim_log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l != "vastai show instances --raw")
            .map(String::from)
            .collect()
    }

    /// A teardown without a terminal: always refused, and it says why.
    pub fn refused(&self, why: &str) {
        let out = self.rigwatch(&["teardown", "box"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains("REFUSED"), "{text}");
        assert!(text.contains(why), "expected {why:?} in:\n{text}");
        assert!(
            text.contains("will run: ") || text.contains("cannot run: "),
            "{text}"
        );
        assert!(self.changes().is_empty(), "the destroy must not have run");
        let out = self.rigwatch(&["ledger", "box", "--json"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert!(
            doc["teardowns"].as_array().is_none_or(Vec::is_empty),
            "a refused teardown is never recorded: {doc}"
        );
    }

    /// The dashboard in a real terminal, with the box up.
    pub fn dashboard(&self, tag: &str) -> Tmux {
        self.dashboard_and_pid(tag).0
    }

    /// As `dashboard`, with rigwatch's process id (the shell writes its own, then becomes
    /// rigwatch).
    pub fn dashboard_and_pid(&self, tag: &str) -> (Tmux, i32) {
        let (tmux, pidfile) = self.start_in_tmux(tag, "", "");
        tmux.wait_for("the host up", Duration::from_secs(30), |sc| {
            sc.contains("box") && sc.contains(" ✓ ")
        });
        (tmux, read_pid(&pidfile))
    }

    /// rigwatch on this fleet with `args` in a real terminal, under the lab's environment;
    /// `then` runs after it ends. The shell writes its process id to the returned file, then
    /// becomes rigwatch.
    fn start_in_tmux(&self, tag: &str, args: &str, then: &str) -> (Tmux, std::path::PathBuf) {
        let env: Vec<String> = self
            .env()
            .iter()
            .map(|(k, v)| format!("{k}='{v}'"))
            .collect();
        let pidfile = self.lab.path(&format!("{tag}.pid"));
        let command = format!(
            "env {} sh -c 'echo $$ > {}; exec {} --config {}{args}'; {then}sleep 60",
            env.join(" "),
            pidfile.display(),
            env!("CARGO_BIN_EXE_rigwatch"),
            self.fleet.display()
        );
        (Tmux::start(tag, &command), pidfile)
    }

    /// The teardown in a real terminal, typing `name`; returns the final screen.
    pub fn in_terminal(&self, name: &str, tag: &str) -> String {
        let (tmux, _) = self.teardown_typed(name, tag);
        tmux.wait_for("the end", Duration::from_secs(60), |s| s.contains("EXIT="))
    }

    /// `rigwatch teardown box` started in a real terminal with `name` typed at its prompt; the
    /// terminal and rigwatch's process id (the shell writes its own, then becomes rigwatch).
    pub fn teardown_typed(&self, name: &str, tag: &str) -> (Tmux, i32) {
        let (tmux, pidfile) = self.start_in_tmux(tag, " teardown box", "echo EXIT=$?; ");
        tmux.wait_for("the name prompt", Duration::from_secs(30), |s| {
            s.contains("Type the box's name")
        });
        let pid = read_pid(&pidfile);
        tmux.keys(&[name, "Enter"]);
        (tmux, pid)
    }
}

fn read_pid(pidfile: &Path) -> i32 {
    std::fs::read_to_string(pidfile)
        .expect("pidfile")
        .trim()
        .parse()
        .expect("pid")
}
