//! `rigwatch check` end to end: the real binary against real sshd processes, and over folders of
//! valid and invalid configs checking the error text and exit code.

mod support;

use std::path::Path;
use std::process::Output;

use support::{Lab, keygen, rigwatch};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn line_for<'a>(stdout: &'a str, host: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(host))
        .unwrap_or_else(|| panic!("no line for {host} in:\n{stdout}"))
}

#[test]
fn up_changed_key_and_down_hosts_each_get_their_state_and_exit_1() {
    let mut lab = Lab::new();
    let good = lab.start_host("good");
    let mut rebuilt = lab.start_host("rebuilt");
    let mut dead = lab.start_host("dead");
    rebuilt.replace_host_key();
    dead.kill();
    let hosts = [
        ("good", lab.host_entry(&good)),
        ("rebuilt", lab.host_entry(&rebuilt)),
        ("dead", lab.host_entry(&dead)),
    ];
    let config = lab.fleet("fleet.toml", "", &hosts);

    let out = rigwatch()
        .arg("check")
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let good_line = line_for(&stdout, "good");
    assert!(
        good_line.contains(" up ") && good_line.contains("SSH-2.0-OpenSSH"),
        "{good_line}"
    );
    assert!(
        good_line.contains("ms") && good_line.contains("publickey (file"),
        "{good_line}"
    );
    let rebuilt_line = line_for(&stdout, "rebuilt");
    assert!(
        rebuilt_line.contains("hostkey-refused") && rebuilt_line.contains("HOST KEY CHANGED"),
        "{rebuilt_line}"
    );
    let dead_line = line_for(&stdout, "dead");
    assert!(
        dead_line.contains(" down ") && dead_line.contains("Connection refused"),
        "{dead_line}"
    );

    let out = rigwatch()
        .args(["check", "--json", "--config"])
        .arg(&config)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["all_up"], false);
    let states: Vec<(&str, &str)> = json["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap_or(""),
                h["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("good", "up"),
            ("rebuilt", "hostkey-refused"),
            ("dead", "down")
        ]
    );
    assert!(json["hosts"][0]["rtt_ms"].as_f64().is_some_and(|r| r > 0.0));
    assert!(
        json["hosts"][2]["since"]
            .as_str()
            .is_some_and(|s| s.contains('T'))
    );
}

#[test]
fn all_up_exits_0() {
    let mut lab = Lab::new();
    let a = lab.start_host("a");
    let b = lab.start_host("b");
    let config = lab.fleet(
        "fleet.toml",
        "",
        &[("a", lab.host_entry(&a)), ("b", lab.host_entry(&b))],
    );
    let out = rigwatch()
        .arg("check")
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(" up "))
            .count(),
        2
    );
}

#[test]
fn encrypted_key_is_a_clear_error_without_an_agent_and_works_through_one() {
    let mut lab = Lab::new();
    let host = lab.start_host("box");
    let locked = lab.path("locked_ed25519");
    keygen(&locked, "correct horse");
    let public = std::fs::read_to_string(lab.path("locked_ed25519.pub")).expect("pub");
    std::fs::write(host.dir.join("authorized_keys"), public).expect("authorize");
    let body = format!(
        "ssh = \"{}\"\nidentity = \"{}\"",
        host.spec(&lab.user),
        locked.display()
    );
    let config = lab.fleet("fleet.toml", "", &[("box", body)]);

    let out = rigwatch()
        .arg("check")
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let line = text(&out);
    assert!(
        line.contains("auth-refused") && line.contains("passphrase-protected"),
        "{line}"
    );
    assert!(line.contains("ssh-add"), "says what to do: {line}");

    let sock = lab.path("agent.sock");
    let agent = std::process::Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&sock)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("agent");
    let _agent = KillOnDrop(agent);
    assert!(support::wait_for_path(&sock), "agent socket");
    let askpass = lab.path("askpass.sh");
    std::fs::write(&askpass, "#!/bin/sh\necho 'correct horse'\n").expect("askpass");
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&askpass)
        .status()
        .expect("chmod");
    let added = std::process::Command::new("ssh-add")
        .arg(&locked)
        .env("SSH_AUTH_SOCK", &sock)
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("ssh-add");
    assert!(added.status.success(), "{}", text(&added));

    let out = rigwatch()
        .arg("check")
        .arg("--config")
        .arg(&config)
        .env("SSH_AUTH_SOCK", &sock)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("publickey (agent key rigwatch-lab)"),
        "{}",
        text(&out)
    );
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn invalid_configs_exit_2_with_file_line_column_and_reason() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/config/invalid");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("invalid dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let expected =
            std::fs::read_to_string(path.with_extension("expected")).expect("expected file");
        let out = rigwatch()
            .arg("check")
            .arg("--config")
            .arg(&path)
            .output()
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}: {}",
            path.display(),
            text(&out)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(expected.trim()),
            "{}:\n  expected: {}\n  got: {stderr}",
            path.display(),
            expected.trim()
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Location:"),
            "no debug dump: {stderr}"
        );
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} invalid configs found");
}

#[test]
fn valid_configs_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/config/valid");
    let full = rigwatch::config::fleet::load(&dir.join("full.toml")).expect("full.toml");
    assert_eq!(
        full.hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>(),
        ["a100-1", "lab", "v6"]
    );
    assert_eq!(full.hosts[2].target.host, "2001:db8::7");
    assert!(full.hosts[2].accept_new && !full.hosts[0].accept_new);
    assert_eq!(full.link.max_sessions, 8);
    let minimal = rigwatch::config::fleet::load(&dir.join("minimal.toml")).expect("minimal.toml");
    assert_eq!(minimal.hosts[0].profile, "generic-ssh");
    assert_eq!(minimal.poll, std::time::Duration::from_secs(2));
}

#[test]
fn config_is_found_through_the_environment_and_missing_config_says_where_it_looked() {
    let lab = Lab::new();
    let xdg = lab.path("xdg");
    let out = rigwatch()
        .arg("check")
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no fleet config found") && stderr.contains("rigwatch/fleet.toml"),
        "{stderr}"
    );

    std::fs::create_dir_all(xdg.join("rigwatch")).expect("dir");
    std::fs::write(xdg.join("rigwatch/fleet.toml"), "poll_secs = -1\n").expect("write");
    let out = rigwatch()
        .arg("check")
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .expect("run");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rigwatch/fleet.toml:1:13: poll_secs = -1"),
        "{}",
        text(&out)
    );

    let env_config = lab.path("env.toml");
    std::fs::write(&env_config, "bogus = 1\n").expect("write");
    let out = rigwatch()
        .arg("check")
        .env("RIGWATCH_CONFIG", &env_config)
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .expect("run");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("env.toml:1:1: unknown field `bogus`"),
        "{}",
        text(&out)
    );
}

/// The round trip `check` and `status` report is the link's, not the new session's warm-up:
/// on loopback it is well under 5 ms (the first ping after login took 42-48 ms).
#[test]
fn loopback_round_trips_are_measured_after_the_warm_up() {
    let mut lab = Lab::new();
    let hosts: Vec<_> = (0..3).map(|i| lab.start_host(&format!("h{i}"))).collect();
    let entries: Vec<(String, String)> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (format!("h{i}"), lab.host_entry(h)))
        .collect();
    let entries: Vec<(&str, String)> = entries
        .iter()
        .map(|(n, e)| (n.as_str(), e.clone()))
        .collect();
    let config = lab.fleet("fleet.toml", "", &entries);
    let out = rigwatch()
        .args(["check", "--json", "--config"])
        .arg(&config)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for host in json["hosts"].as_array().expect("hosts") {
        let rtt = host["rtt_ms"].as_f64().expect("rtt");
        assert!(rtt > 0.0 && rtt < 5.0, "check: {host}");
    }
    let (_, status) = support::rigwatch_json(&["status", "--json"], &config, &lab.path("state"));
    for host in status["hosts"].as_array().expect("hosts") {
        let rtt = host["link"]["rtt_ms"].as_f64().expect("rtt");
        assert!(rtt > 0.0 && rtt < 5.0, "status: {}", host["link"]);
    }
}

/// A command-line mistake is one line with clap's own words and tip, never the usage block, and
/// exits as every usage mistake does: 2, and 3 for `status` (whose 2 means "needs action now").
#[test]
fn command_line_mistakes_are_one_line_with_the_usage_exit_code() {
    let cases: [(&[&str], i32, &str); 4] = [
        (
            &["status", "--jsn"],
            3,
            "rigwatch: unexpected argument '--jsn' found; tip: a similar argument exists: \
             '--json'; see `rigwatch status --help`",
        ),
        (
            &["--config", "/nowhere.toml", "statsu"],
            2,
            "rigwatch: unrecognized subcommand 'statsu'; tip: a similar subcommand exists: \
             'status'; see `rigwatch statsu --help`",
        ),
        (
            &["teardown"],
            2,
            "rigwatch: the following required arguments were not provided: <HOST>; see \
             `rigwatch teardown --help`",
        ),
        (
            &["watch", "--for", "soon"],
            2,
            "rigwatch: invalid value 'soon' for '--for <SECS>'",
        ),
    ];
    for (args, code, said) in cases {
        let out = rigwatch().args(args).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(
            stderr.starts_with(said),
            "{args:?}:\n{stderr}\nnot:\n{said}"
        );
    }
    let help = rigwatch()
        .args(["status", "--help"])
        .output()
        .expect("help");
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--json"));
}

/// `ledger HOST` for a host neither fleet.toml nor the ledger knows is a usage mistake that
/// names the hosts there are, not "nothing yet"; a known host with nothing on record is fine.
#[test]
fn ledger_of_an_unknown_host_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/config/valid/minimal.toml");
    let ledger = |host: &str| {
        rigwatch()
            .args(["ledger", host, "--config"])
            .arg(&config)
            .env("XDG_STATE_HOME", dir.path())
            .output()
            .expect("run")
    };
    let out = ledger("nosuch");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "rigwatch: no host named \"nosuch\" in fleet.toml or the ledger; there are: "
        ),
        "{stderr}"
    );
    let minimal = rigwatch::config::fleet::load(&config).expect("minimal");
    let known = &minimal.hosts[0].name;
    assert!(stderr.contains(known.as_str()), "{stderr}");
    let out = ledger(known);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// Completion knows the fleet: the script `completions bash` prints, loaded in a real bash,
/// completes `pull gpu-` to the fleet.toml's two `gpu-` hosts (and its cluster for `teardown`),
/// from the fleet the environment names or the one `--config` names on the line being typed.
#[test]
fn completions_offer_the_fleets_host_names_for_a_partial_word() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fleet = dir.path().join("fleet.toml");
    std::fs::write(
        &fleet,
        "[[host]]\nname = \"gpu-alpha\"\nssh = \"a\"\n\n[[host]]\nname = \"gpu-beta\"\nssh = \"b\"\n\n\
         [[host]]\nname = \"cpu-box\"\nssh = \"c\"\n",
    )
    .expect("fleet");
    let out = rigwatch()
        .args(["completions", "bash"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let script = dir.path().join("rigwatch.bash");
    std::fs::write(&script, &out.stdout).expect("script");
    let complete = |words: &[&str], env_config: bool| {
        let mut bash = std::process::Command::new("bash");
        let line = words.join(" ");
        let current = words.last().copied().unwrap_or("");
        bash.arg("-c").arg(format!(
            "source {} && COMP_WORDS=({line}) && COMP_CWORD={} && COMP_TYPE=9 && \
             _clap_complete_rigwatch rigwatch {current} && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.len() - 1,
        ));
        bash.env("XDG_CONFIG_HOME", dir.path().join("none"));
        bash.env_remove("RIGWATCH_CONFIG");
        if env_config {
            bash.env("RIGWATCH_CONFIG", &fleet);
        }
        let out = bash.output().expect("bash");
        assert!(out.status.success(), "{}", text(&out));
        let mut said: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        said.sort();
        said
    };
    assert_eq!(
        complete(&["rigwatch", "pull", "gpu-"], true),
        ["gpu-alpha", "gpu-beta"]
    );
    assert_eq!(complete(&["rigwatch", "silence", "cp"], true), ["cpu-box"]);
    let named = fleet.display().to_string();
    assert_eq!(
        complete(
            &["rigwatch", "teardown", "--config", &named, "gpu-b"],
            false
        ),
        ["gpu-beta"],
        "the fleet the typed line names"
    );
    assert!(
        complete(&["rigwatch", "ledger", "gpu-"], false).is_empty(),
        "no fleet, nothing offered and nothing printed"
    );
}

/// The man page says what a person reaches for in one, and refers to no page that does not
/// exist: the commands are named, the keys are the help overlay's, the configuration's keys
/// the parser's, then files, environment, exit status and examples.
#[test]
fn the_man_page_has_keys_files_environment_exit_status_and_examples() {
    let out = rigwatch().arg("man").output().expect("man");
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    for heading in [
        ".SH COMMANDS",
        ".SH KEYS",
        ".SH FILES",
        ".SH ENVIRONMENT",
        ".SH \"EXIT STATUS\"",
        ".SH EXAMPLES",
    ] {
        assert!(page.contains(heading), "{heading} missing");
    }
    assert!(!page.contains("(1)"), "no reference to a subcommand page");
    // The configuration's keys are the parser's own list, table by table.
    assert!(page.contains(".SH CONFIGURATION"), "{page}");
    for (table, opening) in rigwatch::config::keys::TABLES {
        let keys = rigwatch::config::keys::accepted(opening).join(", ");
        let escaped = keys.replace('-', "\\-");
        assert!(page.contains(&escaped), "{table}: {keys}");
    }
    for (key, _) in rigwatch::ui::help::KEYS {
        let escaped = key.replace('-', "\\-");
        assert!(page.contains(&escaped), "key {key} missing");
    }
    for needle in [
        "ledger.sqlite",
        "RIGWATCH_CONFIG",
        "NO_COLOR",
        "rigwatch teardown hpc \\-\\-job 4242",
    ] {
        assert!(page.contains(needle), "{needle} missing");
    }
}

/// `check` covers every cluster: a Slurm login node (reached, squeue through it on a real
/// one-node Slurm, sacct without accounting said as a warning with its fix) and a Kubernetes
/// context (reached through the real kubectl, and each right rigwatch uses asked with
/// `kubectl auth can-i`: a denied delete is a warning naming what is lost; a denied list
/// fails). A login node whose squeue cannot reach a controller fails with a fix. Before,
/// `check` named neither cluster.
#[test]
fn check_reports_a_slurm_login_node_and_a_kubernetes_context_with_fixes() {
    use support::kube::FakeKube;
    use support::slurm::Slurm;
    let slurm = Slurm::start();
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    slurm.shim_clients_on(&login);
    // A second login node whose squeue has no cluster to talk to.
    let lost = lab.start_host("lost");
    lost.shim_script(
        "squeue",
        "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller' >&2\nexit 1\n",
    );
    let kube = FakeKube::start(&["running-pvc"]);
    kube.deny("delete jobs");
    let clusters = format!(
        "[[slurm]]\nname = \"hpc\"\n{}\n\n[[slurm]]\nname = \"far\"\n{}\n\n{}\n",
        lab.host_entry(&login),
        lab.host_entry(&lost),
        kube.entry("lab", "")
    );
    let config = lab.fleet("fleet.toml", &clusters, &[]);
    let run = |args: &[&str]| {
        lab.rigwatch_on(&config)
            .arg("check")
            .args(args)
            .env("HOME", kube.home())
            .env_remove("KUBECONFIG")
            .output()
            .expect("check")
    };
    let out = run(&[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "far's squeue fails: {said}");
    assert!(
        !said.contains("Some("),
        "no Rust debug text reaches a person: {said}"
    );
    assert!(said.contains("cluster hpc (slurm,"), "{said}");
    assert!(said.contains("✓ squeue: 0 watched jobs"), "{said}");
    assert!(said.contains("! sacct: no accounting"), "{said}");
    assert!(said.contains("cluster far (slurm,"), "{said}");
    assert!(
        said.contains("✗ squeue:") && said.contains("Unable to contact slurm controller"),
        "{said}"
    );
    assert!(said.contains("fix: run `squeue --me`"), "{said}");
    assert!(
        said.contains("cluster lab (kubernetes, context fake, namespace ml)"),
        "{said}"
    );
    assert!(said.contains("✓ reached: 1 watched Jobs"), "{said}");
    assert!(said.contains("✓ can list jobs: yes"), "{said}");
    assert!(
        said.contains("! can delete jobs: no: T cannot delete a Job here"),
        "{said}"
    );
    assert!(
        said.contains("fix: ask the namespace's admins for `delete jobs.batch` in ml"),
        "{said}"
    );
    let out = run(&["--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["all_up"], false, "{json}");
    let lab_check = json["clusters"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == "lab"))
        .unwrap_or_else(|| panic!("{json}"));
    let delete = lab_check["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["what"] == "can delete jobs"))
        .unwrap_or_else(|| panic!("{lab_check}"));
    assert_eq!(delete["level"], "warn", "{delete}");
    // Without list rights the namespace cannot be watched at all: a failure.
    kube.deny("list pods");
    let said = text(&run(&[]));
    assert!(said.contains("✗ can list pods: no"), "{said}");
}
