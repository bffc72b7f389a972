//! Which queue cells the pull ledger vouches for: `final_dir/<name>/` was pulled in the host's
//! latest pull, every file of it came home hashed on both ends and loaded, and the files pulled
//! meet the done rule on their own (a verified `metrics.json` without its checkpoint is not a
//! done cell). These names feed `queue::reconcile` as `Done { verified: true }`.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::HostConfig;
use crate::ledger::{Ledger, LedgerError, PullRecord};
use crate::queue::{DoneRule, FinalFile, FinalListing, is_cell_done};

/// The cells of `final_dir` that `pull` brought home whole and verified.
pub fn verified_cells(pull: &PullRecord, final_dir: &str, rule: &DoneRule) -> BTreeSet<String> {
    let mut all_good: BTreeMap<&str, bool> = BTreeMap::new();
    let mut listing = FinalListing::default();
    for f in &pull.files {
        let Some((name, file)) = cell_file(&f.remote_path, final_dir) else {
            continue;
        };
        *all_good.entry(name).or_insert(true) &= f.is_good();
        listing
            .cells
            .entry(name.to_owned())
            .or_default()
            .push(FinalFile {
                file: file.to_owned(),
                size_bytes: f.size,
                mtime_epoch_secs: f.mtime,
            });
    }
    all_good
        .into_iter()
        .filter(|(name, good)| *good && is_cell_done(&listing, name, rule))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// `(name, file)` when `remote` is `final_dir/<name>/<file>`. The box reports absolute paths; a
/// `final_dir` given relative to the home directory (`~/final`, `final`) matches any home.
fn cell_file<'a>(remote: &'a str, final_dir: &str) -> Option<(&'a str, &'a str)> {
    let (dir_and_name, file) = remote.rsplit_once('/')?;
    let (dir, name) = dir_and_name.rsplit_once('/')?;
    if name.is_empty() || file.is_empty() {
        return None;
    }
    let want = final_dir.trim_end_matches('/');
    let inside = if want.starts_with('/') {
        dir == want
    } else {
        let relative = want
            .strip_prefix("~/")
            .or_else(|| want.strip_prefix("./"))
            .unwrap_or(want);
        !relative.is_empty() && relative != "~" && dir.ends_with(&format!("/{relative}"))
    };
    inside.then_some((name, file))
}

/// Every queue host's verified cells from its latest pull in the ledger. No ledger yet means
/// nothing is verified; the file is not created just to find that out.
pub fn from_ledger(
    path: Option<&std::path::Path>,
    hosts: &[HostConfig],
) -> Result<BTreeMap<String, BTreeSet<String>>, LedgerError> {
    let mut out = BTreeMap::new();
    let Some(path) = path.filter(|p| p.exists()) else {
        return Ok(out);
    };
    let ledger = Ledger::open(path)?;
    for host in hosts {
        let Some(queue) = &host.queue else { continue };
        if let Some(pull) = ledger.latest_pull(&host.name)? {
            let cells = verified_cells(&pull, &queue.final_dir, &DoneRule::default());
            out.insert(host.name.clone(), cells);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::ledger::PulledFile;

    fn pulled(path: &str, good: bool) -> PulledFile {
        PulledFile {
            stamp: Some("5.0 5.0 1".into()),
            remote_path: path.into(),
            size: 5,
            mtime: 100,
            remote_sha256: Some("h".into()),
            local_path: format!("/l{path}"),
            local_sha256: Some(if good { "h" } else { "other" }.into()),
            sent: 5,
            verified: good,
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
            id: 1,
            host: "box".into(),
            started: DateTime::<Utc>::UNIX_EPOCH,
            finished: DateTime::<Utc>::UNIX_EPOCH,
            paths: vec!["/w/final".into()],
            unmatched: Vec::new(),
            files,
            local_disk_full: false,
        }
    }

    fn names(set: &BTreeSet<String>) -> Vec<&str> {
        set.iter().map(String::as_str).collect()
    }

    #[test]
    fn a_cell_is_verified_only_when_every_pulled_file_is_good_and_the_rule_is_met() {
        let pull = record(vec![
            pulled("/w/final/a/best.pth", true),
            pulled("/w/final/a/metrics.json", true),
            pulled("/w/final/b/best.pth", true),
            pulled("/w/final/b/metrics.json", false),
            pulled("/w/final/c/metrics.json", true),
            pulled("/w/final/d/sub/best.pth", true),
            pulled("/w/final/d/sub/metrics.json", true),
            pulled("/w/other/e/best.pth", true),
            pulled("/w/other/e/metrics.json", true),
        ]);
        let rule = DoneRule::default();
        assert_eq!(names(&verified_cells(&pull, "/w/final/", &rule)), ["a"]);
        assert!(verified_cells(&record(Vec::new()), "/w/final", &rule).is_empty());
    }

    #[test]
    fn a_final_dir_under_home_matches_whatever_the_home_is() {
        let pull = record(vec![
            pulled("/root/final/a/best.pth", true),
            pulled("/root/final/a/metrics.json", true),
            pulled("/root/notfinal/b/best.pth", true),
            pulled("/root/notfinal/b/metrics.json", true),
        ]);
        let rule = DoneRule::default();
        for dir in ["~/final", "final", "./final/"] {
            assert_eq!(names(&verified_cells(&pull, dir, &rule)), ["a"], "{dir}");
        }
        assert!(verified_cells(&pull, "~", &rule).is_empty());
        assert_eq!(cell_file("/a", "/"), None);
        assert_eq!(cell_file("//x", "/"), None);
    }
}
