//! The demo's clusters: a Slurm queue replayed from the real capture of the one-node test
//! cluster (tests/fixtures/slurm/later.txt) through squeue's parser and the same job rows as a
//! live cluster: a job in its last ten minutes of walltime, one requeued and pending, one killed
//! at its walltime, one failed with exit code 3.

use chrono::{DateTime, Utc};

use crate::cluster::{ClusterReading, Scheduler};
use crate::probe::squeue::parse_squeue_rows;

const SQUEUE_LATER: &str = include_str!("../../tests/fixtures/slurm/later.txt");
/// The separator the capture was taken with (its README gives the command).
const SEP: &str = "~rw5f0c2e9a7b1d3846~";
/// The jobs of the capture the demo shows, by name.
const SHOWN: [&str; 4] = ["requeue-me", "train-gpu", "walltime", "exits-3"];

/// The demo's Slurm cluster as read at `now`; a capture that stopped parsing shows as a
/// cluster that could not be read, never as a panic.
pub fn slurm(now: DateTime<Utc>) -> ClusterReading {
    let (jobs, error) = match parse_squeue_rows(SQUEUE_LATER, SEP) {
        Ok(rows) => {
            let mut rows: Vec<_> = rows
                .into_iter()
                .filter(|r| SHOWN.contains(&r.name.as_str()))
                .collect();
            rows.sort_by_key(|r| SHOWN.iter().position(|n| *n == r.name));
            (
                rows.into_iter()
                    .map(crate::cluster::slurm::job_row)
                    .collect(),
                None,
            )
        }
        Err(e) => (
            Vec::new(),
            Some(format!("hpc: the demo's squeue capture: {e}")),
        ),
    };
    let mut reading = ClusterReading {
        name: "hpc".into(),
        scheduler: Scheduler::Slurm,
        via: "demo@login.hpc.example".into(),
        jobs,
        ended_state_unknown: Vec::new(),
        error,
        read_at: now,
    };
    reading.judge(now);
    reading
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Phase;

    #[test]
    fn the_demo_cluster_shows_each_kind_of_job_from_the_capture() {
        let now = Utc::now();
        let r = slurm(now);
        assert!(r.error.is_none(), "{:?}", r.error);
        let phases: Vec<(&str, Phase)> =
            r.jobs.iter().map(|j| (j.name.as_str(), j.phase)).collect();
        assert_eq!(
            phases,
            [
                ("requeue-me", Phase::Running),
                ("train-gpu", Phase::Pending),
                ("walltime", Phase::Failed),
                ("exits-3", Phase::Failed),
            ]
        );
        let clock = r.jobs[0].walltime.as_ref().and_then(|c| c.remaining_secs);
        assert_eq!(clock, Some(9 * 60 + 57), "TimeLeft 9:57 in the capture");
    }
}
