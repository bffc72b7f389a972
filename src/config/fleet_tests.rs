//! fleet.toml: what loads, and every mistake named with its file, line and column.

use super::*;

fn err(text: &str) -> String {
    match parse(Path::new("fleet.toml"), text) {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn full_example_parses() {
    let text = r#"
known_hosts = "~/.ssh/known_hosts"
poll_secs = 2
[[host]]
name = "a100-1"
ssh = "root@203.0.113.5:2222"
identity = "~/.ssh/id_ed25519"
profile = "runpod"
[[host]]
name = "lab"
ssh = "lab-alias"
"#;
    let fleet = parse(Path::new("f.toml"), text).expect("valid");
    assert_eq!(fleet.hosts.len(), 2);
    let a = &fleet.hosts[0];
    assert_eq!(
        a.target,
        SshTarget {
            user: Some("root".into()),
            host: "203.0.113.5".into(),
            port: Some(2222)
        }
    );
    assert_eq!(a.profile, "runpod");
    assert!(a.identity.as_ref().is_some_and(|p| !p.starts_with("~")));
    assert_eq!(
        fleet.hosts[1].target,
        SshTarget {
            user: None,
            host: "lab-alias".into(),
            port: None
        }
    );
    assert_eq!(fleet.hosts[1].profile, "generic-ssh");
    assert_eq!(fleet.poll, Duration::from_secs(2));
}

#[test]
fn unknown_key_names_key_and_line() {
    let e = err("poll_secs = 2\n[[host]]\nname = \"a\"\nssh = \"a\"\nport = 22\n");
    assert!(e.starts_with("fleet.toml:5:1: unknown field `port`"), "{e}");
}

#[test]
fn run_is_a_session_name_and_a_pattern_goes_in_run_process() {
    let host = |line: &str| format!("[[host]]\nname = \"a\"\nssh = \"x\"\n{line}\n");
    let e = err(&host("run = \"python train.py\""));
    assert!(
        e.starts_with("fleet.toml:4:7: run = \"python train.py\""),
        "{e}"
    );
    assert!(e.contains("run_process = \"python train.py\""), "{e}");
    assert!(err(&host("run = \"exp.1\"")).contains("not a tmux session name"));
    let fleet = parse(
        Path::new("fleet.toml"),
        &host("run = \"train\"\nrun_process = \"python train.py\""),
    )
    .expect("parses");
    assert_eq!(fleet.hosts[0].run.as_deref(), Some("train"));
    assert_eq!(
        fleet.hosts[0].run_process.as_deref(),
        Some("python train.py")
    );
}

#[test]
fn two_hosts_pulling_into_one_folder_are_refused() {
    let host = |n: &str, dest: &str| {
        format!(
            "[[host]]\nname = \"{n}\"\nssh = \"x\"\n[host.pull]\npaths = [\"/w\"]\ndest = \"{dest}\"\n"
        )
    };
    let e = err(&format!("{}{}", host("a", "/r/same"), host("b", "/r/same")));
    assert!(e.contains("overlaps a's /r/same"), "{e}");
    assert!(e.starts_with("fleet.toml:10:"), "{e}");
    let e = err(&format!("{}{}", host("a", "/r"), host("b", "/r/b")));
    assert!(e.contains("overlaps"), "{e}");
    let ok = format!("{}{}", host("a", "/r/{host}"), host("b", "/r/{host}"));
    assert!(parse(Path::new("fleet.toml"), &ok).is_ok());
}

/// The same folder spelled two ways is one folder: by `..` (even through a folder that does
/// not exist yet) and through a link, whichever host names it which way.
#[test]
fn two_names_for_one_dest_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("results/a");
    std::fs::create_dir_all(&real).expect("mkdir");
    let link = dir.path().join("link-to-a");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let host = |n: &str, dest: &Path| {
        format!(
            "[[host]]\nname = \"{n}\"\nssh = \"x\"\n[host.pull]\npaths = [\"/w\"]\ndest = \"{}\"\n",
            dest.display()
        )
    };
    let aliases = [
        dir.path().join("results/b/../a"),
        dir.path().join("results/missing/../a/sub"),
        link.clone(),
        link.join("deeper"),
    ];
    for alias in aliases {
        let e = err(&format!("{}{}", host("a", &real), host("b", &alias)));
        assert!(e.contains("overlaps a's"), "{alias:?}: {e}");
        let e = err(&format!("{}{}", host("a", &alias), host("b", &real)));
        assert!(e.contains("overlaps a's"), "{alias:?} first: {e}");
    }
    let apart = format!(
        "{}{}",
        host("a", &real),
        host("b", &dir.path().join("results/b"))
    );
    assert!(parse(Path::new("fleet.toml"), &apart).is_ok());
}

#[test]
fn duplicate_names_point_at_the_second() {
    let e = err("[[host]]\nname = \"a\"\nssh = \"x\"\n[[host]]\nname = \"a\"\nssh = \"y\"\n");
    assert!(
        e.starts_with("fleet.toml:5:8: duplicate host name \"a\""),
        "{e}"
    );
}

#[test]
fn bad_port_points_at_the_value() {
    let e = err("[[host]]\nname = \"a\"\nssh = \"root@h:99999\"\n");
    assert!(e.starts_with("fleet.toml:3:7: ssh target"), "{e}");
    assert!(e.contains("port \"99999\""), "{e}");
}

#[test]
fn syntax_error_has_position() {
    let e = err("poll_secs = \n");
    assert!(e.starts_with("fleet.toml:1:"), "{e}");
}

#[test]
fn wrong_type_names_the_field() {
    let e = err("poll_secs = \"fast\"\n");
    assert!(e.starts_with("fleet.toml:1:13:"), "{e}");
}

#[test]
fn zero_poll_is_refused() {
    let e = err("poll_secs = 0\n");
    assert!(e.contains("poll_secs = 0 is out of range"), "{e}");
}

#[test]
fn verify_commands_by_pattern_or_for_every_file() {
    let host = "[[host]]\nname = \"a\"\nssh = \"a\"\n[host.pull]\npaths = [\"/r\"]\n";
    let table = format!(
        "{host}[host.pull.verify]\n\"*.bin\" = \"python -c 'import torch,sys; torch.load(sys.argv[1])' {{file}}\"\n\"*.npy\" = \"check {{file}}\"\n"
    );
    let fleet = parse(Path::new("fleet.toml"), &table).expect("loads");
    let verify = &fleet.hosts[0].pull.as_ref().expect("pull").verify;
    assert_eq!(verify.for_file("pytorch_model.bin").len(), 1);
    assert_eq!(verify.for_file("metrics.json"), Vec::<&str>::new());
    let old = format!("{host}verify = \"test -s {{file}}\"\n");
    let fleet = parse(Path::new("fleet.toml"), &old).expect("loads");
    let verify = &fleet.hosts[0].pull.as_ref().expect("pull").verify;
    assert_eq!(verify.for_file("anything.log"), vec!["test -s {file}"]);
    let note = verify.deprecation("gpu1").expect("the old form is noted");
    assert!(
        note.contains("deprecated") && note.contains("\"*.bin\" = \"test -s {file}\""),
        "{note}"
    );
    let missing = format!("{host}[host.pull.verify]\n\"*.bin\" = \"torchcheck\"\n");
    let e = parse(Path::new("fleet.toml"), &missing)
        .expect_err("no {file}")
        .to_string();
    assert!(
        e.contains("*.bin: a verify command must name the pulled file as {file}"),
        "{e}"
    );
}

/// A box that is this machine pulling into a folder under its own pull path would nest a copy
/// of the last pull at every pull: refused at load, naming both. On another machine the same
/// paths are unrelated folders.
#[test]
fn a_dest_inside_its_own_pull_path_on_this_machine_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let host = |ssh: &str, dest: &Path| {
        format!(
            "[[host]]\nname = \"a\"\nssh = \"{ssh}\"\n[host.pull]\npaths = [\"{}\"]\n\
             dest = \"{}\"\n",
            run.display(),
            dest.display()
        )
    };
    for ssh in ["127.0.0.1:2222", "u@localhost", "[::1]:22"] {
        let e = err(&host(ssh, &run.join("results")));
        assert!(e.contains("is inside pull path"), "{ssh}: {e}");
    }
    let e = err(&host("127.0.0.1", &dir.path().join("x/../run/deeper")));
    assert!(e.contains("is inside pull path"), "{e}");
    let beside = host("127.0.0.1", &dir.path().join("results"));
    assert!(parse(Path::new("fleet.toml"), &beside).is_ok());
    let remote = host("gpu.example.com", &run.join("results"));
    assert!(parse(Path::new("fleet.toml"), &remote).is_ok());
}

/// Numbers that would switch safety off or burn a core are refused at load, with where and the
/// range: `keepalive_max = 0` (never give up on a frozen box), `repeat_hours = 0` (re-send every
/// poll), a poll or reconnect wait of a nanosecond, and a poll of months is said as out of
/// range, not "must be positive".
#[test]
fn every_number_has_a_range_checked_at_load() {
    for (text, key, range) in [
        ("keepalive_max = 0\n", "keepalive_max = 0", "from 1 to 100"),
        (
            "poll_secs = 1e-9\n",
            "poll_secs = 0.000000001",
            "from 0.5 to 3600",
        ),
        (
            "poll_secs = 1e7\n",
            "poll_secs = 10000000",
            "from 0.5 to 3600",
        ),
        (
            "reconnect_max_secs = 0.000001\n",
            "reconnect_max_secs = 0.000001",
            "from 1 to",
        ),
        (
            "[alerts]\nrepeat_hours = 0\n",
            "alerts.repeat_hours = 0",
            "from 0.1 to 720",
        ),
        (
            "[providers]\npoll_secs = 0.01\n",
            "providers.poll_secs = 0.01",
            "from 5 to",
        ),
    ] {
        let e = err(text);
        assert!(e.starts_with("fleet.toml:"), "{e}");
        assert!(e.contains(key) && e.contains(range), "{text:?}: {e}");
    }
}

/// What a host's probe carries to the box is bounded whatever the config says. 2 000 mounts load
/// (they go on the probe's stdin); mounts past what df takes as its arguments, a 10 MB log path
/// (longer than any path a box has) and a newline in a path (one line of the probe's stdin is
/// one value) are refused at load, naming the host and the bound.
#[test]
fn a_probe_too_big_for_the_box_is_refused_at_load() {
    let host = |extra: &str| format!("[[host]]\nname = \"a\"\nssh = \"x\"\n{extra}\n");
    let mounts = |n: usize| {
        let each: Vec<String> = (0..n).map(|i| format!("\"/mnt/data{i:06}\"")).collect();
        host(&format!("mounts = [{}]", each.join(", ")))
    };
    assert!(parse(Path::new("fleet.toml"), &mounts(2000)).is_ok());
    let e = err(&mounts(100_000));
    assert!(e.contains("host \"a\": mounts lists 100000 paths"), "{e}");
    let e = err(&host(&format!("log = \"/{}\"", "x".repeat(10 << 20))));
    assert!(
        e.contains("log is 10485761 bytes long"),
        "{}",
        &e[..e.len().min(300)]
    );
    let e = err(&host("ckpt_dir = \"/w/a\\nb\""));
    assert!(e.contains("ckpt_dir") && e.contains("newline"), "{e}");
}

/// Pull paths go into the listing's one command (a stanza each): more than fits under the bound
/// a box's shell takes is refused at load, naming the host, not a listing the box cannot start.
#[test]
fn too_many_pull_paths_for_one_listing_are_refused_at_load() {
    let paths = |n: usize| {
        let each: Vec<String> = (0..n).map(|i| format!("\"/w/run{i:04}\"")).collect();
        format!(
            "[[host]]\nname = \"a\"\nssh = \"x\"\n[host.pull]\npaths = [{}]\ndest = \"/tmp/rw-dest\"\n",
            each.join(", ")
        )
    };
    assert!(parse(Path::new("fleet.toml"), &paths(20)).is_ok());
    let e = err(&paths(2000));
    assert!(e.contains("host \"a\"") && e.contains("pull paths"), "{e}");
}

#[test]
fn a_slurm_cluster_loads() {
    let text = r#"
[[slurm]]
name = "cluster"
ssh = "ana@login.example.org"
"#;
    let fleet = parse(Path::new("f.toml"), text).expect("a [[slurm]] entry loads");
    assert!(fleet.hosts.is_empty(), "a cluster is not a box");
}
