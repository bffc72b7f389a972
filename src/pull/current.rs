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
    /// Its bytes on the box no longer hash as pulled, though its size, times and inode are the
    /// same (a write through a shared memory map, or to a page already dirty).
    ContentChangedOnBox(String),
    /// The final check could not re-hash the box's files (why): nothing proves their content.
    NotRehashed(String),
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
    /// Another action holds the target (who, since when): nothing is judged while it acts.
    Busy(String),
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
            // A file's own reason may already end by saying what to do: said once.
            Self::Failed { path, why } => {
                let why = clean(why);
                let why = why
                    .trim_end_matches("pull again")
                    .trim_end_matches([';', ':', ',', ' ', '('])
                    .trim_end();
                write!(f, "{}: {why}: pull again", clean(path))
            }
            Self::Unlisted { path, why } => write!(f, "{}: {}", clean(path), clean(why)),
            Self::Busy(who) => write!(
                f,
                "{}: nothing is destroyed while it runs; wait for it to end, then check again",
                clean(who)
            ),
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
            Self::ContentChangedOnBox(p) => write!(
                f,
                "{} holds other bytes on the box than were pulled (same size and times: written \
                 through a memory map?): pull again",
                clean(p)
            ),
            Self::NotRehashed(why) => write!(
                f,
                "the final check could not re-hash the box's files ({}), so nothing proves they \
                 are what was pulled: try again",
                clean(why)
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
    why.extend(pull.files.iter().filter_map(|f| pulled_file(f, local)));
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

/// What keeps one file of the pull from counting: the pull's own error for it, no
/// verification, or its local copy gone, changed since or failing to load; None where it
/// counts.
fn pulled_file(
    f: &crate::ledger::PulledFile,
    local: &BTreeMap<String, LocalNow>,
) -> Option<NotCurrent> {
    if let Some(error) = &f.error {
        return Some(NotCurrent::Failed {
            path: f.remote_path.clone(),
            why: error.clone(),
        });
    }
    if !f.is_good() {
        return Some(NotCurrent::Failed {
            path: f.remote_path.clone(),
            why: format!("not verified: {}", f.verification),
        });
    }
    match local.get(&f.local_path) {
        None | Some(LocalNow { sha256: None, .. }) => {
            Some(NotCurrent::LocalMissing(f.local_path.clone()))
        }
        Some(now) if now.sha256 != f.local_sha256 => {
            Some(NotCurrent::LocalChanged(f.local_path.clone()))
        }
        Some(LocalNow { loads: Err(e), .. }) => Some(NotCurrent::LocalFails {
            path: f.local_path.clone(),
            why: e.clone(),
        }),
        Some(_) => None,
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
#[path = "current_tests.rs"]
mod tests;

/// The final check's verdict on content: every file the pull proved must hash on the box now as
/// it did then (`rehashed`: escaped remote path → SHA-256, or why the box could not say). Stat
/// proves nothing here: a memory-mapped write changes bytes and leaves size, times and inode.
pub fn judge_content(
    judged: Currentness,
    pull: Option<&PullRecord>,
    rehashed: Result<&BTreeMap<String, String>, &str>,
) -> Currentness {
    let (Currentness::Current { .. }, Some(pull)) = (&judged, pull) else {
        return judged;
    };
    let rehashed = match rehashed {
        Ok(h) => h,
        Err(why) => return Currentness::NotCurrent(vec![NotCurrent::NotRehashed(why.into())]),
    };
    let changed: Vec<NotCurrent> = pull
        .files
        .iter()
        .filter(|f| f.is_good())
        .filter(|f| rehashed.get(&f.remote_path) != f.remote_sha256.as_ref())
        .map(|f| NotCurrent::ContentChangedOnBox(f.remote_path.clone()))
        .collect();
    if changed.is_empty() {
        judged
    } else {
        Currentness::NotCurrent(changed)
    }
}
