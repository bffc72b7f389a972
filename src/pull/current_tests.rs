use chrono::{DateTime, Utc};

use super::*;
use crate::ledger::PulledFile;
use crate::pull::remote::RemoteFile;

fn pulled(path: &str) -> PulledFile {
    PulledFile {
        stamp: Some("100.0 5.0 1".into()),
        remote_path: path.into(),
        size: 5,
        mtime: 100,
        remote_sha256: Some("h".into()),
        local_path: format!("/l{path}"),
        local_sha256: Some("h".into()),
        sent: 5,
        verified: true,
        unproven: false,
        local_stat: None,
        settled_since: None,
        verification: "json".into(),
        error: None,
        at: DateTime::<Utc>::UNIX_EPOCH,
    }
}

fn record(files: Vec<PulledFile>) -> PullRecord {
    PullRecord {
        instance_id: None,
        id: 7,
        host: "a".into(),
        started: DateTime::<Utc>::UNIX_EPOCH,
        finished: DateTime::<Utc>::UNIX_EPOCH,
        paths: vec!["/w".into()],
        unmatched: vec![],
        files,
        local_disk_full: false,
    }
}

fn on_box(paths: &[(&str, i64)]) -> Listing {
    Listing {
        files: paths
            .iter()
            .map(|(p, mtime)| RemoteFile {
                path: (*p).into(),
                size: 5,
                mtime: *mtime,
                stamp: format!("{mtime}.0 5.0 1"),
                root: 0,
                mode: 0o644,
            })
            .collect(),
        ..Listing::default()
    }
}

fn intact(paths: &[&str]) -> BTreeMap<String, LocalNow> {
    paths
        .iter()
        .map(|p| {
            (
                format!("/l{p}"),
                LocalNow {
                    sha256: Some("h".into()),
                    loads: Ok(()),
                },
            )
        })
        .collect()
}

fn reasons(c: Currentness) -> Vec<NotCurrent> {
    match c {
        Currentness::NotCurrent(r) => r,
        Currentness::Current { .. } => panic!("expected not current"),
    }
}

#[test]
fn a_clean_pull_of_an_unchanged_box_is_current() {
    let pull = record(vec![pulled("/w/a.pt"), pulled("/w/m.json")]);
    let c = judge(
        &["/w".into()],
        Some(&pull),
        &on_box(&[("/w/a.pt", 100), ("/w/m.json", 100)]),
        &intact(&["/w/a.pt", "/w/m.json"]),
    );
    assert_eq!(
        c,
        Currentness::Current {
            pull_id: 7,
            files: 2,
            bytes: 10,
            fingerprint: fingerprint(&on_box(&[("/w/a.pt", 100), ("/w/m.json", 100)])),
        }
    );
}

#[test]
fn a_newer_or_new_checkpoint_on_the_box_makes_it_stale() {
    let pull = record(vec![pulled("/w/a.pt")]);
    let r = reasons(judge(
        &["/w".into()],
        Some(&pull),
        &on_box(&[("/w/a.pt", 101), ("/w/b.pt", 100)]),
        &intact(&["/w/a.pt"]),
    ));
    assert_eq!(
        r,
        vec![
            NotCurrent::ChangedOnBox("/w/a.pt".into()),
            NotCurrent::NewOnBox("/w/b.pt".into())
        ]
    );
}

#[test]
fn local_corruption_or_a_failed_file_refuses() {
    let mut bad = pulled("/w/b.pt");
    bad.local_sha256 = Some("x".into());
    bad.error = Some("hash mismatch".into());
    let pull = record(vec![pulled("/w/a.pt"), bad]);
    let mut local = intact(&["/w/a.pt"]);
    local.insert(
        "/l/w/a.pt".into(),
        LocalNow {
            sha256: Some("other".into()),
            loads: Ok(()),
        },
    );
    let r = reasons(judge(
        &["/w".into()],
        Some(&pull),
        &on_box(&[("/w/a.pt", 100), ("/w/b.pt", 100)]),
        &local,
    ));
    assert_eq!(r.len(), 2);
    assert_eq!(r[0], NotCurrent::LocalChanged("/l/w/a.pt".into()));
    assert!(matches!(&r[1], NotCurrent::Failed { why, .. } if why == "hash mismatch"));
}

#[test]
fn no_paths_no_pull_unmatched_and_changed_paths_each_refuse() {
    let empty = Listing::default();
    let none = BTreeMap::new();
    assert_eq!(
        reasons(judge(&[], None, &empty, &none)),
        vec![NotCurrent::NoPullPaths]
    );
    assert_eq!(
        reasons(judge(&["/w".into()], None, &empty, &none)),
        vec![NotCurrent::NeverPulled]
    );
    let mut pull = record(vec![]);
    pull.unmatched = vec!["/w".into()];
    let r = reasons(judge(
        &["/w".into(), "/x".into()],
        Some(&pull),
        &empty,
        &none,
    ));
    assert_eq!(
        r,
        vec![NotCurrent::PathsChanged, NotCurrent::Unmatched("/w".into())]
    );
}

#[test]
fn unverified_and_no_longer_loading_copies_refuse() {
    let mut unverified = pulled("/w/x.bin");
    unverified.verified = false;
    unverified.verification = "no built-in check".into();
    let pull = record(vec![unverified, pulled("/w/a.pt")]);
    let mut local = intact(&["/w/a.pt"]);
    if let Some(a) = local.get_mut("/l/w/a.pt") {
        a.loads = Err("truncated".into());
    }
    let r = reasons(judge(
        &["/w".into()],
        Some(&pull),
        &on_box(&[("/w/x.bin", 100), ("/w/a.pt", 100)]),
        &local,
    ));
    assert!(matches!(&r[0], NotCurrent::Failed { why, .. } if why.starts_with("not verified")));
    assert!(matches!(&r[1], NotCurrent::LocalFails { why, .. } if why == "truncated"));
}

#[test]
fn a_rewrite_the_stamp_sees_an_unstamped_record_and_a_listing_problem_each_refuse() {
    let pull = record(vec![pulled("/w/a.pt")]);
    let mut rewritten = on_box(&[("/w/a.pt", 100)]);
    // Same size, same second: only the ctime (and so the stamp) moved.
    rewritten.files[0].stamp = "100.0 6.0 1".into();
    let r = reasons(judge(
        &["/w".into()],
        Some(&pull),
        &rewritten,
        &intact(&["/w/a.pt"]),
    ));
    assert_eq!(r, vec![NotCurrent::ChangedOnBox("/w/a.pt".into())]);

    let mut old = pulled("/w/a.pt");
    old.stamp = None;
    let r = reasons(judge(
        &["/w".into()],
        Some(&record(vec![old])),
        &on_box(&[("/w/a.pt", 100)]),
        &intact(&["/w/a.pt"]),
    ));
    assert_eq!(r, vec![NotCurrent::ChangedOnBox("/w/a.pt".into())]);

    let mut linked = on_box(&[("/w/a.pt", 100)]);
    linked.problems.push(crate::pull::remote::Problem::Link {
        path: "/w/ckpt".into(),
        target: "/data/ckpt".into(),
        why: crate::pull::remote::LinkWhy::Outside,
    });
    let r = reasons(judge(
        &["/w".into()],
        Some(&pull),
        &linked,
        &intact(&["/w/a.pt"]),
    ));
    assert!(
        matches!(&r[..], [NotCurrent::Unlisted { path, why }] if path == "/w/ckpt" && why.contains("add /data/ckpt")),
        "{r:?}"
    );
}

#[test]
fn every_reason_is_sanitized_for_the_terminal() {
    let osc = "/w/\u{1b}]52;c;cGF5bG9hZA==\u{7}x\u{202e}.pt";
    for reason in [
        NotCurrent::NewOnBox(osc.into()),
        NotCurrent::Failed {
            path: osc.into(),
            why: osc.into(),
        },
        NotCurrent::Unlisted {
            path: osc.into(),
            why: "x".into(),
        },
    ] {
        let text = reason.to_string();
        assert!(
            !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{text:?}"
        );
    }
}

/// The final check proves content: the same listing (stat unchanged) with one file's bytes
/// rehashed differently refuses, naming it; a box that could not rehash refuses; equal hashes
/// keep the verdict.
#[test]
fn content_changed_with_stat_unchanged_refuses_at_the_final_check() {
    let pull = record(vec![pulled("/w/a.json"), pulled("/w/b.json")]);
    let current = judge(
        &pull.paths,
        Some(&pull),
        &on_box(&[("/w/a.json", 100), ("/w/b.json", 100)]),
        &intact(&["/w/a.json", "/w/b.json"]),
    );
    assert!(current.is_current(), "{current:?}");
    let same: BTreeMap<String, String> = [("/w/a.json", "h"), ("/w/b.json", "h")]
        .iter()
        .map(|(p, h)| (p.to_string(), h.to_string()))
        .collect();
    assert_eq!(
        judge_content(current.clone(), Some(&pull), Ok(&same)),
        current
    );
    let mut mapped = same.clone();
    mapped.insert("/w/b.json".into(), "other".into());
    assert_eq!(
        reasons(judge_content(current.clone(), Some(&pull), Ok(&mapped))),
        vec![NotCurrent::ContentChangedOnBox("/w/b.json".into())]
    );
    mapped.remove("/w/a.json");
    assert_eq!(
        reasons(judge_content(current.clone(), Some(&pull), Ok(&mapped))).len(),
        2,
        "a file the box printed no hash for is not proven either"
    );
    let no_tool = judge_content(current, Some(&pull), Err("no sha256sum"));
    assert!(matches!(
        reasons(no_tool).as_slice(),
        [NotCurrent::NotRehashed(_)]
    ));
}

proptest::proptest! {
    /// Whichever proven file's bytes change while every stat stays the same, the final check
    /// refuses, and names exactly that file.
    #[test]
    fn any_content_change_under_an_unchanged_stat_refuses(
        n in 1usize..24,
        which in 0usize..24,
        other in "[0-9a-f]{64}",
    ) {
        let which = which % n;
        let names: Vec<String> = (0..n).map(|i| format!("/w/f{i}.json")).collect();
        let pull = record(names.iter().map(|p| pulled(p)).collect());
        let listed: Vec<(&str, i64)> = names.iter().map(|p| (p.as_str(), 100)).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let current = judge(&pull.paths, Some(&pull), &on_box(&listed), &intact(&refs));
        proptest::prop_assert!(current.is_current());
        let mut rehashed: BTreeMap<String, String> =
            names.iter().map(|p| (p.clone(), "h".to_string())).collect();
        rehashed.insert(names[which].clone(), other);
        proptest::prop_assert_eq!(
            reasons(judge_content(current, Some(&pull), Ok(&rehashed))),
            vec![NotCurrent::ContentChangedOnBox(names[which].clone())]
        );
    }
}

/// A reason that already says "pull again" is not followed by it a second time.
#[test]
fn what_to_do_is_said_once() {
    let failed = NotCurrent::Failed {
        path: "/w/a.pt".into(),
        why: "changed on the box during the pull; pull again".into(),
    };
    assert_eq!(
        failed.to_string(),
        "/w/a.pt: changed on the box during the pull: pull again"
    );
    let plain = NotCurrent::Failed {
        path: "/w/b.pt".into(),
        why: "vanished from the box during the pull".into(),
    };
    assert_eq!(
        plain.to_string(),
        "/w/b.pt: vanished from the box during the pull: pull again"
    );
}
