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
    Failed { path: String, why: String },
    ChangedOnBox(String),
    NewOnBox(String),
    LocalMissing(String),
    LocalChanged(String),
    LocalFails { path: String, why: String },
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
                "{p} matched nothing on the box: fix the path or the run's output, then pull"
            ),
            Self::Failed { path, why } => write!(f, "{path}: {why}: pull again"),
            Self::ChangedOnBox(p) => {
                write!(
                    f,
                    "{p} changed on the box after the pull (stale): pull again"
                )
            }
            Self::NewOnBox(p) => write!(f, "{p} appeared on the box after the pull: pull again"),
            Self::LocalMissing(p) => write!(f, "local copy {p} is missing: pull again"),
            Self::LocalChanged(p) => {
                write!(f, "local copy {p} no longer matches its hash: pull again")
            }
            Self::LocalFails { path, why } => {
                write!(f, "local copy {path} no longer loads ({why}): pull again")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Currentness {
    Current {
        pull_id: i64,
        files: usize,
        bytes: u64,
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
            Some(p) if p.size != f.size || p.mtime != f.mtime => {
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
        }
    } else {
        Currentness::NotCurrent(why)
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::ledger::PulledFile;
    use crate::pull::remote::RemoteFile;

    fn pulled(path: &str) -> PulledFile {
        PulledFile {
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
                bytes: 10
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
}
