//! `[[kaggle]]` members against a stand-in `kaggle` on PATH that prints what the real CLI
//! prints. Each form is taken from the `kaggle` 2.2.5 package's source
//! (`kaggle/api/kaggle_api_extended.py`, "ext.py" below; `kaggle/cli.py`) and was checked by
//! running that CLI against canned HTTP answers:
//! - `kernels status`: `OWNER/SLUG has status "KernelWorkerStatus.X"` (ext.py:7678), then
//!   `Failure message: "…"` when one was given (ext.py:7676); 1.x printed the bare word.
//! - `kernels list --csv`: `ref,title,author,lastRunTime,totalVotes`, CRLF (ext.py:6736, 9153).
//! - `quota --csv`: `resource,used,remaining,total,refreshAt`, hours as `12.50h` (ext.py:6747).
//! - `kernels output -p DIR`: `Downloading NAME to DIR`, a blank line, `Output file downloaded
//!   to PATH` (ext.py:6451, 7573), and `Kernel log downloaded to PATH ` (ext.py:7594).
//! - `kernels files --csv`: `name,size,creationDate` and a row per output file; "No files
//!   found" where the API gave no list (ext.py:7076-7089).
//! - no credentials: the "Authentication required" help on stdout, exit 1 (cli.py:89).
//! - an HTTP error: `404 Client Error: Not Found for url: …` and a hint, on stderr, exit 1
//!   (ext.py:1025-1047).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The stand-in: reads what to print from files under its folder, as the real CLI would
/// print them; writes each call's arguments to `calls`.
const STANDIN: &str = r#"#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/calls"
if [ -e "$d/auth" ]; then
  printf 'Authentication required to call the Kaggle API.\n\nFirst, you will need a Kaggle account. You can sign up at\n  https://www.kaggle.com/account/login\n'
  exit 1
fi
case "$1 $2" in
  "--version ") echo "Kaggle CLI 2.2.5"; exit 0;;
  "kernels status")
    f="$d/status/$(echo "$3" | tr / _)"
    if [ -e "$f.err" ]; then cat "$f.err" >&2; exit 1; fi
    cat "$f"; exit 0;;
  "kernels list") cat "$d/list.csv"; exit 0;;
  "quota --csv")
    # 1.x has no quota command: argparse refuses it.
    if [ -e "$d/noquota" ]; then echo "kaggle: error: argument command: invalid choice: 'quota'" >&2; exit 2; fi
    cat "$d/quota.csv"; exit 0;;
  "kernels pull")
    cp "$d/meta/$(echo "$3" | tr / _).json" "$5/kernel-metadata.json"
    echo "Source code and metadata downloaded to $5"; exit 0;;
  "kernels files")
    src="$d/output/$(echo "$3" | tr / _)"
    printf 'name,size,creationDate\r\n'
    if [ -d "$src" ]; then ls "$src" | head -1 | sed 's/$/,1024,2026-11-30 10:00:00\r/'; fi
    exit 0;;
  "kernels output")
    src="$d/output/$(echo "$3" | tr / _)"; dir="$5"; slug=${3#*/}
    mkdir -p "$dir"
    (cd "$src" && find . -type f | sed 's|^\./||') | while read -r f; do
      mkdir -p "$dir/$(dirname "$f")"
      echo "Downloading $(basename "$f") to $dir/$(dirname "$f")"; echo
      cp "$src/$f" "$dir/$f"
      echo "Output file downloaded to $dir/$f"
    done
    echo '[{"stream_name":"stdout","time":1.2,"data":"epoch 1\n"}]' > "$dir/$slug.log"
    echo "Kernel log downloaded to $dir/$slug.log "
    exit 0;;
esac
echo "usage: kaggle [-h] [-v] [-W]" >&2; exit 2
"#;

struct Kaggle {
    dir: tempfile::TempDir,
}

impl Kaggle {
    fn new() -> Kaggle {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        for sub in ["bin/status", "bin/meta", "bin/output"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("folders");
        }
        let program = bin.join("kaggle");
        std::fs::write(&program, STANDIN).expect("stand-in");
        Command::new("chmod")
            .arg("+x")
            .arg(&program)
            .status()
            .expect("chmod");
        let k = Kaggle { dir };
        k.write(
            "list.csv",
            "Next Page Token = CAEQAA\nref,title,author,lastRunTime,totalVotes\r\n",
        );
        k.write(
            "quota.csv",
            "resource,used,remaining,total,refreshAt\r\n\
             GPU,12.50h,17.50h,30.00h,2026-12-05T00:00:00+00:00\r\n\
             TPU,0.00h,20.00h,20.00h,2026-12-05T00:00:00+00:00\r\n",
        );
        k
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.bin().join(name), text).expect("stand-in data");
    }

    /// `kernel`'s status as 2.x prints it, with its list row (`ran_hours` ago).
    fn kernel(&self, kernel: &str, word: &str, failure: Option<&str>, ran_hours: f64) {
        let mut text = format!("{kernel} has status \"KernelWorkerStatus.{word}\"\n");
        if let Some(f) = failure {
            text.push_str(&format!("Failure message: \"{f}\"\n"));
        }
        self.write(&format!("status/{}", kernel.replace('/', "_")), &text);
        let ran = chrono::Utc::now() - chrono::Duration::seconds((ran_hours * 3600.0) as i64);
        let row = format!(
            "{kernel},A Title,Alice Smith,{},0\r\n",
            ran.format("%Y-%m-%d %H:%M:%S%.6f")
        );
        let list = std::fs::read_to_string(self.bin().join("list.csv")).expect("list");
        self.write("list.csv", &format!("{list}{row}"));
    }

    fn fleet(&self, extra: &str, kernels: &[&str]) -> PathBuf {
        let list: Vec<String> = kernels.iter().map(|k| format!("\"{k}\"")).collect();
        let text = format!(
            "[[kaggle]]\nname = \"kaggle\"\nkernels = [{}]\n{extra}",
            list.join(", ")
        );
        let path = self.dir.path().join("fleet.toml");
        std::fs::write(&path, text).expect("fleet");
        path
    }

    fn rigwatch(&self, args: &[&str], fleet: &Path) -> Output {
        let path = format!(
            "{}:{}",
            self.bin().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new(env!("CARGO_BIN_EXE_rigwatch"))
            .args(args)
            .arg("--config")
            .arg(fleet)
            .env("PATH", path)
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("KAGGLE_KEY", "0123456789abcdef0123456789abcdef")
            .env_remove("RIGWATCH_CONFIG")
            .output()
            .expect("rigwatch")
    }

    fn status_json(&self, fleet: &Path) -> Value {
        let out = self.rigwatch(&["status", "--json", "--timeout", "20"], fleet);
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)))
    }
}

fn job<'a>(json: &'a Value, id: &str) -> &'a Value {
    json["clusters"][0]["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["id"] == id))
        .unwrap_or_else(|| panic!("job {id} missing: {json}"))
}

/// Each state the CLI reports is a row with its phase and words; the running commit carries
/// the 9 h limit as its walltime clock; the account's quota is read.
#[test]
fn status_reads_each_state_a_commit_can_be_in() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "RUNNING", None, 8.5);
    k.kernel("alice/eval-suite", "COMPLETE", None, 20.0);
    k.kernel(
        "alice/broken-nb",
        "ERROR",
        Some("Your notebook tried to allocate more memory than is available. It has restarted."),
        3.0,
    );
    k.kernel("alice/waiting", "QUEUED", None, 2.0);
    k.kernel("alice/stopped", "CANCEL_ACKNOWLEDGED", None, 1.0);
    // 1.x printed the bare word; a word rigwatch does not know is shown as printed.
    k.write(
        "status/alice_paused-nb",
        "alice/paused-nb has status \"paused\"\n",
    );
    let kernels = [
        "alice/train-llama",
        "alice/eval-suite",
        "alice/broken-nb",
        "alice/waiting",
        "alice/stopped",
        "alice/paused-nb",
    ];
    let json = k.status_json(&k.fleet("", &kernels));
    let member = &json["clusters"][0];
    assert_eq!(member["scheduler"], "kaggle", "{member}");
    assert!(member["error"].is_null(), "{member}");
    let states: Vec<(&str, &str)> = kernels
        .iter()
        .map(|id| {
            let j = job(&json, id);
            (
                j["phase"].as_str().unwrap_or(""),
                j["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("running", "RUNNING"),
            ("succeeded", "COMPLETE"),
            ("failed", "ERROR"),
            ("pending", "QUEUED"),
            ("cancelled", "CANCEL_ACKNOWLEDGED"),
            ("other", "PAUSED"),
        ]
    );
    let running = job(&json, "alice/train-llama");
    assert_eq!(running["limit_secs"], 9 * 3600, "{running}");
    let left = running["walltime"]["remaining_secs"].as_i64().unwrap_or(0);
    assert!((1700..=1800).contains(&left), "{running}");
    assert_eq!(
        job(&json, "alice/broken-nb")["reason_words"],
        "a commit with a failing cell saves nothing: Your notebook tried to allocate more \
         memory than is available. It has restarted."
    );
    assert!(
        job(&json, "alice/waiting")["dangers"][0]
            .as_str()
            .is_some_and(|d| d.starts_with("queued for 2h")),
        "{json}"
    );
    assert_eq!(member["quota"]["remaining_hours"], 17.5, "{member}");
    // The complete commit wrote nothing to /kaggle/working: said, not left to the next pull.
    let complete = job(&json, "alice/eval-suite");
    assert!(
        complete["reason_words"]
            .as_str()
            .is_some_and(|w| w.starts_with("complete, but it kept no output")),
        "{complete}"
    );
    let calls = std::fs::read_to_string(k.bin().join("calls")).expect("calls");
    assert!(
        calls.contains("kernels list --mine --csv --page-size 100 --sort-by dateRun")
            && calls.contains("kernels files alice/eval-suite --csv --page-size 1"),
        "{calls}"
    );
}

/// The table says the same in words: the quota, the failing cell, the limit.
#[test]
fn the_status_table_says_what_a_commit_costs() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "RUNNING", None, 8.5);
    k.kernel("alice/broken-nb", "ERROR", Some("CUDA out of memory"), 3.0);
    let fleet = k.fleet("", &["alice/train-llama", "alice/broken-nb"]);
    let out = k.rigwatch(&["status", "--timeout", "20"], &fleet);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("kaggle kaggle · kaggle CLI (2 kernels)"),
        "{table}"
    );
    assert!(
        table.contains(
            "weekly GPU quota: 12.5 h used of 30.0 h, 17.5 h left (renews Sat 2026-12-05 00:00 UTC)"
        ),
        "{table}"
    );
    assert!(
        table.contains("ERROR: a commit with a failing cell saves nothing: CUDA out of memory"),
        "{table}"
    );
    assert!(
        table.contains("RUNNING, 29m left") || table.contains("RUNNING, 30m left"),
        "{table}"
    );
}

/// A notebook meant for a GPU whose settings say no accelerator runs on CPU: a danger, and
/// its limit is the CPU one.
#[test]
fn a_gpu_notebook_left_on_none_is_said_to_run_on_cpu() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "RUNNING", None, 1.0);
    // kernel-metadata.json as `kernels pull -m` writes it (ext.py:7443-7463).
    k.write(
        "meta/alice_train-llama.json",
        r#"{
  "id": "alice/train-llama",
  "id_no": 12345678,
  "title": "Train Llama",
  "code_file": "train-llama.ipynb",
  "language": "python",
  "kernel_type": "notebook",
  "is_private": true,
  "enable_gpu": false,
  "enable_tpu": false,
  "enable_internet": true,
  "keywords": [],
  "dataset_sources": [],
  "kernel_sources": [],
  "competition_sources": [],
  "model_sources": [],
  "docker_image": "gcr.io/kaggle-images/python@sha256:abc",
  "machine_shape": ""
}"#,
    );
    let json = k.status_json(&k.fleet("gpu = true\n", &["alice/train-llama"]));
    let j = job(&json, "alice/train-llama");
    assert_eq!(j["limit_secs"], 12 * 3600, "{j}");
    assert!(
        j["dangers"][0]
            .as_str()
            .is_some_and(|d| d.starts_with("runs on CPU: its notebook's accelerator is None")),
        "{j}"
    );
}

/// The CLI's error names the member and the command; with no credentials the row says how to
/// sign in; a key in the CLI's words, or the one in the environment, is never shown.
#[test]
fn cli_errors_and_missing_credentials_are_named_and_keys_never_shown() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "RUNNING", None, 1.0);
    k.write(
        "status/alice_gone-kernel.err",
        "404 Client Error: Not Found for url: https://api.kaggle.com/v1/kernels.KernelsApiService/GetKernelSessionStatus?key=0123456789abcdef0123456789abcdef token=sk-abcdefghijklmnopqrstuv\n\n\
         The resource was not found. Check the spelling of the reference you passed.\n",
    );
    let fleet = k.fleet("", &["alice/train-llama", "alice/gone-kernel"]);
    let out = k.rigwatch(&["status", "--json", "--timeout", "20"], &fleet);
    let text = String::from_utf8_lossy(&out.stdout);
    let json: Value = serde_json::from_str(&text).expect("json");
    let error = json["clusters"][0]["error"].as_str().unwrap_or("");
    assert!(
        error.starts_with(
            "kaggle: kaggle kernels status alice/gone-kernel: exit 1: 404 Client Error: Not Found"
        ),
        "{error}"
    );
    assert!(error.contains("The resource was not found"), "{error}");
    for shown in [text.as_ref(), String::from_utf8_lossy(&out.stderr).as_ref()] {
        assert!(
            !shown.contains("0123456789abcdef0123456789abcdef"),
            "{shown}"
        );
        assert!(!shown.contains("abcdefghijklmnopqrstuv"), "{shown}");
    }
    k.write("auth", "");
    let json = k.status_json(&fleet);
    let error = json["clusters"][0]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("the kaggle CLI found no credentials: run `kaggle auth login`"),
        "{error}"
    );
}

/// `rigwatch pull kaggle --job OWNER/SLUG`: the output downloaded into a folder of its own,
/// each file hashed and proven; a damaged file is caught by verify (exit 1, FAILED in the
/// ledger); a pull path that matched nothing is said.
#[test]
fn a_commits_output_is_pulled_and_a_damaged_file_is_caught() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "COMPLETE", None, 2.0);
    let out_dir = k.bin().join("output/alice_train-llama");
    std::fs::create_dir_all(out_dir.join("ckpt")).expect("output");
    std::fs::write(out_dir.join("metrics.json"), "{\"loss\": 0.42}\n").expect("json");
    // Cut mid-value: what a download that stopped early leaves.
    std::fs::write(out_dir.join("ckpt/state.json"), "{\"step\": 12, \"opt").expect("cut");
    let dest = k.dir.path().join("results");
    let fleet = k.fleet(
        &format!(
            "[kaggle.pull]\npaths = [\"/kaggle/working/metrics.json\", \"/kaggle/working/ckpt\", \"/kaggle/working/*.pt\"]\ndest = \"{}\"\n",
            dest.display()
        ),
        &["alice/train-llama"],
    );
    let out = k.rigwatch(&["pull", "kaggle", "--job", "alice/train-llama"], &fleet);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("MISSING  /kaggle/working/*.pt"), "{said}");
    let folders: Vec<PathBuf> = std::fs::read_dir(dest.join("alice/train-llama"))
        .expect("the kernel's folder")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(folders.len(), 1, "one pull, one folder: {folders:?}");
    assert!(
        !folders[0].to_string_lossy().ends_with(".part"),
        "{folders:?}"
    );
    assert!(folders[0].join("metrics.json").is_file());
    assert!(folders[0].join("train-llama.log").is_file());
    let ledger = k.rigwatch(&["ledger", "--json"], &fleet);
    let ledger: Value = serde_json::from_slice(&ledger.stdout).expect("ledger json");
    let files = ledger["pulls"][0]["files"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let outcome = |path: &str| {
        files
            .iter()
            .find(|f| f["remote_path"] == path)
            .map(|f| f["outcome"].as_str().unwrap_or("").to_string())
            .unwrap_or_else(|| panic!("{path} missing: {ledger}"))
    };
    assert_eq!(outcome("/kaggle/working/metrics.json"), "proven");
    assert_eq!(outcome("/kaggle/working/ckpt/state.json"), "failed");
    assert_eq!(
        ledger["pulls"][0]["instance_id"], "alice/train-llama",
        "{ledger}"
    );
}

/// `watch` alerts on a commit as on any job: its limit near (clock_walltime, saying why) and a
/// danger (job_danger); `--metrics` serves the row, its time left and the GPU quota.
#[test]
fn watch_alerts_on_a_commit_and_metrics_show_it() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "RUNNING", None, 8.5);
    k.kernel("alice/waiting", "QUEUED", None, 2.0);
    let fleet = k.fleet("", &["alice/train-llama", "alice/waiting"]);
    let text = std::fs::read_to_string(&fleet).expect("fleet");
    std::fs::write(&fleet, format!("[alerts]\ngroup_wait_secs = 1\n{text}")).expect("fleet");
    let port = support::free_port();
    let path = format!(
        "{}:{}",
        k.bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let watch = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args([
            "watch",
            "--for",
            "8",
            "--metrics",
            &format!("127.0.0.1:{port}"),
            "--config",
        ])
        .arg(&fleet)
        .env("PATH", path)
        .env("XDG_STATE_HOME", k.dir.path().join("state"))
        .env_remove("RIGWATCH_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("watch");
    let mut metrics = String::new();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(6)
        && !metrics.contains("rigwatch_gpu_quota_remaining_seconds")
    {
        std::thread::sleep(std::time::Duration::from_millis(300));
        metrics = Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "2",
                &format!("http://127.0.0.1:{port}/metrics"),
            ])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
    }
    let out = watch.wait_with_output().expect("watch ends");
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let said = |kind: &str| {
        events
            .iter()
            .find(|e| e["kind"] == kind && e["state"] == "firing")
            .map(|e| e["message"].as_str().unwrap_or("").to_string())
            .unwrap_or_else(|| {
                panic!(
                    "no {kind}: {events:?}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    };
    assert!(
        said("clock_walltime")
            .starts_with("commit of alice/train-llama reaches Kaggle's 9 h limit in"),
        "{events:?}"
    );
    assert!(
        said("job_danger").starts_with("job alice/waiting (waiting): queued for 2h"),
        "{events:?}"
    );
    assert!(
        metrics.contains(
            r#"rigwatch_gpu_quota_remaining_seconds{cluster="kaggle",source="account"} 63000"#
        ),
        "{metrics}"
    );
    // watch remembers the GPU runs it saw, for the quota's lower bound where there is none.
    let runs = std::fs::read_to_string(k.dir.path().join("state/rigwatch/kaggle-runs.json"))
        .unwrap_or_default();
    assert!(runs.contains("alice/train-llama"), "{runs}");
    assert!(
        metrics.contains(r#"rigwatch_job_phase{cluster="kaggle",job="alice/train-llama",name="train-llama",phase="running",state="RUNNING"} 1"#),
        "{metrics}"
    );
}

/// `check` finds the CLI, reads the kernels and the quota; a CLI that is not there fails with
/// the fix.
#[test]
fn check_finds_the_cli_and_says_how_to_install_it() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "RUNNING", None, 1.0);
    let fleet = k.fleet("", &["alice/train-llama"]);
    let out = k.rigwatch(&["check"], &fleet);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("✓ the kaggle CLI: Kaggle CLI 2.2.5"),
        "{said}"
    );
    assert!(
        said.contains("✓ GPU quota: 17.5 h left of 30.0 h this week"),
        "{said}"
    );
    let fleet = k.fleet("kaggle = \"/nonexistent/kaggle\"\n", &["alice/train-llama"]);
    let out = k.rigwatch(&["check"], &fleet);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("✗ the kaggle CLI: version not read:"),
        "{said}"
    );
    assert!(said.contains("fix: pip install kaggle"), "{said}");
}

/// In the dashboard, `p` on a commit's row pulls its output (the status line says the pull and
/// what came of it) and `T` says there is nothing to tear down; the row never acts on the
/// hidden host selection.
#[test]
fn the_dashboard_pulls_a_commit_and_refuses_its_teardown() {
    let k = Kaggle::new();
    k.kernel("alice/train-llama", "COMPLETE", None, 2.0);
    let out_dir = k.bin().join("output/alice_train-llama");
    std::fs::create_dir_all(&out_dir).expect("output");
    std::fs::write(out_dir.join("metrics.json"), "{\"loss\": 0.42}\n").expect("json");
    let dest = k.dir.path().join("results");
    let fleet = k.fleet(
        &format!(
            "[kaggle.pull]\npaths = [\"/kaggle/working/metrics.json\"]\ndest = \"{}\"\n",
            dest.display()
        ),
        &["alice/train-llama"],
    );
    let command = format!(
        "env PATH={}:\"$PATH\" XDG_STATE_HOME={} {} --config {}; echo RIGWATCH-EXITED-$?; sleep 60",
        k.bin().display(),
        k.dir.path().join("state").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        fleet.display()
    );
    let tmux = support::tmux::Tmux::start("kaggle-p", &command);
    let limit = std::time::Duration::from_secs(30);
    tmux.wait_for("the commit's row", limit, |s| {
        s.contains("kaggle/alice") && s.contains("COMPLETE")
    });
    tmux.keys(&["Tab"]);
    tmux.keys(&["T"]);
    tmux.wait_for("the refusal", limit, |s| {
        s.contains("nothing there to tear down")
    });
    tmux.keys(&["p"]);
    let screen = tmux.wait_for("the pull's end", limit, |s| {
        s.contains("pull #1 of kaggle (commit alice/train-llama): 2/2 files hashed and verified")
    });
    assert!(!screen.contains("MISSING"), "{screen}");
    // Its detail offers what a commit takes: no cancel, no shell, no log to follow.
    tmux.keys(&["Enter"]);
    // The detail's title can be on screen a frame before its keys: wait for both.
    let screen = tmux.wait_for("the commit's detail", limit, |s| {
        s.contains("Kaggle commit alice/train-llama on kaggle") && s.contains("p pull its output")
    });
    assert!(!screen.contains("T cancel/delete"), "{screen}");
    tmux.escape_closing("Kaggle commit alice/train-llama on kaggle");
    tmux.keys(&["q"]);
    tmux.wait_for("exit", limit, |s| s.contains("RIGWATCH-EXITED-0"));
}

/// A CLI without `kaggle quota` (1.x): the quota is rigwatch's own count of the GPU runs it
/// saw, remembered between runs, and every view says it is a lower bound.
#[test]
fn without_the_accounts_quota_the_runs_seen_are_a_lower_bound() {
    let k = Kaggle::new();
    k.write("noquota", "");
    k.kernel("alice/train-llama", "RUNNING", None, 2.0);
    let fleet = k.fleet("", &["alice/train-llama"]);
    let json = k.status_json(&fleet);
    let member = &json["clusters"][0];
    assert_eq!(member["quota"]["lower_bound"], true, "{member}");
    let used = member["quota"]["used_hours"].as_f64().unwrap_or(0.0);
    assert!((1.99..2.1).contains(&used), "{member}");
    assert!(
        member["via"]
            .as_str()
            .is_some_and(|v| v.contains("GPU quota not read (") && v.contains("a lower bound")),
        "{member}"
    );
    // status reads what the dashboard and watch remember; it writes nothing itself.
    assert!(
        !k.dir
            .path()
            .join("state/rigwatch/kaggle-runs.json")
            .exists()
    );
    let out = k.rigwatch(&["status", "--timeout", "20"], &fleet);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("weekly GPU quota: at least 2.0 h used of 30.0 h, at most 28.0 h left"),
        "{table}"
    );
}
