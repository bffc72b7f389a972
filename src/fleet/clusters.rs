//! A cluster's reading taken into the fleet: merged with the last (a job that left the queue
//! stays, as ended with its state unknown), and an event for every job that appears, changes
//! phase or ends, said in the words the row shows.

use chrono::{DateTime, Utc};

use super::FleetState;
use crate::cluster::{ClusterReading, JobRow, Phase};
use crate::signals::Severity;

impl FleetState {
    /// Takes in one read of a cluster; the events say what changed since the last.
    pub fn observe_cluster(&mut self, reading: ClusterReading, now: DateTime<Utc>) {
        let at = self.clusters.iter().position(|c| c.name == reading.name);
        let last = at.map(|i| &self.clusters[i]);
        let mut next = reading.merge(last);
        next.judge(now);
        let mut said = Vec::new();
        match (last.and_then(|l| l.error.as_ref()), &next.error) {
            (None, Some(error)) => said.push((Severity::Warn, None, error.clone())),
            (Some(_), None) => said.push((Severity::Info, None, "queue read again".to_string())),
            _ => {}
        }
        for job in &next.jobs {
            let before = last.and_then(|l| l.jobs.iter().find(|j| j.id == job.id));
            if let Some(text) = change(before, job) {
                let (severity, cause) = job.judged();
                let text = match cause {
                    Some(cause) => format!("{text}; {cause}"),
                    None => text,
                };
                said.push((severity, Some(job.id.clone()), text));
            }
        }
        let name = next.name.clone();
        match at {
            Some(i) => self.clusters[i] = next,
            None => self.clusters.push(next),
        }
        for (severity, job, text) in said {
            self.job_event(now, &name, job.as_deref(), severity, text);
        }
    }

    pub fn cluster(&self, name: &str) -> Option<&ClusterReading> {
        self.clusters.iter().find(|c| c.name == name)
    }
}

/// What an event says about `job`, given how it was last seen; None when nothing news.
fn change(before: Option<&JobRow>, job: &JobRow) -> Option<String> {
    let who = format!("job {} ({})", job.id, job.name);
    match before {
        None if job.phase.is_over() => None,
        None => Some(format!("{who}: {}", job.summary())),
        Some(b) if b.phase == job.phase && b.state == job.state => (job.restarts > b.restarts)
            .then(|| {
                format!(
                    "{who}: restarted ({} so far): {}",
                    job.restarts.unwrap_or(0),
                    job.summary()
                )
            }),
        Some(b) if b.phase == Phase::Gone && !job.phase.is_over() => Some(format!(
            "{who} is in the queue again, {}: it had not ended",
            job.summary()
        )),
        Some(b) => {
            let verb = match job.phase {
                Phase::Running => "started",
                Phase::Pending => "pends",
                Phase::Gone => "left the queue",
                p if p.is_over() => "ended",
                _ => "now",
            };
            Some(format!("{who} {verb}: {} → {}", b.state, job.summary()))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use chrono::TimeZone;

    use super::*;
    use crate::cluster::Scheduler;

    fn running(id: &str, left_secs: u64) -> JobRow {
        JobRow {
            node_list: Some("n1".into()),
            gpus: Some(1),
            elapsed_secs: Some(3600),
            limit_secs: Some(3600 + left_secs),
            left: Some(Duration::from_secs(left_secs)),
            restarts: Some(0),
            requeue: Some(true),
            ..JobRow::for_test(id, "requeue-me", Phase::Running, "RUNNING")
        }
    }

    /// A loud event says why it is loud: a job first seen 7 minutes from its walltime is
    /// critical, and the event names the walltime, not only "RUNNING".
    #[test]
    fn a_loud_job_event_says_its_cause() {
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 3, 0, 0).unwrap();
        let mut state = FleetState::new(Vec::new(), crate::config::Thresholds::default());
        let reading = ClusterReading {
            name: "hpc".into(),
            scheduler: Scheduler::Slurm,
            via: "me@login".into(),
            jobs: vec![running("10", 7 * 60)],
            ended_state_unknown: Vec::new(),
            error: None,
            read_at: now,
            quota: None,
        };
        state.observe_cluster(reading, now);
        let event = state.events.iter().find(|e| e.job.as_deref() == Some("10"));
        let event = event.expect("an event for job 10");
        assert_eq!(event.severity, Severity::Crit);
        assert_eq!(
            event.text,
            "job 10 (requeue-me): RUNNING; reaches its walltime in 7m"
        );
        let clock = state.clusters[0].jobs[0].walltime.as_ref().expect("clock");
        assert!(
            clock
                .message
                .starts_with("job 10 (requeue-me) reaches its walltime in 7m: SIGTERM"),
            "{}",
            clock.message
        );
    }

    /// A job a read missed is said to have left the queue; when the next read has it again,
    /// the event says it is back and had not ended.
    #[test]
    fn a_job_that_vanishes_and_returns_is_said_to_be_back() {
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 3, 0, 0).unwrap();
        let mut state = FleetState::new(Vec::new(), crate::config::Thresholds::default());
        let read = |jobs: Vec<JobRow>| ClusterReading {
            name: "hpc".into(),
            scheduler: Scheduler::Slurm,
            via: "me@login".into(),
            jobs,
            ended_state_unknown: Vec::new(),
            error: None,
            read_at: now,
            quota: None,
        };
        state.observe_cluster(read(vec![running("10", 7200)]), now);
        state.observe_cluster(read(Vec::new()), now);
        state.observe_cluster(read(vec![running("10", 7100)]), now);
        let texts: Vec<&str> = state.events.iter().map(|e| e.text.as_str()).collect();
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with("job 10 (requeue-me) is in the queue again, RUNNING")),
            "{texts:?}"
        );
    }
}
