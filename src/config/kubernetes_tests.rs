//! `[[kubernetes]]`: what loads, the defaults, and each mistake named with file:line:col.

use std::path::Path;
use std::time::Duration;

use crate::config::fleet::parse;

fn err(text: &str) -> String {
    match parse(Path::new("fleet.toml"), text) {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(e) => e.to_string(),
    }
}

const PLAIN: &str = "name = \"k\"\ncontext = \"lab\"\nnamespace = \"ml\"\nselector = \"team=a\"\n";

#[test]
fn a_full_entry_and_the_defaults() {
    let text = r#"
[[kubernetes]]
name = "gke"
context = "gke_proj_europe-west4_train"
kubeconfig = "/etc/kube/config"
namespace = "research"
selector = "app=train,team in (a,b)"
period_secs = 60
checkpoints = "/ckpt"
nvidia_smi = true

[[kubernetes]]
name = "lab"
context = "lab"
namespace = "default"
selector = "rigwatch=yes"
"#;
    let fleet = parse(Path::new("f.toml"), text).expect("valid");
    let [full, plain] = fleet.kubernetes.as_slice() else {
        panic!("two clusters: {:?}", fleet.kubernetes)
    };
    assert_eq!(full.name, "gke");
    assert_eq!(full.context, "gke_proj_europe-west4_train");
    assert_eq!(
        full.kubeconfig.as_deref(),
        Some(Path::new("/etc/kube/config"))
    );
    assert_eq!(full.namespace, "research");
    assert_eq!(full.selector, "app=train,team in (a,b)");
    assert_eq!(full.period, Duration::from_secs(60));
    assert_eq!(full.checkpoints.as_deref(), Some("/ckpt"));
    assert!(full.nvidia_smi && !plain.nvidia_smi);
    assert_eq!(
        (
            plain.kubeconfig.clone(),
            plain.period,
            plain.checkpoints.clone()
        ),
        (None, Duration::from_secs(30), None)
    );
}

#[test]
fn every_mistake_points_at_its_place() {
    let cases = [
        (
            format!("[[kubernetes]]\n{PLAIN}walltime = 3\n"),
            "fleet.toml:6:1: unknown field `walltime`".to_string(),
        ),
        (
            format!("[[kubernetes]]\n{PLAIN}period_secs = 1\n"),
            "fleet.toml:6:15: kubernetes.period_secs = 1 is out of range: from 10 to 3600 seconds"
                .into(),
        ),
        (
            "[[kubernetes]]\nname = \"k\"\ncontext = \"\"\nnamespace = \"ml\"\nselector = \"a=b\"\n"
                .into(),
            "fleet.toml:3:11: context = \"\" must be non-empty printable text".into(),
        ),
        (
            "[[kubernetes]]\nname = \"k\"\ncontext = \"c\"\nnamespace = \"ml\"\nselector = \"a=b\\n\"\n"
                .into(),
            "fleet.toml:5:12: selector = \"a=b\\n\" must be non-empty printable text".into(),
        ),
        (
            "[[kubernetes]]\nname = \"k\"\ncontext = \"c\"\nnamespace = \"ML x\"\nselector = \"a\"\n"
                .into(),
            "fleet.toml:4:13: namespace = \"ML x\" must be a Kubernetes name".into(),
        ),
        (
            format!("[[kubernetes]]\n{PLAIN}checkpoints = \"ckpt\"\n"),
            "fleet.toml:6:15: checkpoints = \"ckpt\" must be an absolute path".into(),
        ),
        (
            format!("[[kubernetes]]\n{PLAIN}checkpoints = \"/ckpt/../x\"\n"),
            "fleet.toml:6:15: checkpoints = \"/ckpt/../x\" must be an absolute path in the \
             container, without '.' or '..'"
                .into(),
        ),
        (
            "[[kubernetes]]\nname = \"k\"\ncontext = \"c\"\nnamespace = \"ml\"\n".into(),
            "fleet.toml:1:1: missing field `selector`".into(),
        ),
        (
            format!("[[host]]\nname = \"k\"\nssh = \"x\"\n[[kubernetes]]\n{PLAIN}"),
            "fleet.toml:5:8: duplicate name \"k\"; each [[host]], [[slurm]] and [[kubernetes]]"
                .into(),
        ),
        (
            format!("[[slurm]]\nname = \"k\"\nssh = \"x\"\n[[kubernetes]]\n{PLAIN}"),
            "fleet.toml:5:8: duplicate name \"k\"".into(),
        ),
        (
            format!("[[kubernetes]]\n{PLAIN}[[kubernetes]]\n{PLAIN}"),
            "fleet.toml:7:8: duplicate name \"k\"".into(),
        ),
        (
            format!("[[kubernetes]]\n{PLAIN}[kubernetes.pull]\npaths = [\"/a\"]\nspeed = 1\n"),
            "fleet.toml:8:1: unknown field `speed`".into(),
        ),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.starts_with(&want), "{text:?}\n got: {e}\nwant: {want}");
    }
}

#[test]
fn a_pull_table_has_the_keys_of_a_hosts() {
    let text = format!(
        "[[kubernetes]]\n{PLAIN}[kubernetes.pull]\npaths = [\"/out/*.pt\"]\ndest = \"/tmp/k-res\"\n"
    );
    let fleet = parse(Path::new("f.toml"), &text).expect("valid");
    let pull = fleet.kubernetes[0].pull.as_ref().expect("a pull");
    assert_eq!(pull.paths, ["/out/*.pt"]);
    assert_eq!(pull.dest, Path::new("/tmp/k-res"));
}
