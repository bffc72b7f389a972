//! What init writes: a config the loader accepts, names made unique, ssh Hosts found through
//! Include, provider instances with their id and price.

use super::*;
use crate::provider::SshEndpoint;

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::<chrono::Utc>::UNIX_EPOCH + chrono::Duration::days(20_000)
}

fn draft(name: &str, ssh: Option<&str>) -> Draft {
    Draft {
        name: name.into(),
        ssh: ssh.map(String::from),
        profile: "vastai",
        instance_id: Some("21437001".into()),
        price_per_hour: Some(0.36),
        source: "vastai instance 21437001 (running)".into(),
    }
}

#[test]
fn what_init_writes_loads_and_keeps_every_field() {
    let text = render(
        &unique(vec![
            draft("train \"a\"", Some("root@ssh4.vast.ai:21001")),
            draft("train \"a\"", Some("root@192.0.2.17:21001")),
            draft("starting", None),
        ]),
        Some(Path::new("/tmp/ssh config")),
        now(),
    );
    let fleet = crate::config::fleet::parse(Path::new("fleet.toml"), &text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let names: Vec<&str> = fleet.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["train \"a\"", "train \"a\"-2"], "{text}");
    assert_eq!(fleet.hosts[0].instance_id.as_deref(), Some("21437001"));
    assert_eq!(fleet.hosts[0].billing.price_per_hour, Some(0.36));
    assert_eq!(fleet.hosts[0].profile, "vastai");
    assert_eq!(
        fleet.ssh_config.as_deref(),
        Some(Path::new("/tmp/ssh config"))
    );
    assert!(
        text.contains("# name = \"starting\""),
        "no endpoint: commented out\n{text}"
    );

    let empty = render(&[], None, now());
    let fleet = crate::config::fleet::parse(Path::new("fleet.toml"), &empty).expect("loads");
    assert!(
        fleet.hosts.is_empty() && empty.contains("# [[host]]"),
        "{empty}"
    );
}

#[test]
fn ssh_hosts_skip_patterns_and_follow_includes() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(dir.path().join("conf.d")).expect("conf.d");
    std::fs::write(
        dir.path().join("config"),
        "Include conf.d/*.conf\nHost gpu-1 gpu-2 *.internal !bad\n  User root\nhost=gpu-3\nMatch all\n",
    )
    .expect("config");
    std::fs::write(dir.path().join("conf.d/a.conf"), "Host gpu-9 gpu-1\n").expect("a");
    std::fs::write(dir.path().join("conf.d/skip.txt"), "Host nope\n").expect("skip");
    let names = ssh_hosts(&dir.path().join("config"), 0).expect("hosts");
    assert_eq!(names, ["gpu-9", "gpu-1", "gpu-2", "gpu-3"]);
}

#[test]
fn provider_instances_become_hosts_and_destroyed_ones_do_not() {
    let running = ProviderState {
        instance_id: "7".into(),
        state: InstanceState::Running,
        price_per_hour: Some(1.5),
        stopped_price_per_hour: None,
        state_since: None,
        ends_at: None,
        label: Some("\u{1b}[2Jtrain".into()),
        ssh: vec![SshEndpoint {
            host: "ssh4.vast.ai".into(),
            port: 21001,
        }],
    };
    let d = from_provider(Provider::Vastai, &running).expect("host");
    assert_eq!(d.name, "train", "the label, sanitized");
    assert_eq!(d.ssh.as_deref(), Some("root@ssh4.vast.ai:21001"));
    let gone = ProviderState {
        state: InstanceState::Destroyed,
        ..running
    };
    assert_eq!(from_provider(Provider::Vastai, &gone), None);
}
