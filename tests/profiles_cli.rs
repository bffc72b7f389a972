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

/// Every shipped profile reads as plain sentences: no phrase said twice on a line ("no stop
/// state: no stop state"), and a timer the README promises shows in the profile.
#[test]
fn every_profile_reads_without_repeating_itself() {
    let xdg = tempfile::tempdir().expect("tempdir");
    let (_, list, _) = run(&["profiles"], xdg.path());
    let names: Vec<String> = list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert!(names.len() >= 12, "{list}");
    for name in &names {
        let (code, out, _) = run(&["profiles", "show", name], xdg.path());
        assert_eq!(code, Some(0), "{name}");
        for line in out.lines() {
            let words: Vec<String> = line
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect();
            let triples: Vec<String> = words.windows(3).map(|w| w.join(" ")).collect();
            for (i, t) in triples.iter().enumerate() {
                assert!(
                    !triples[i + 1..].contains(t),
                    "{name}: {t:?} twice in {line:?}"
                );
            }
        }
    }
    let (_, vast, _) = run(&["profiles", "show", "vastai"], xdg.path());
    let timers = vast
        .lines()
        .find(|l| l.starts_with("Timers:"))
        .unwrap_or("");
    assert!(timers.contains("lifetime end"), "{vast}");
    let vast_row = list.lines().find(|l| l.starts_with("vastai")).unwrap_or("");
    assert!(vast_row.contains("lifetime end"), "{vast_row}");
}
