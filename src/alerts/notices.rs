//! Things that happen once and are news: a run starting, a queue cell done, a pull or a
//! teardown recorded in the ledger (by `rigwatch pull`, the dashboard or `teardown`, in any
//! process). What was already so when watching began is not news; only changes are.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::{AlertData, AlertEvent, AlertKind, AlertState, News, SCHEMA_VERSION};
use crate::cluster::Phase;
use crate::fleet::FleetState;
use crate::ledger::{DestroyOutcome, PullRecord, TeardownRecord};
use crate::queue::CellState;
use crate::signals::{RunState, Severity};

/// The last look, saved with the alert states: a restart compares with what the last run
/// saw, so what changed in between is news once and nothing is said twice.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Notices {
    /// Whether each host's run was alive at the last look (None before the first reading).
    alive: BTreeMap<String, bool>,
    /// Queue cells done, by host and name; None until the first roster.
    done: Option<BTreeSet<(String, String)>>,
    /// The newest pull id and teardown time seen in the ledger; None before the first look.
    ledger: Option<(i64, Option<DateTime<Utc>>)>,
    /// Each cluster job's phase at the last look, by cluster and id; a cluster is absent until
    /// its first reading (what had ended before watching began is not news).
    jobs: BTreeMap<String, BTreeMap<String, Phase>>,
}

fn notice(
    at: DateTime<Utc>,
    host: &str,
    kind: News,
    severity: Severity,
    subject: Option<String>,
    message: String,
) -> AlertEvent {
    AlertEvent {
        v: SCHEMA_VERSION,
        at,
        host: host.to_string(),
        kind: AlertKind::News(kind),
        severity,
        state: AlertState::Notice,
        message: crate::sanitize::words(&message, 500),
        platform: None,
        data: AlertData {
            count: 1,
            repeat: false,
            stage: None,
            id: super::alert_id(host, AlertKind::News(kind), subject.as_deref(), at),
            subject,
            silenced: false,
        },
    }
}

impl Notices {
    /// Runs that started and cells that finished since the last look.
    pub fn from_state(&mut self, state: &FleetState, now: DateTime<Utc>) -> Vec<AlertEvent> {
        let mut out = Vec::new();
        for h in &state.hosts {
            let alive = match &h.run {
                RunState::Alive { .. } => true,
                RunState::Dead { .. } => false,
                // Not knowing is no change.
                RunState::Unknown { .. } | RunState::NotConfigured => continue,
            };
            let before = self.alive.insert(h.config.name.clone(), alive);
            if alive && before == Some(false) {
                let how = match &h.run {
                    RunState::Alive { how } => how.clone(),
                    _ => String::new(),
                };
                out.push(notice(
                    now,
                    &h.config.name,
                    News::RunStarted,
                    Severity::Info,
                    None,
                    format!("run started: {how}"),
                ));
            }
        }
        if let Some(roster) = &state.roster {
            let done: BTreeSet<(String, String)> = roster
                .cells
                .iter()
                .filter(|c| matches!(c.state, CellState::Done { .. }))
                .map(|c| (c.host.clone(), c.name.clone()))
                .collect();
            if let Some(before) = &self.done {
                for (host, name) in done.difference(before) {
                    out.push(notice(
                        now,
                        host,
                        News::QueueCellDone,
                        Severity::Info,
                        Some(name.clone()),
                        format!("queue cell {} done", crate::sanitize::line(name, 80)),
                    ));
                }
            }
            self.done = Some(done);
        }
        self.jobs_ended(state, now, &mut out);
        out
    }

    /// Cluster jobs that ended, or left the queue unseen, since the last look.
    fn jobs_ended(&mut self, state: &FleetState, now: DateTime<Utc>, out: &mut Vec<AlertEvent>) {
        for cluster in &state.clusters {
            // A failed read is no look at the jobs (it holds them as last read, or none at all
            // after a restart): it neither sets the baseline nor ends anything.
            if cluster.error.is_some() {
                continue;
            }
            let phases = cluster
                .jobs
                .iter()
                .map(|j| (j.id.clone(), j.phase))
                .collect();
            let Some(before) = self.jobs.insert(cluster.name.clone(), phases) else {
                continue;
            };
            // Said to have left the queue, and in it again: the "ended" was wrong; say so once.
            for job in cluster.jobs.iter().filter(|j| !j.phase.is_over()) {
                if before.get(&job.id) == Some(&Phase::Gone) {
                    out.push(notice(
                        now,
                        &cluster.name,
                        News::JobReturned,
                        Severity::Warn,
                        Some(job.id.clone()),
                        format!(
                            "job {} ({}) is in the queue again: {}; it was said to have left \
                             it, a read that missed it",
                            job.id,
                            job.name,
                            job.summary()
                        ),
                    ));
                }
            }
            for job in cluster.jobs.iter().filter(|j| j.phase.is_over()) {
                if before.get(&job.id).is_some_and(|p| p.is_over()) {
                    continue;
                }
                // A job that ended well with a danger standing (a commit that kept no output)
                // is a warning: the danger is said once, here.
                let severity = match job.phase {
                    Phase::Succeeded if job.dangers.is_empty() => Severity::Info,
                    Phase::Failed => Severity::Crit,
                    _ => Severity::Warn,
                };
                out.push(notice(
                    now,
                    &cluster.name,
                    News::JobEnded,
                    severity,
                    Some(job.id.clone()),
                    format!("job {} ({}) ended: {}", job.id, job.name, job.summary()),
                ));
            }
        }
    }

    /// Pulls and teardown outcomes recorded since the last look. A failed pull is a warning; a
    /// teardown the provider did not confirm is a warning, one that failed is critical: the box
    /// may still bill.
    pub fn from_ledger(
        &mut self,
        pulls: &[PullRecord],
        teardowns: &[TeardownRecord],
        now: DateTime<Utc>,
    ) -> Vec<AlertEvent> {
        let newest_pull = pulls.iter().map(|p| p.id).max().unwrap_or(0);
        // A teardown is news when its outcome is recorded (its intent alone is not).
        let newest_teardown = teardowns.iter().filter_map(|t| t.finished).max();
        let Some((seen_pull, seen_teardown)) = self.ledger.replace((newest_pull, newest_teardown))
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in pulls.iter().filter(|p| p.id > seen_pull) {
            let good = p.files.iter().filter(|f| f.is_good()).count();
            let ok = good == p.files.len() && p.unmatched.is_empty();
            out.push(notice(
                now,
                &p.host,
                if ok { News::PullDone } else { News::PullFailed },
                if ok { Severity::Info } else { Severity::Warn },
                Some(format!("#{}", p.id)),
                format!(
                    "pull #{}: {good}/{} files hashed and verified{}",
                    p.id,
                    p.files.len(),
                    if p.unmatched.is_empty() {
                        String::new()
                    } else {
                        format!(", {} paths matched nothing", p.unmatched.len())
                    }
                ),
            ));
        }
        for t in teardowns {
            let (Some(outcome), Some(finished)) = (t.outcome, t.finished) else {
                continue;
            };
            if seen_teardown.is_some_and(|s| finished <= s) {
                continue;
            }
            let why = crate::sanitize::mask_secrets(t.why.as_deref().unwrap_or(""));
            out.push(notice(
                now,
                &t.host,
                News::TeardownDone,
                match outcome {
                    DestroyOutcome::Confirmed => Severity::Info,
                    DestroyOutcome::Unconfirmed => Severity::Warn,
                    DestroyOutcome::Failed => Severity::Crit,
                },
                t.instance_id.clone(),
                format!("teardown {outcome}: {why}"),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::days(20_000)
    }

    fn teardown(outcome: DestroyOutcome, at: DateTime<Utc>) -> TeardownRecord {
        TeardownRecord {
            id: 1,
            at,
            host: "gpu-1".into(),
            instance_id: Some("4242".into()),
            command: Some("vastai destroy instance 4242 -y".into()),
            pull_id: 1,
            pid: Some(1),
            exit_status: Some(0),
            output: String::new(),
            outcome: Some(outcome),
            why: Some("the destroy command exited 0, but vastai still lists instance 4242".into()),
            finished: Some(at),
            later: Vec::new(),
        }
    }

    #[test]
    fn what_was_in_the_ledger_before_is_not_news_and_each_outcome_has_its_severity() {
        let mut n = Notices::default();
        let old = teardown(DestroyOutcome::Confirmed, t0());
        assert!(
            n.from_ledger(&[], std::slice::from_ref(&old), t0())
                .is_empty(),
            "the baseline"
        );
        let mut open = teardown(DestroyOutcome::Failed, t0());
        (open.outcome, open.finished) = (None, None);
        assert!(
            n.from_ledger(&[], &[old.clone(), open], t0()).is_empty(),
            "an intent alone is not news"
        );
        let minutes = |m| t0() + chrono::Duration::minutes(m);
        let unconfirmed = teardown(DestroyOutcome::Unconfirmed, minutes(5));
        let failed = teardown(DestroyOutcome::Failed, minutes(6));
        let news = n.from_ledger(&[], &[old, unconfirmed, failed], t0());
        let said: Vec<(AlertKind, Severity, &str)> = news
            .iter()
            .map(|e| (e.kind, e.severity, e.message.as_str()))
            .collect();
        let why = "the destroy command exited 0, but vastai still lists instance 4242";
        assert_eq!(
            said,
            [
                (
                    AlertKind::News(News::TeardownDone),
                    Severity::Warn,
                    &*format!("teardown UNCONFIRMED: {why}")
                ),
                (
                    AlertKind::News(News::TeardownDone),
                    Severity::Crit,
                    &*format!("teardown FAILED: {why}")
                ),
            ]
        );
    }

    #[test]
    fn a_job_said_to_have_left_the_queue_and_back_in_it_is_news_once() {
        use crate::cluster::{ClusterReading, JobRow, Scheduler};
        let job = |phase: Phase| {
            let state = if phase == Phase::Gone {
                "ENDED?"
            } else {
                "RUNNING"
            };
            JobRow::for_test("10", "train-a", phase, state)
        };
        let mut n = Notices::default();
        let mut said = Vec::new();
        for phase in [Phase::Running, Phase::Gone, Phase::Running, Phase::Running] {
            let mut state = FleetState::new(Vec::new(), crate::config::Thresholds::default());
            state.clusters.push(ClusterReading {
                name: "hpc".into(),
                scheduler: Scheduler::Slurm,
                via: "login".into(),
                jobs: vec![job(phase)],
                ended_state_unknown: Vec::new(),
                error: None,
                read_at: t0(),
                quota: None,
            });
            said.extend(
                n.from_state(&state, t0())
                    .into_iter()
                    .map(|e| e.kind.to_string()),
            );
        }
        assert_eq!(said, ["job_ended", "job_returned"]);
    }
}
