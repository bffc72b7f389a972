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
        let line = one_line(&out);
        assert!(
            line.contains("no host named \"nosuch\"") && line.contains("there are: a"),
            "{line}"
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }

    for args in [
        vec!["--theme", "bogus", "demo"],
        vec!["--theme", "bogus", "--config", config, "status"],
        vec!["--theme", "bogus", "--config", config, "check"],
    ] {
        let out = run_in(home.path(), &args);
        let line = one_line(&out);
        assert!(
            line.contains("no theme named \"bogus\""),
            "{args:?}: {line}"
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?} must refuse, not ignore"
        );
    }

    let bad_theme = fleet(home.path(), "theme = \"bogus\"\n");
    let out = run_in(
        home.path(),
        &["--config", bad_theme.to_str().expect("utf-8"), "status"],
    );
    let line = one_line(&out);
    assert!(
        line.contains("fleet.toml:1:9") && line.contains("no theme named \"bogus\""),
        "{line}"
    );
    assert_eq!(out.status.code(), Some(2));

    let out = run_in(home.path(), &["status"]);
    let line = one_line(&out);
    assert!(
        line.contains("rigwatch demo") && line.contains("rigwatch init"),
        "no config points to the demo and to init: {line}"
    );
    assert_eq!(out.status.code(), Some(2));
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
