//! The teardown guard end to end: the real binary, a real sshd box, the ledger on disk, and a
//! recording shim standing in for `vastai`. Refused before any pull, after a corrupted local
//! copy, after a new checkpoint appears on the box, without a terminal, and for a mistyped name;
//! then a clean pull and the typed name call the destroy exactly once with the right instance.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use support::tmux::Tmux;
use support::{Lab, rigwatch};

struct Setup {
    lab: Lab,
    fleet: PathBuf,
    run: PathBuf,
    dest: PathBuf,
    shim_log: PathBuf,
    _sshd: support::Sshd,
}

fn providers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers")
}

fn setup() -> Setup {
    let mut lab = Lab::new();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    std::fs::create_dir_all(run.join("final_ckpts")).expect("dirs");
    std::fs::write(run.join("final_ckpts/model.bin"), vec![7u8; 300_000]).expect("model");
    std::fs::write(run.join("final_ckpts/metrics.csv"), "step,loss\n1,0.3\n").expect("csv");
    let dest = lab.path("results/box");
    let body = format!(
        "{}\nprofile = \"vastai\"\ninstance_id = \"4242\"\nprice_per_hour = 2.5\n\
         [host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\nverify = \"test -s {{file}}\"",
        lab.host_entry(&sshd),
        run.join("final_ckpts").display(),
        dest.display()
    );
    let fleet = lab.fleet("fleet.toml", "", &[("box", body)]);
    let shim_log = lab.path("shim.log");
    Setup {
        fleet,
        run,
        dest,
        shim_log,
        lab,
        _sshd: sshd,
    }
}

impl Setup {
    fn env(&self) -> Vec<(String, String)> {
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
        ]
    }

    fn rigwatch(&self, args: &[&str]) -> Output {
        let mut cmd = rigwatch();
        cmd.arg("--config").arg(&self.fleet).args(args);
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd.stdin(std::process::Stdio::null())
            .output()
            .expect("run rigwatch")
    }

    fn pull(&self) {
        let out = self.rigwatch(&["pull", "box"]);
        assert!(
            out.status.success(),
            "pull failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Every provider CLI call except the read-only listing the dashboard polls for prices.
    fn changes(&self) -> Vec<String> {
        std::fs::read_to_string(&self.shim_log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l != "vastai show instances --raw")
            .map(String::from)
            .collect()
    }

    /// A teardown without a terminal: always refused, and it says why.
    fn refused(&self, why: &str) {
        let out = self.rigwatch(&["teardown", "box"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(text.contains("REFUSED"), "{text}");
        assert!(text.contains(why), "expected {why:?} in:\n{text}");
        assert!(
            text.contains("will run: vastai destroy instance '4242' -y"),
            "{text}"
        );
        assert!(
            !self.shim_log.exists(),
            "the destroy shim must not have run"
        );
    }

    /// The teardown in a real terminal, typing `name`; returns the final screen.
    fn in_terminal(&self, name: &str, tag: &str) -> String {
        let env: Vec<String> = self
            .env()
            .iter()
            .map(|(k, v)| format!("{k}='{v}'"))
            .collect();
        let command = format!(
            "env {} {} --config {} teardown box; echo EXIT=$?; sleep 60",
            env.join(" "),
            env!("CARGO_BIN_EXE_rigwatch"),
            self.fleet.display()
        );
        let tmux = Tmux::start(tag, &command);
        tmux.wait_for("the name prompt", Duration::from_secs(30), |s| {
            s.contains("Type the host's name")
        });
        tmux.keys(&[name, "Enter"]);
        tmux.wait_for("the end", Duration::from_secs(30), |s| s.contains("EXIT="))
    }
}

#[test]
fn teardown_is_refused_until_a_verified_current_pull_then_runs_once() {
    let s = setup();
    s.refused("never pulled");

    s.pull();
    let model = s.dest.join("final_ckpts/model.bin");
    let mut bytes = std::fs::read(&model).expect("local model");
    bytes[1234] ^= 0xff;
    std::fs::write(&model, bytes).expect("corrupt");
    s.refused("no longer matches its hash");

    s.pull();
    s.refused("needs a person at a terminal");

    std::fs::write(s.run.join("final_ckpts/ckpt_new.bin"), b"newer").expect("new ckpt");
    s.refused("appeared on the box after the pull");

    s.pull();
    let screen = s.in_terminal("bxo", "typo");
    assert!(screen.contains("type the host's name, box"), "{screen}");
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(!s.shim_log.exists(), "a mistyped name must not destroy");

    let screen = s.in_terminal("box", "confirm");
    assert!(screen.contains("destroying instance 4242."), "{screen}");
    assert!(screen.contains("EXIT=0"), "{screen}");
    let calls = std::fs::read_to_string(&s.shim_log).expect("shim log");
    assert_eq!(calls, "vastai destroy instance 4242 -y\n");

    let out = s.rigwatch(&["ledger", "box", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ledger json");
    let teardowns = doc["teardowns"].as_array().expect("teardowns");
    assert_eq!(teardowns.len(), 1);
    assert_eq!(teardowns[0]["instance_id"], "4242");
    assert_eq!(teardowns[0]["exit_status"], 0);
    assert_eq!(teardowns[0]["pull_id"], doc["pulls"][0]["id"]);
}

#[test]
fn the_dashboard_modal_refuses_then_pulls_then_destroys_once() {
    let s = setup();
    let env: Vec<String> = s.env().iter().map(|(k, v)| format!("{k}='{v}'")).collect();
    let command = format!(
        "env {} {} --config {}; sleep 60",
        env.join(" "),
        env!("CARGO_BIN_EXE_rigwatch"),
        s.fleet.display()
    );
    let tmux = Tmux::start("modal", &command);
    tmux.wait_for("the host up", Duration::from_secs(30), |sc| {
        sc.contains("box") && sc.contains(" ✓ ")
    });
    tmux.keys(&["T"]);
    let screen = tmux.wait_for("the refusal", Duration::from_secs(20), |sc| {
        sc.contains("REFUSED — not until") && sc.contains("never pulled")
    });
    assert!(screen.contains("Teardown box — guarded"), "{screen}");
    assert!(
        screen.contains("will run: vastai destroy instance '4242' -y"),
        "{screen}"
    );
    tmux.keys(&["b", "o", "x", "Enter"]);
    tmux.wait_for("the refusal again", Duration::from_secs(10), |sc| {
        sc.contains("never pulled") && sc.contains("Type the host's name to confirm: box")
    });
    assert!(
        s.changes().is_empty(),
        "refused: the destroy shim must not run"
    );
    tmux.keys(&["Escape"]);

    tmux.keys(&["p"]);
    tmux.wait_for("the pull", Duration::from_secs(60), |sc| {
        sc.contains("pull #1 of box: 2/2 files hashed and verified")
    });
    tmux.keys(&["T"]);
    tmux.wait_for("a verified-current pull", Duration::from_secs(20), |sc| {
        sc.contains("The last pull is verified-current")
    });
    tmux.keys(&["b", "o", "x", "Enter"]);
    let screen = tmux.wait_for("the destroy", Duration::from_secs(30), |sc| {
        sc.contains("Done; recorded in the ledger")
    });
    assert!(screen.contains("destroying instance 4242."), "{screen}");
    assert_eq!(s.changes(), vec!["vastai destroy instance 4242 -y"]);
    tmux.keys(&["Escape"]);
    tmux.keys(&["q"]);
}
