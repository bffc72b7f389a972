//! Is the last pull of a host still the whole truth? Pure: the pull record, a fresh listing of
//! the box and a fresh look at the local copies in; "current", or every reason it is not, out.

use std::collections::{BTreeMap, HashMap};

use super::remote::Listing;
use crate::ledger::PullRecord;

/// The local copy of one pulled file as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalNow {
    /// None when the file is missing or unreadable.
    pub sha256: Option<String>,
    pub loads: Result<(), String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCurrent {
    NoPullPaths,
    NeverPulled,
    PathsChanged,
    Unmatched(String),
    Failed {
        path: String,
        why: String,
    },
    ChangedOnBox(String),
    NewOnBox(String),
    LocalMissing(String),
    LocalChanged(String),
    LocalFails {
        path: String,
        why: String,
    },
    /// Part of the pull paths that the fresh listing could not see (see `remote::Problem`).
    Unlisted {
        path: String,
        why: String,
    },
    /// The pull was taken for another instance id than the host has now.
    OtherInstance {
        pulled: Option<String>,
        now: Option<String>,
    },
}

impl std::fmt::Display for NotCurrent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoPullPaths => write!(
                f,
                "no [host.pull] paths configured: say what to bring home before destroying"
            ),
            Self::NeverPulled => write!(f, "never pulled: press p (or run `rigwatch pull`)"),
            Self::PathsChanged => {
                write!(f, "the pull paths changed since the last pull: pull again")
            }
            Self::Unmatched(p) => write!(
                f,
                "{} matched nothing on the box: fix the path or the run's output, then pull",
                clean(p)
            ),
            Self::Failed { path, why } => write!(f, "{}: {}: pull again", clean(path), clean(why)),
            Self::Unlisted { path, why } => write!(f, "{}: {}", clean(path), clean(why)),
            Self::OtherInstance { pulled, now } => write!(
                f,
                "the last pull was taken for instance {}, the host is now instance {}: pull \
                 this box before destroying it",
                pulled.as_deref().map_or("(none)".into(), clean),
                now.as_deref().map_or("(none)".into(), clean)
            ),
            Self::ChangedOnBox(p) => write!(
                f,
                "{} changed on the box after the pull (stale): pull again",
                clean(p)
            ),
            Self::NewOnBox(p) => write!(
                f,
                "{} appeared on the box after the pull: pull again",
                clean(p)
            ),
            Self::LocalMissing(p) => write!(f, "local copy {} is missing: pull again", clean(p)),
            Self::LocalChanged(p) => write!(
                f,
                "local copy {} no longer matches its hash: pull again",
                clean(p)
            ),
            Self::LocalFails { path, why } => write!(
                f,
                "local copy {} no longer loads ({}): pull again",
                clean(path),
                clean(why)
            ),
        }
    }
}

/// Every path and reason here may come from a box: one sanitizer for all of them.
fn clean(text: &str) -> String {
    crate::sanitize::line(text, 240)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Currentness {
    Current {
        pull_id: i64,
        files: usize,
        bytes: u64,
        /// What the box held at this check (every file's path, size and stamp, every covered
        /// link): the check taken after the last confirmation must see the same.
        fingerprint: u64,
    },
    NotCurrent(Vec<NotCurrent>),
}

impl Currentness {
    pub fn is_current(&self) -> bool {
        matches!(self, Currentness::Current { .. })
    }
}

pub fn judge(
    paths: &[String],
    pull: Option<&PullRecord>,
    fresh: &Listing,
    local: &BTreeMap<String, LocalNow>,
) -> Currentness {
    if paths.is_empty() {
        return Currentness::NotCurrent(vec![NotCurrent::NoPullPaths]);
    }
    let Some(pull) = pull else {
        return Currentness::NotCurrent(vec![NotCurrent::NeverPulled]);
    };
    let mut why = Vec::new();
    if pull.paths != paths {
        why.push(NotCurrent::PathsChanged);
    }
    let failed: std::collections::HashSet<&str> = pull
        .files
        .iter()
        .filter(|f| f.error.is_some())
        .map(|f| f.remote_path.as_str())
        .collect();
    for p in &fresh.problems {
        // Already said by the pull's own record of the same problem.
        if !failed.contains(p.path()) {
            why.push(NotCurrent::Unlisted {
                path: p.path().to_string(),
                why: p.why(),
            });
        }
    }
    for p in pull.unmatched.iter().chain(&fresh.unmatched) {
        let reason = NotCurrent::Unmatched(p.clone());
        if !why.contains(&reason) {
            why.push(reason);
        }
    }
    let pulled: HashMap<&str, _> = pull
        .files
        .iter()
        .map(|f| (f.remote_path.as_str(), f))
        .collect();
    for f in &pull.files {
        if let Some(error) = &f.error {
            why.push(NotCurrent::Failed {
                path: f.remote_path.clone(),
                why: error.clone(),
            });
        } else if !f.is_good() {
            why.push(NotCurrent::Failed {
                path: f.remote_path.clone(),
                why: format!("not verified: {}", f.verification),
            });
        } else {
            match local.get(&f.local_path) {
                None | Some(LocalNow { sha256: None, .. }) => {
                    why.push(NotCurrent::LocalMissing(f.local_path.clone()))
                }
                Some(now) if now.sha256 != f.local_sha256 => {
                    why.push(NotCurrent::LocalChanged(f.local_path.clone()));
                }
                Some(LocalNow { loads: Err(e), .. }) => why.push(NotCurrent::LocalFails {
                    path: f.local_path.clone(),
                    why: e.clone(),
                }),
                Some(_) => {}
            }
        }
    }
    for f in &fresh.files {
        match pulled.get(f.path.as_str()) {
            None => why.push(NotCurrent::NewOnBox(f.path.clone())),
            // A record without a stamp predates it: it cannot show a same-size, same-second
            // rewrite, so it never counts as current.
            Some(p) if p.size != f.size || p.stamp.as_deref() != Some(f.stamp.as_str()) => {
                why.push(NotCurrent::ChangedOnBox(f.path.clone()));
            }
            Some(_) => {}
        }
    }
    if why.is_empty() {
        Currentness::Current {
            pull_id: pull.id,
            files: pull.files.len(),
            bytes: pull.files.iter().map(|f| f.size).sum(),
            fingerprint: fingerprint(fresh),
        }
    } else {
        Currentness::NotCurrent(why)
    }
}

/// A hash of everything the box showed: the same listing gives the same number.
fn fingerprint(fresh: &Listing) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in &fresh.files {
        (&f.path, f.size, &f.stamp).hash(&mut h);
    }
    for l in &fresh.covered {
        (&l.path, &l.target).hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
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
}
