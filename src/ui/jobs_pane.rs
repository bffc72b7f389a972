//! The jobs pane's selection: every cluster's jobs the pane's filter lets through, in its
//! order, and the job under the cursor, held by cluster and id (as a host is held by name), so
//! a queue read that reorders the jobs does not move the cursor to another job.

use super::app::App;
use crate::cluster::{ClusterReading, JobRow};
use crate::fleet::FleetState;
use crate::target::Target;

/// A job as the pane shows it: its cluster and its row.
pub type Shown<'a> = (&'a ClusterReading, &'a JobRow);

impl App {
    /// Every cluster's jobs that the jobs filter lets through, in the pane's order.
    pub fn visible_jobs<'a>(&self, state: &'a FleetState) -> Vec<Shown<'a>> {
        let needle = self.job_filter.to_lowercase();
        state
            .clusters
            .iter()
            .flat_map(|c| c.jobs.iter().map(move |j| (c, j)))
            .filter(|(c, j)| {
                needle.is_empty()
                    || [c.name.as_str(), &j.id, &j.name, &j.state]
                        .iter()
                        .any(|w| w.to_lowercase().contains(&needle))
                    || j.reason_words
                        .as_deref()
                        .is_some_and(|w| w.to_lowercase().contains(&needle))
            })
            .collect()
    }

    /// Where the selected job is among `jobs`; the first when it is not shown.
    pub fn job_index(&self, jobs: &[Shown<'_>]) -> usize {
        self.job_selected
            .as_ref()
            .and_then(|(cluster, id)| {
                jobs.iter()
                    .position(|(c, j)| &c.name == cluster && &j.id == id)
            })
            .unwrap_or(0)
    }

    /// The job under the jobs pane's cursor.
    pub fn selected_job<'a>(&self, state: &'a FleetState) -> Option<Shown<'a>> {
        let jobs = self.visible_jobs(state);
        jobs.get(self.job_index(&jobs)).copied()
    }

    /// The job the job detail shows: the selected one by cluster and id, filter or not.
    pub fn detail_job<'a>(&self, state: &'a FleetState) -> Option<Shown<'a>> {
        let (cluster, id) = self.job_selected.as_ref()?;
        let c = state.cluster(cluster)?;
        c.jobs.iter().find(|j| &j.id == id).map(|j| (c, j))
    }

    pub(super) fn select_job(&mut self, jobs: &[Shown<'_>], index: usize) {
        self.job_selected = jobs.get(index).map(|(c, j)| (c.name.clone(), j.id.clone()));
        self.detail_scroll = 0;
    }

    pub(super) fn move_job(&mut self, state: &FleetState, to: Move) {
        let jobs = self.visible_jobs(state);
        let here = self.job_index(&jobs);
        let last = jobs.len().saturating_sub(1);
        let next = match to {
            Move::By(delta) => (here as i64 + delta).clamp(0, last as i64) as usize,
            Move::First => 0,
            Move::Last => last,
        };
        self.select_job(&jobs, next);
    }
}

/// A cursor move in a list.
#[derive(Debug, Clone, Copy)]
pub enum Move {
    By(i64),
    First,
    Last,
}

/// A shown job as a target.
pub fn target_of((cluster, job): Shown<'_>) -> Target {
    Target::job(&cluster.name, cluster.scheduler, &job.id)
}
