//! A new user's first hour: mistakes answered in one line that says what and what to do (no
//! source location, backtrace or escape codes), consistent exit codes, and read-only commands
//! that write nothing.

mod support;

use std::path::Path;
use std::process::Output;

use support::rigwatch;

/// Runs rigwatch with a clean config and state home, stderr piped.
fn run_in(home: &Path, args: &[&str]) -> Output {
    rigwatch()
        .args(args)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("RIGWATCH_CONFIG")
        .env("RUST_BACKTRACE", "1")
        .env("COLORBT_SHOW_HIDDEN", "1")
        .output()
        .expect("run")
}

/// Success, or the failure with what it said.
fn succeeded(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A refusal: exit 2 and one line holding every one of `says`.
fn refused(out: &Output, says: &[&str]) {
    refused_with(out, 2, says);
}

/// `status` says a config or usage mistake with 3: its 2 means "needs action now".
fn refused_with(out: &Output, code: i32, says: &[&str]) {
    let line = one_line(out);
    assert!(
        says.iter().all(|s| line.contains(s)),
        "{says:?} not in {line}"
    );
    assert_eq!(out.status.code(), Some(code), "{line}");
}

/// The message a person reads: one line, `rigwatch: ` first, nothing for a developer.
fn one_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.stderr.contains(&0x1b),
        "an escape byte on a pipe: {err:?}"
    );
    for dev in ["Location:", "BACKTRACE", "src/", ".rs:", "panicked"] {
        assert!(!err.contains(dev), "{dev:?} in {err:?}");
    }
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(err.starts_with("rigwatch: "), "{err:?}");
    err.trim_end().to_string()
}

fn fleet(home: &Path, extra: &str) -> std::path::PathBuf {
    let path = home.join("fleet.toml");
    std::fs::write(
        &path,
        format!("{extra}[[host]]\nname = \"a\"\nssh = \"root@127.0.0.1:1\"\n"),
    )
    .expect("fleet");
    path
}

#[test]
fn mistakes_get_one_line_that_says_what_to_do_and_exit_2() {
    let home = tempfile::tempdir().expect("home");
    let config = fleet(home.path(), "");
    let config = config.to_str().expect("utf-8");

    for args in [
        vec!["--config", config, "pull", "nosuch"],
        vec!["--config", config, "teardown", "nosuch"],
    ] {
        let out = run_in(home.path(), &args);
        refused(&out, &["no host named \"nosuch\"", "there are: a"]);
    }

    for (args, code) in [
        (vec!["--theme", "bogus", "demo"], 2),
        (vec!["--theme", "bogus", "--config", config, "status"], 3),
        (vec!["--theme", "bogus", "--config", config, "check"], 2),
    ] {
        // Refused, never ignored, whatever the command.
        let out = run_in(home.path(), &args);
        refused_with(&out, code, &["no theme named \"bogus\""]);
    }

    let bad_theme = fleet(home.path(), "theme = \"bogus\"\n");
    let out = run_in(
        home.path(),
        &["--config", bad_theme.to_str().expect("utf-8"), "status"],
    );
    refused_with(&out, 3, &["fleet.toml:1:9", "no theme named \"bogus\""]);

    // No config points to the demo and to init.
    let out = run_in(home.path(), &["status"]);
    refused_with(&out, 3, &["rigwatch demo", "rigwatch init"]);
    let out = run_in(home.path(), &["check"]);
    refused(&out, &["rigwatch demo", "rigwatch init"]);
}

#[test]
fn read_only_commands_write_nothing() {
    let home = tempfile::tempdir().expect("home");
    let out = run_in(home.path(), &["ledger"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no ledger yet"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run_in(home.path(), &["ledger", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["pulls"], serde_json::json!([]));
    let out = run_in(home.path(), &["profiles"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !home.path().join("state").exists() && !home.path().join("config").exists(),
        "read-only commands created files"
    );
}

/// A renter with boxes in ~/.ssh/config has a working fleet in one command: init writes the
/// matching Hosts, `rigwatch check` finds the file on its own and reaches every box; a second
/// init refuses to overwrite.
#[test]
fn init_from_an_ssh_config_writes_a_fleet_that_check_accepts() {
    let mut lab = support::Lab::new();
    let a = lab.start_host("a");
    let b = lab.start_host("b");
    let home = tempfile::tempdir().expect("home");
    let ssh_config = home.path().join("ssh_config");
    let entry = |name: &str, port: u16| {
        format!(
            "Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  User {}\n  IdentityFile {}\n  \
             UserKnownHostsFile {}\n",
            lab.user,
            lab.client_key.display(),
            lab.known_hosts.display()
        )
    };
    std::fs::write(
        &ssh_config,
        format!(
            "{}{}Host build-box\n  HostName 192.0.2.1\nHost *\n  ServerAliveInterval 30\n",
            entry("gpu-1", a.port),
            entry("gpu-2", b.port)
        ),
    )
    .expect("ssh config");
    let config = ssh_config.to_str().expect("utf-8");
    let out = run_in(
        home.path(),
        &["init", "--from-ssh-config", "gpu-*", "--ssh-config", config],
    );
    succeeded(&out);
    let written = home.path().join("config/rigwatch/fleet.toml");
    let text = std::fs::read_to_string(&written).expect("fleet.toml written");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        text,
        "shows what it wrote"
    );
    assert!(
        text.contains("name = \"gpu-1\"") && text.contains("name = \"gpu-2\""),
        "{text}"
    );
    assert!(
        !text.contains("build-box"),
        "only the glob's hosts:\n{text}"
    );

    let out = run_in(home.path(), &["check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    succeeded(&out);
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" up ")).count(),
        2,
        "{stdout}"
    );

    let out = run_in(home.path(), &["init"]);
    refused(&out, &["already exists", "--print"]);
    assert_eq!(
        std::fs::read_to_string(&written).expect("kept"),
        text,
        "untouched"
    );
}

/// From the vast.ai and RunPod CLIs (the recording shims): each live instance becomes a host
/// with its instance id, price and profile; a pod that lists no SSH endpoint is written
/// commented out, with what to fill in.
#[test]
fn init_from_the_provider_clis_writes_ids_and_prices() {
    let home = tempfile::tempdir().expect("home");
    let shims = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers");
    let log = home.path().join("shim.log");
    let out = rigwatch()
        .args(["init", "--from-vastai", "--from-runpod"])
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("RIGWATCH_SHIM_LOG", &log)
        .env(
            "PATH",
            format!(
                "{}:{}",
                shims.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .expect("run");
    succeeded(&out);
    let text =
        std::fs::read_to_string(home.path().join("config/rigwatch/fleet.toml")).expect("written");
    let fleet = rigwatch::config::fleet::parse(Path::new("fleet.toml"), &text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let train = fleet
        .hosts
        .iter()
        .find(|h| h.instance_id.as_deref() == Some("21437001"))
        .unwrap_or_else(|| panic!("vast instance missing:\n{text}"));
    assert_eq!(train.profile, "vastai");
    assert!(
        train.billing.price_per_hour.is_some_and(|p| p > 0.35),
        "{text}"
    );
    assert!(text.contains("instance_id = \"x7k2m9q4wv1abc\""), "{text}");
    assert!(text.contains("# no SSH endpoint"), "{text}");
    let calls = std::fs::read_to_string(&log).expect("shim log");
    assert!(
        calls
            .lines()
            .all(|l| l.contains(" show instances") || l.contains(" pod list")),
        "read-only calls only: {calls}"
    );
}

/// Completions and the man page come from the clap definitions: bash loads the script and
/// knows every subcommand; the man page is roff naming them.
#[test]
fn completions_load_in_bash_and_the_man_page_names_every_command() {
    let home = tempfile::tempdir().expect("home");
    let out = run_in(home.path(), &["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0));
    let script = home.path().join("rigwatch.bash");
    std::fs::write(&script, &out.stdout).expect("script");
    let loaded = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {} && complete -p rigwatch && COMP_WORDS=(rigwatch te) && COMP_CWORD=1 && \
             _clap_complete_rigwatch rigwatch te rigwatch && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .expect("bash");
    let said = String::from_utf8_lossy(&loaded.stdout);
    assert!(
        loaded.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    assert!(said.lines().any(|l| l == "teardown"), "{said}");
    for shell in ["zsh", "fish"] {
        let out = run_in(home.path(), &["completions", shell]);
        assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("rigwatch"));
    }
    let out = run_in(home.path(), &["man"]);
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "{page}");
    for command in ["check", "status", "init", "pull", "teardown", "completions"] {
        assert!(
            page.contains(command),
            "{command} missing from the man page"
        );
    }
}

/// RIGWATCH_LOG=debug writes a log for a bug report to the state dir and nothing to the screen;
/// without it no log file is made.
#[test]
fn a_debug_log_goes_to_the_state_dir_never_the_screen() {
    let mut lab = support::Lab::new();
    let a = lab.start_host("a");
    let config = lab.fleet("fleet.toml", "", &[("box-a", lab.host_entry(&a))]);
    let home = tempfile::tempdir().expect("home");
    let out = rigwatch()
        .args(["check", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", home.path())
        .env("RIGWATCH_LOG", "debug")
        .output()
        .expect("run");
    succeeded(&out);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(home.path().join("rigwatch/rigwatch.log")).expect("log");
    assert!(
        log.contains("box-a") && log.contains("link connecting -> up"),
        "{log}"
    );
    assert!(!log.contains('\u{1b}'), "no colour codes in the file");

    let quiet = tempfile::tempdir().expect("home");
    let out = rigwatch()
        .args(["check", "--config"])
        .arg(&config)
        .env("XDG_STATE_HOME", quiet.path())
        .env_remove("RIGWATCH_LOG")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(!quiet.path().join("rigwatch/rigwatch.log").exists());
}

/// The first hour as the README's five steps walk it, in a real terminal: the demo and its `?`,
/// `init` from an ssh config, `check`, the dashboard on the new fleet, a teardown refused with
/// its reason (nothing pulled yet), then a pull that ends hashed and verified.
#[test]
fn a_newcomers_first_hour_in_a_real_terminal() {
    use std::time::Duration;
    use support::tmux::Tmux;
    let limit = Duration::from_secs(30);
    let home = tempfile::tempdir().expect("home");
    let env = format!(
        "env -u SSH_AUTH_SOCK -u RIGWATCH_CONFIG XDG_CONFIG_HOME={} XDG_STATE_HOME={}",
        home.path().join("config").display(),
        home.path().join("state").display()
    );
    let bin = env!("CARGO_BIN_EXE_rigwatch");

    // 1. The demo, and its keys.
    let demo = Tmux::start("first-demo", &format!("{env} {bin} demo; sleep 60"));
    demo.wait_for("the demo", limit, |s| s.contains("DEMO"));
    demo.keys(&["?"]);
    demo.wait_for("the keys", limit, |s| s.contains("Esc or ? closes this"));
    demo.escape_closing("Esc or ? closes this");
    demo.keys(&["q"]);

    // 2. init from the ssh config the user already has.
    let mut lab = support::Lab::new();
    let sshd = lab.start_host("gpu");
    let run = sshd.dir.join("workspace/run");
    support::results::write_small(&run, 3);
    let ssh_config = home.path().join("ssh_config");
    std::fs::write(
        &ssh_config,
        format!(
            "Host gpu-1\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n  \
             UserKnownHostsFile {}\n",
            sshd.port,
            lab.user,
            lab.client_key.display(),
            lab.known_hosts.display()
        ),
    )
    .expect("ssh config");
    let config = ssh_config.to_str().expect("utf-8");
    succeeded(&run_in(
        home.path(),
        &["init", "--from-ssh-config", "gpu-*", "--ssh-config", config],
    ));
    // What to bring home: the one thing init cannot know.
    let fleet = home.path().join("config/rigwatch/fleet.toml");
    let mut text = std::fs::read_to_string(&fleet).expect("written");
    text.push_str(&format!(
        "[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n",
        run.join("final_ckpts").display(),
        home.path().join("results/{host}").display()
    ));
    std::fs::write(&fleet, text).expect("pull paths");

    // 3. check.
    let out = run_in(home.path(), &["check"]);
    succeeded(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(" up "),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // 4. The dashboard: the teardown refused, and why; then the pull.
    let dash = Tmux::start(
        "first-dash",
        &format!("{env} {bin}; echo EXITED-$?; sleep 60"),
    );
    dash.wait_for("the box up", limit, |s| {
        s.lines().any(|l| l.contains("gpu-1") && l.contains("✓ up"))
    });
    dash.keys(&["T"]);
    dash.wait_for("the refusal and its reason", limit, |s| {
        s.contains("REFUSED — not until") && s.contains("never pulled")
    });
    dash.escape_closing("REFUSED — not until");
    dash.keys(&["p"]);
    dash.wait_for("the pull's end", limit, |s| {
        s.contains("pull #1 of gpu-1: 3/3 files hashed and verified")
    });
    dash.keys(&["q"]);
    dash.wait_for("a clean exit", limit, |s| s.contains("EXITED-0"));
}
