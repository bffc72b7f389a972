//! What the ledger says about each member, in the words its detail and row show: the last pull
//! and the last teardown, and whether the box is torn down. The runtime reads the ledger for
//! the dashboard (when its loop starts, after a pull or a teardown) and hands the records
//! here; the views only show them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::FleetState;
use crate::ledger::{DestroyOutcome, PullRecord, TeardownRecord};

/// One member's records, as lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Records {
    /// "pull #7, 03:12 UTC: 12/12 files hashed and verified".
    pub last_pull: Option<String>,
    /// "teardown confirmed, 03:40 UTC: vastai no longer lists instance 4242".
    pub last_teardown: Option<String>,
    /// When a teardown of it was confirmed: the box is gone, whatever its link says now.
    pub torn_down: Option<DateTime<Utc>>,
    /// A cluster's last teardown of each job, by the job's id: a job's detail shows its own,
    /// not another job's.
    pub job_teardowns: BTreeMap<String, String>,
}

impl Records {
    /// The records of one member from its latest pull and its teardowns (oldest first).
    pub fn of(pull: Option<&PullRecord>, teardowns: &[TeardownRecord]) -> Records {
        let last_pull = pull.map(|p| {
            let good = p.files.iter().filter(|f| f.is_good()).count();
            let unmatched = match p.unmatched.len() {
                0 => String::new(),
                n => format!("; {n} paths matched nothing"),
            };
            format!(
                "pull #{}, {}: {good}/{} files hashed and verified{unmatched}",
                p.id,
                p.finished.format("%Y-%m-%d %H:%M UTC"),
                p.files.len()
            )
        });
        let ended: Vec<&TeardownRecord> =
            teardowns.iter().filter(|t| t.known().is_some()).collect();
        let last = ended.last().copied();
        let last_teardown = last.map(teardown_line);
        // Oldest first: the newest of each job is the one kept.
        let job_teardowns = ended
            .iter()
            .filter_map(|t| Some((t.instance_id.clone()?, teardown_line(t))))
            .collect();
        let torn_down = last
            .filter(|t| t.known() == Some(DestroyOutcome::Confirmed))
            .map(|t| t.finished.unwrap_or(t.at));
        Records {
            last_pull,
            last_teardown,
            torn_down,
            job_teardowns,
        }
    }
}

/// "teardown confirmed, 2026-12-02 03:40 UTC: why", the why masked.
fn teardown_line(t: &TeardownRecord) -> String {
    let outcome = t.known().map_or("recorded".to_string(), |o| o.to_string());
    let when = t.finished.unwrap_or(t.at).format("%Y-%m-%d %H:%M UTC");
    let why = crate::sanitize::words(t.why.as_deref().unwrap_or(""), 300);
    format!("teardown {outcome}, {when}: {why}")
}

impl FleetState {
    /// Takes in the ledger's records, by member (a box's or a cluster's name, or a Kubernetes
    /// Job's `cluster/job`).
    pub fn take_records(&mut self, records: BTreeMap<String, Records>) {
        self.records = records;
    }

    pub fn records(&self, member: &str) -> Option<&Records> {
        self.records.get(member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn teardown(outcome: Option<DestroyOutcome>) -> TeardownRecord {
        let at = Utc.with_ymd_and_hms(2026, 12, 2, 3, 40, 0).unwrap();
        TeardownRecord {
            id: 1,
            at,
            host: "gpu-1".into(),
            instance_id: Some("4242".into()),
            command: Some("vastai destroy instance 4242".into()),
            pull_id: 7,
            pid: Some(1),
            exit_status: Some(0),
            output: String::new(),
            outcome,
            why: Some("vastai no longer lists instance 4242 (api-key sk-abcdef0123456789)".into()),
            finished: outcome.map(|_| at),
            later: Vec::new(),
        }
    }

    #[test]
    fn a_confirmed_teardown_marks_the_box_torn_down_and_says_why_masked() {
        let r = Records::of(None, &[teardown(Some(DestroyOutcome::Confirmed))]);
        assert_eq!(r.last_pull, None);
        assert_eq!(
            r.last_teardown.as_deref(),
            Some(
                "teardown confirmed, 2026-12-02 03:40 UTC: vastai no longer lists instance 4242 (api-key sk-****)"
            )
        );
        assert!(r.torn_down.is_some());
        assert_eq!(r.job_teardowns.get("4242"), r.last_teardown.as_ref());
        let unconfirmed = Records::of(None, &[teardown(Some(DestroyOutcome::Unconfirmed))]);
        assert!(
            unconfirmed.torn_down.is_none(),
            "only a confirmed one is gone"
        );
        let intent_only = Records::of(None, &[teardown(None)]);
        assert_eq!(intent_only, Records::default());
    }
}
