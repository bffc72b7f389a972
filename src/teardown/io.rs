//! The one executor of the dialog's effects, through a small I/O trait: [`super::LiveIo`] looks
//! at the real box and runs the one destroy path, the demo's replays it (`demo::teardown`), and
//! the tests script it. Which one runs is the only difference between live and demo: no front
//! end asks which it is.

use std::time::Instant;

use futures::future::BoxFuture;

use super::describe::Description;
use super::destroy::DestroyReport;
use super::driver::{Effect, Event};
use super::facts::{Ending, Finished, PlanLooks, RunLooks};
use crate::pull::Currentness;

/// What a check found: the destroy's words, whether it can run, and the pull against the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFound {
    pub words: Description,
    pub plan: PlanLooks,
    pub currentness: Currentness,
}

impl CheckFound {
    /// The dialog's event for this check, taken for `opening` at `at`.
    pub fn answer(self, opening: u64, at: Instant) -> Event {
        Event::Checked {
            opening,
            words: self.words,
            plan: self.plan,
            currentness: self.currentness,
            at,
        }
    }
}

pub trait TeardownIo: Send + Sync {
    /// The dialog's check: the pull against a fresh listing (sizes, times, inodes), the plan's
    /// readiness, and the words (`run` for the warning about a live run).
    fn check(&self, run: RunLooks) -> BoxFuture<'_, CheckFound>;
    /// The look after the last confirmation: every proven file re-hashed on the box.
    fn final_check(&self) -> BoxFuture<'_, Currentness>;
    /// The destroy, relying on `pull_id`, and what it said.
    fn destroy(&self, pull_id: i64) -> BoxFuture<'_, Finished>;
}

/// Carries out one effect; its answer goes back into the dialog that asked.
pub async fn execute(io: &dyn TeardownIo, effect: Effect) -> Event {
    match effect {
        Effect::Check { opening, run } => io.check(run).await.answer(opening, Instant::now()),
        Effect::FinalCheck { opening } => Event::FinalChecked {
            opening,
            currentness: io.final_check().await,
        },
        Effect::Destroy { pull_id } => Event::Destroyed(io.destroy(pull_id).await),
    }
}

impl From<DestroyReport> for Finished {
    /// What the destroy said, whether or not its outcome could be recorded: the output and the
    /// last line are kept either way.
    fn from(report: DestroyReport) -> Finished {
        Finished {
            ending: report.word().map_or(Ending::Refused, Ending::Ran),
            last: report.last_line(),
            output: report.output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::DestroyOutcome;

    #[test]
    fn an_outcome_that_could_not_be_recorded_keeps_what_the_destroy_said() {
        let report = DestroyReport {
            command: Some("vastai destroy instance 7 -y".into()),
            output: vec!["destroying instance 7.".into()],
            outcome: Ok((DestroyOutcome::Confirmed, "vastai no longer lists 7".into())),
            recorded: Err("database is locked".into()),
        };
        let finished = Finished::from(report);
        assert_eq!(finished.ending, Ending::Ran(DestroyOutcome::Confirmed));
        assert_eq!(finished.output, vec!["destroying instance 7."]);
        assert_eq!(
            finished.last,
            "confirmed: vastai no longer lists 7; OUTCOME NOT RECORDED: database is locked"
        );
    }
}
