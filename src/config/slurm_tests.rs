//! `[[slurm]]`: what loads, the defaults, and each mistake named with file:line:col.

use std::path::Path;
use std::time::Duration;

use crate::config::fleet::parse;

fn err(text: &str) -> String {
    match parse(Path::new("fleet.toml"), text) {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_full_entry_and_the_defaults() {
    let text = r#"
[[slurm]]
name = "cluster"
ssh = "ana@login.example.org:2222"
identity = "/keys/id"
user = "ana"
jobs = [4242, "4243_7"]
names = ["sweep-*"]
partition = "gpu,debug"
period_secs = 60
[slurm.pull]
paths = ["/scratch/ana/run"]
dest = "/tmp/results/{host}"

[[slurm]]
name = "other"
ssh = "login2"
"#;
    let fleet = parse(Path::new("f.toml"), text).expect("valid");
    let [full, plain] = fleet.slurm.as_slice() else {
        panic!("two clusters: {:?}", fleet.slurm)
    };
    assert_eq!(full.login.target.to_string(), "ana@login.example.org:2222");
    assert_eq!(full.login.profile, "slurm");
    assert_eq!(full.user.as_deref(), Some("ana"));
    assert_eq!(full.jobs, ["4242", "4243_7"]);
    assert_eq!(full.partition.as_deref(), Some("gpu,debug"));
    assert_eq!(full.period, Duration::from_secs(60));
    let pull = full.login.pull.as_ref().expect("pull");
    assert_eq!(pull.dest, Path::new("/tmp/results/cluster"));
    assert!(full.watches("4242", "anything") && full.watches("1", "sweep-3"));
    assert!(!full.watches("1", "train"));
    assert_eq!(
        (plain.user.clone(), plain.period),
        (None, Duration::from_secs(30))
    );
    assert!(
        plain.watches("1", "any job at all"),
        "no filter watches every job"
    );
}

#[test]
fn every_mistake_points_at_its_place() {
    let cases = [
        (
            "[[slurm]]\nname = \"c\"\nssh = \"x\"\nwalltime = 3\n",
            "fleet.toml:4:1: unknown field `walltime`",
        ),
        (
            "[[slurm]]\nname = \"c\"\nssh = \"x\"\nperiod_secs = 1\n",
            "fleet.toml:4:15: slurm.period_secs = 1 is out of range: from 10 to 3600 seconds",
        ),
        (
            "[[slurm]]\nname = \"c\"\nssh = \"x\"\nuser = \"ana; rm -rf ~\"\n",
            "fleet.toml:4:8: user = \"ana; rm -rf ~\" must be a plain name",
        ),
        (
            "[[slurm]]\nname = \"c\"\nssh = \"x\"\njobs = [\"12a\"]\n",
            "fleet.toml:4:9: job id \"12a\" must be a number",
        ),
        (
            "[[host]]\nname = \"c\"\nssh = \"x\"\n[[slurm]]\nname = \"c\"\nssh = \"y\"\n",
            "fleet.toml:5:8: duplicate host name \"c\"",
        ),
        (
            "[[slurm]]\nname = \"c\"\nssh = \"x\"\n[slurm.pull]\npaths = [\"relative\"]\n",
            "fleet.toml:5:10: pull path \"relative\" must be absolute",
        ),
        (
            "[[slurm]]\nname = \"c\"\nssh = \"x\"\n[slurm.pull]\npaths = [\"/a\"]\nkeep = 1\n",
            "fleet.toml:6:1: unknown field `keep`",
        ),
    ];
    for (text, want) in cases {
        let e = err(text);
        assert!(e.starts_with(want), "{text:?}\n got: {e}\nwant: {want}");
    }
}
