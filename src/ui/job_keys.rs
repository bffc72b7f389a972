//! Keys in the jobs pane: the cursor over every cluster's jobs, `T` to cancel the job under it
//! through the guard, `p` to pull its results (what the guard asks for first): its Slurm
//! cluster's, or its Kubernetes Job's pod's.

use crossterm::event::KeyCode;

use super::app::{Action, App};
use crate::cluster::JobRow;
use crate::fleet::FleetState;

/// Every cluster's jobs in the pane's order, with their cluster's name.
pub fn rows(state: &FleetState) -> Vec<(&str, &JobRow)> {
    state
        .clusters
        .iter()
        .flat_map(|c| c.jobs.iter().map(move |j| (c.name.as_str(), j)))
        .collect()
}

impl App {
    pub(super) fn job_key(&mut self, code: KeyCode, state: &FleetState) -> Action {
        let rows = rows(state);
        let last = rows.len().saturating_sub(1);
        let here = self.job_cursor.min(last);
        match code {
            KeyCode::Down | KeyCode::Char('j') => self.job_cursor = (here + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => self.job_cursor = here.saturating_sub(1),
            KeyCode::Char('g') | KeyCode::Home => self.job_cursor = 0,
            KeyCode::Char('G') | KeyCode::End => self.job_cursor = last,
            KeyCode::Char('T') => match rows.get(here) {
                Some((cluster, job)) if !job.phase.is_over() => {
                    return Action::TeardownJob {
                        cluster: cluster.to_string(),
                        job: job.id.clone(),
                    };
                }
                Some((_, job)) => {
                    self.notice = Some(format!(
                        "job {} has ended ({}): nothing to cancel",
                        job.id, job.state
                    ));
                }
                None => {}
            },
            KeyCode::Char('p') => {
                if let Some((cluster, job)) = rows.get(here) {
                    return Action::PullJob {
                        cluster: cluster.to_string(),
                        job: job.id.clone(),
                    };
                }
            }
            _ => {}
        }
        Action::None
    }
}
