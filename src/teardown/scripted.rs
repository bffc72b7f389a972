//! The dialog's I/O for tests: a check, a final look and a destroy said in advance, and a record
//! of what was asked, in order.

use std::sync::Mutex;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::Description;
use super::facts::{Ending, Finished, PlanLooks, RunLooks};
use super::io::{CheckFound, TeardownIo};
use crate::ledger::DestroyOutcome;
use crate::pull::Currentness;

pub struct ScriptedIo {
    pub check: CheckFound,
    pub final_look: Currentness,
    pub finished: Finished,
    /// "check", "final check", "destroy #<pull id>", as asked.
    pub asked: Mutex<Vec<String>>,
}

impl ScriptedIo {
    pub fn new(check: CheckFound, final_look: Currentness, finished: Finished) -> ScriptedIo {
        ScriptedIo {
            check,
            final_look,
            finished,
            asked: Mutex::new(Vec::new()),
        }
    }

    /// A box whose check finds `words` and a plan that runs, whose last look says `currentness`,
    /// and whose destroy of vast.ai instance 4242 is confirmed but whose outcome could not be
    /// recorded: the hardest ending for a front end to show honestly.
    pub fn unrecorded_destroy(words: Description, currentness: Currentness) -> ScriptedIo {
        ScriptedIo::new(
            CheckFound {
                words,
                plan: PlanLooks::Runs,
                currentness: currentness.clone(),
            },
            currentness,
            Finished {
                ending: Ending::Ran(DestroyOutcome::Confirmed),
                output: vec!["destroying instance 4242.".into()],
                last: "confirmed: vastai no longer lists instance 4242; OUTCOME NOT RECORDED: \
                       database is locked"
                    .into(),
            },
        )
    }

    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }

    fn note(&self, what: String) {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(what);
        }
    }
}

impl TeardownIo for ScriptedIo {
    fn check(&self, _run: RunLooks) -> BoxFuture<'_, CheckFound> {
        self.note("check".into());
        futures::future::ready(self.check.clone()).boxed()
    }

    fn final_check(&self) -> BoxFuture<'_, Currentness> {
        self.note("final check".into());
        futures::future::ready(self.final_look.clone()).boxed()
    }

    fn destroy(&self, pull_id: i64) -> BoxFuture<'_, Finished> {
        self.note(format!("destroy #{pull_id}"));
        futures::future::ready(self.finished.clone()).boxed()
    }
}
