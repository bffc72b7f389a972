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
                said.push((job.severity(), Some(job.id.clone()), text));
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
