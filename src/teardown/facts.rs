//! What the dialog is told besides keys and checks: how the run looks, whether the destroy can
//! run, and what the destroy said.

use crate::ledger::DestroyOutcome;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLooks {
    Alive,
    Dead,
    Unknown,
}

impl RunLooks {
    pub fn of(state: &crate::signals::RunState) -> RunLooks {
        use crate::signals::RunState;
        match state {
            RunState::Alive { .. } => RunLooks::Alive,
            RunState::Dead { .. } | RunState::NotConfigured => RunLooks::Dead,
            RunState::Unknown { .. } => RunLooks::Unknown,
        }
    }
}

/// Whether the destroy itself can happen, as the check found it before any name is typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanLooks {
    /// Not looked at yet.
    Unknown,
    /// A command whose program exists and is executable.
    Runs,
    /// The platform has no API: the user destroys it at the provider and says so here.
    ByHand,
    /// It cannot run (no instance id, the program is missing, the instance is another box's):
    /// refused, with why.
    Blocked(String),
}

/// How a destroy ended, as every front end shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Ran(DestroyOutcome),
    /// Refused at the last step (no intent could be recorded, nothing to run): nothing ran.
    Refused,
    /// A rehearsal (the demo): the guard let it through and nothing could run.
    Rehearsed,
}

/// What the destroy said: its output line by line, then its last line (the outcome, why, and
/// where it is recorded, or why it is not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub ending: Ending,
    pub output: Vec<String>,
    pub last: String,
}

impl RunLooks {
    /// A cluster job that has not ended (running, pending, ending, or in a state rigwatch has
    /// no word for) is alive: tearing it down asks twice, as a live run on a box does.
    pub fn of_phase(phase: crate::cluster::Phase) -> RunLooks {
        if phase.is_over() {
            RunLooks::Dead
        } else {
            RunLooks::Alive
        }
    }
}

/// How `target` looks to its teardown dialog in the fleet's state: its run (a box's run
/// signal, a job's phase) and, for a box with a queue, where the queue stands. None when the
/// state has no such box or job; a job the queue no longer shows looks dead.
pub fn looks_of(
    state: &crate::fleet::FleetState,
    target: &crate::target::Target,
) -> Option<(RunLooks, Option<super::QueueNote>)> {
    use super::queue_note::{QueueSeen, queue_note};
    use crate::target::Target;
    match target {
        Target::Box(host) => {
            let h = state.host(host)?;
            let queue = queue_note(match &h.config.queue {
                None => QueueSeen::NotConfigured,
                Some(q) => match state.queue_summary(&h.config.name) {
                    Some(summary) => QueueSeen::Read(summary),
                    None => QueueSeen::Unread {
                        file: &q.file,
                        why: None,
                    },
                },
            });
            Some((RunLooks::of(&h.run), queue))
        }
        Target::Job(job) => {
            let cluster = state.cluster(&job.cluster)?;
            let phase = cluster
                .jobs
                .iter()
                .find(|j| j.id == job.id)
                .map(|j| j.phase);
            Some((phase.map_or(RunLooks::Dead, RunLooks::of_phase), None))
        }
    }
}
