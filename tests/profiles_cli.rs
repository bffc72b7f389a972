//! `rigwatch profiles`: the shipped platform facts, a user's override, and bad files.

mod support;

use support::rigwatch;

fn run(args: &[&str], xdg: &std::path::Path) -> (Option<i32>, String, String) {
    let out = rigwatch()
        .args(args)
        .env("XDG_CONFIG_HOME", xdg)
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn profiles_list_show_override_and_errors() {
    let xdg = tempfile::tempdir().expect("tempdir");
    let (code, out, _) = run(&["profiles"], xdg.path());
    assert_eq!(code, Some(0));
    for name in [
        "generic-ssh",
        "runpod",
        "vastai",
        "lambda",
        "paperspace",
        "autodl",
        "china",
        "slurm",
        "kubernetes",
        "colab",
        "kaggle",
        "local",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{out}"
        );
    }
    assert!(out.contains("released 15 days after stop"), "{out}");

    let (code, out, _) = run(&["profiles", "show", "vastai"], xdg.path());
    assert_eq!(code, Some(0));
    assert!(
        out.contains("Destroy (") && out.contains("While stopped it still bills"),
        "{out}"
    );

    let (code, _, err) = run(&["profiles", "show", "nope"], xdg.path());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("no profile named \"nope\"") && err.contains("runpod"),
        "{err}"
    );

    let dir = xdg.path().join("rigwatch/profiles");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("autodl.toml"),
        "[timers]\nauto_release_days_after_stop = 7\n",
    )
    .expect("write");
    let (_, out, _) = run(&["profiles"], xdg.path());
    assert!(
        out.contains("released 7 days after stop"),
        "the user's value wins:\n{out}"
    );

    std::fs::write(dir.join("autodl.toml"), "[timers]\nauto_release = 7\n").expect("write");
    let (code, _, err) = run(&["profiles"], xdg.path());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("autodl.toml:2:1:") && err.contains("auto_release"),
        "{err}"
    );
}
