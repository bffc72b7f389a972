//! `rigwatch status` against hostile and oversized boxes: a peer that never speaks SSH, a host
//! configured with 2 000 mounts, a box that floods the sections judgements need whole. Each is
//! bounded in time and says what it could not read or judge.

mod support;

use serde_json::Value;
use support::{Lab, json_host as host};

fn kinds(h: &Value) -> Vec<String> {
    h["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .map(|s| s["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A peer that accepts TCP and never speaks SSH, with a connect timeout (10 s) longer than
/// `--timeout 3`: status ends by 3 s (plus starting and the goodbye), the host is not up, and
/// its error states the wait that really passed instead of nothing or another timeout's figure.
#[test]
fn a_peer_that_never_speaks_ssh_ends_status_by_its_timeout_saying_how_long() {
    let lab = Lab::new();
    let peer = support::silent::SilentPeer::start();
    let entry = format!(
        "ssh = \"{}@127.0.0.1:{}\"\nidentity = \"{}\"",
        lab.user,
        peer.port,
        lab.client_key.display()
    );
    let fleet = lab.fleet("fleet.toml", "", &[("mute", entry)]);
    let text = std::fs::read_to_string(&fleet).expect("fleet");
    std::fs::write(
        &fleet,
        text.replace("connect_timeout_secs = 3", "connect_timeout_secs = 10"),
    )
    .expect("fleet");
    let started = std::time::Instant::now();
    let out = lab
        .rigwatch_on(&fleet)
        .args(["status", "--json", "--timeout", "3"])
        .output()
        .expect("status");
    let took = started.elapsed().as_secs_f64();
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    let link = &host(&json, "mute")["link"];
    assert_ne!(out.status.code(), Some(0), "{json}");
    assert!(took <= 3.0 + 1.5, "took {took:.1}s for --timeout 3: {link}");
    assert_ne!(link["state"], "up", "{link}");
    let error = link["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error: {link}"));
    let said = support::silent::stated_secs(error).unwrap_or_else(|| panic!("no figure: {link}"));
    assert!(
        (said - took).abs() <= 1.0,
        "said {said}s, took {took:.1}s: {error}"
    );
}

/// 2 000 mounts: what the probe carries to the box no longer grows its command line (the list
/// goes on the probe's stdin), so the host still reports. The box's `df` lists every one; the
/// section is cut at its bound and said to be, and the mount at 97 % inodes in what was kept is
/// still found.
#[test]
fn a_host_with_two_thousand_mounts_still_reports_and_says_where_it_was_cut() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("wide");
    // GNU df's `--output` shape, one row per mount asked for; the eighth at 97 % inodes.
    sshd.shim_script(
        "df",
        "#!/bin/sh\nprintf 'Filesystem Type 1B-blocks Used Avail Use%% Inodes IUsed IFree IUse%% Mounted on\\n'\n\
         for m in \"$@\"; do case $m in -*) continue;; esac\n\
         if [ \"$m\" = /mnt/d0007 ]; then i='1000 970 30 97%'; else i='1000 10 990 1%'; fi\n\
         printf 'srv:/x nfs 1000000000 1000 999999000 1%% %s %s\\n' \"$i\" \"$m\"; done\n",
    );
    let mounts: Vec<String> = (0..2000).map(|i| format!("\"/mnt/d{i:04}\"")).collect();
    let entry = format!(
        "{}\nmounts = [{}]",
        lab.host_entry(&sshd),
        mounts.join(", ")
    );
    let fleet = lab.fleet("fleet.toml", "", &[("wide", entry)]);
    let out = lab
        .rigwatch_on(&fleet)
        .args(["status", "--json", "--timeout", "20"])
        .output()
        .expect("status");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
                .chars()
                .take(600)
                .collect::<String>()
        )
    });
    let h = host(&json, "wide");
    assert_eq!(h["link"]["state"], "up", "{}", h["link"]);
    let said = h["signals"].to_string();
    assert!(
        said.contains("df") && said.contains("cut at 64 KiB"),
        "the df section's cut is said: {said}"
    );
    let seen = h["mounts"].as_array().expect("mounts");
    assert!(seen.len() > 100, "{} mounts read", seen.len());
    assert!(
        kinds(h).iter().any(|k| k.contains("inode")),
        "the mount at 97 % inodes is found: {:?}",
        kinds(h)
    );
    assert_ne!(out.status.code(), Some(0));
}

/// A box that floods the sections judgements need whole: df lists 20 000 mounts, nvidia-smi
/// 20 000 compute apps. Each judgement says it could not judge (a warning of its own kind, in
/// status --json), instead of judging the part that was kept, and status is not healthy.
#[test]
fn a_cut_section_makes_its_judgements_say_they_could_not_judge() {
    let mut lab = Lab::new();
    let sshd = lab.start_host("flood");
    sshd.shim_script(
        "df",
        "#!/bin/sh\nprintf 'Filesystem Type 1B-blocks Used Avail Use%% Inodes IUsed IFree IUse%% Mounted on\\n'\n\
         i=0; while [ $i -lt 20000 ]; do printf 'srv:/x nfs 1000 10 990 1%% 1000 10 990 1%% /mnt/m%s\\n' $i; i=$((i + 1)); done\n",
    );
    sshd.shim_script(
        "nvidia-smi",
        "#!/bin/sh\ncase \"$*\" in *compute-apps*)\n\
         printf 'pid, process_name, used_gpu_memory [MiB], gpu_uuid\\n'\n\
         i=0; while [ $i -lt 20000 ]; do printf '%s, python, 100 MiB, GPU-1\\n' $((i + 100)); i=$((i + 1)); done; exit 0;; esac\n\
         exit 127\n",
    );
    let fleet = lab.fleet("fleet.toml", "", &[("flood", lab.host_entry(&sshd))]);
    let out = lab
        .rigwatch_on(&fleet)
        .args(["status", "--json", "--timeout", "30"])
        .output()
        .expect("status");
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    let h = host(&json, "flood");
    let unjudged: Vec<String> = h["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .filter(|s| s["kind"] == "not_judged")
        .map(|s| format!("{} {}", s["severity"], s["message"]))
        .collect();
    for what in ["disks: could not judge", "VRAM holders: could not judge"] {
        assert!(
            unjudged
                .iter()
                .any(|u| u.contains(what) && u.contains("warn")),
            "{what}: {unjudged:?}\n{}",
            h["signals"]
        );
    }
    assert_ne!(out.status.code(), Some(0));
}

/// A login node whose `squeue` hangs: `status --timeout 4` ends by its limit, says the queue
/// was not read, and leaves no squeue running on the login node (run under `timeout` there:
/// one more hung squeue each period is what gets a shared login node's user flagged).
#[test]
fn a_hung_squeue_is_ended_on_the_login_node_too() {
    // A squeue that never answers, and a sleep no other test runs, to look for afterwards.
    let (lab, _login, fleet) = login_node("#!/bin/sh\nsleep 347\n");
    let started = std::time::Instant::now();
    let out = lab
        .rigwatch_on(&fleet)
        .args(["status", "--json", "--timeout", "4"])
        .output()
        .expect("status");
    let took = started.elapsed().as_secs_f64();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(took <= 4.0 + 1.5, "took {took:.1}s for --timeout 4: {said}");
    assert!(
        said.contains("squeue on") && said.contains("no answer within"),
        "{said}"
    );
    let left = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", "sleep 347"])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert!(
        support::poll_until(std::time::Duration::from_secs(5), || left().is_empty()),
        "squeue still runs on the login node: pids {}",
        left()
    );
}

/// A `watch` whose login node's squeue hangs leaves nothing behind when it ends: the read
/// still running on the login node goes with the channel, not at its own timeout a period
/// later (a cron'd or restarted watch would stack one per run).
#[test]
fn a_hung_squeue_goes_with_the_watch_that_started_it() {
    let (lab, _login, fleet) = login_node("#!/bin/sh\nsleep 349\n");
    let left = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", "sleep 349"])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let watch = lab.watch(&fleet, 5, &[]);
    assert!(
        support::poll_until(std::time::Duration::from_secs(10), || !left().is_empty()),
        "the hung squeue was started"
    );
    let out = watch.wait_with_output().expect("watch");
    assert!(out.status.success(), "{out:?}");
    assert!(
        support::poll_until(std::time::Duration::from_secs(4), || left().is_empty()),
        "squeue still runs on the login node after watch ended: pids {}",
        left()
    );
}

/// A queue bigger than the read cap (9 MiB of 1 KiB records, cut on a record boundary) is an
/// error that says so, never a smaller queue: the running job past the cut is not judged ended.
#[test]
fn a_queue_cut_at_the_read_cap_is_an_error_not_a_smaller_queue() {
    // Lines of exactly 1 KiB: the cut at 8 MiB falls on a line's end.
    let (lab, _login, fleet) = login_node(
        "#!/bin/sh\nline=$(head -c 1023 /dev/zero | tr '\\0' x)\n\
         i=0; while [ $i -lt 9216 ]; do echo \"$line\"; i=$((i+1)); done\n",
    );
    let out = lab
        .rigwatch_on(&fleet)
        .args(["status", "--json", "--timeout", "20"])
        .output()
        .expect("status");
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    let text = json.to_string();
    assert!(
        text.contains("squeue's answer was cut at 8 MiB: narrow the query"),
        "{text}"
    );
}

/// A token in squeue's error output is masked before `status` shows it (text and JSON).
#[test]
fn a_token_in_squeue_s_error_is_masked() {
    let (lab, _login, fleet) = login_node(
        "#!/bin/sh\necho 'slurm_load_jobs error: auth token=sk-live0123456789abcdef0123 refused' >&2\nexit 1\n",
    );
    for args in [vec!["status", "--json"], vec!["status"]] {
        let out = lab
            .rigwatch_on(&fleet)
            .args(&args)
            .args(["--timeout", "20"])
            .output()
            .expect("status");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("slurm_load_jobs error"), "{args:?}: {said}");
        assert!(!said.contains("sk-live0123"), "{args:?}: {said}");
    }
}

/// Eight running jobs with a GPU each, a squeue that takes 3 s and an `srun` that never
/// answers: reading the GPUs in the jobs takes whatever time is left, never a whole timeout
/// of its own, so `status --timeout 10` is done within 10.5 s with the queue read and the
/// GPUs said not read.
#[test]
fn a_hung_srun_keeps_status_within_its_timeout() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    let jobs: String = (1..=8)
        .map(|i| {
            format!(
                "{i}|train-{i}|RUNNING|None|1:00:00|2:00:00|3:00:00|1|node{i}|cpu=1,gres/gpu=1|N/A|0|0|0:0|2026-12-01T05:00:00|2026-12-01T04:59:00\n"
            )
        })
        .collect();
    login.shim_cluster_squeue(&lab, &jobs);
    std::fs::write(lab.path("delay"), "3").expect("slow squeue");
    login.shim_script("srun", "#!/bin/sh\nexec sleep 348\n");
    let cluster = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\nnames = [\"train-*\"]\n",
        lab.host_entry(&login)
    );
    let fleet = lab.fleet("fleet.toml", &cluster, &[]);
    let started = std::time::Instant::now();
    let out = lab
        .rigwatch_on(&fleet)
        .args(["status", "--json", "--timeout", "10"])
        .output()
        .expect("status");
    let took = started.elapsed().as_secs_f64();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(took <= 10.5, "took {took:.1}s for --timeout 10: {said}");
    assert!(said.contains("train-8"), "the queue was read: {said}");
    assert!(said.contains("did not answer within"), "{said}");
}

/// A stand-in login node whose `squeue` is `script`, and a fleet watching its cluster `hpc`.
fn login_node(script: &str) -> (Lab, support::Sshd, std::path::PathBuf) {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    login.shim_script("squeue", script);
    let cluster = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\nnames = [\"train-*\"]\n",
        lab.host_entry(&login)
    );
    let fleet = lab.fleet("fleet.toml", &cluster, &[]);
    (lab, login, fleet)
}
