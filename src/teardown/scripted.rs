//! The dialog's I/O for tests: a check, a final look and a destroy said in advance, and a record
//! of what was asked, in order.

use std::sync::Mutex;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::facts::{Finished, RunLooks};
use super::io::{CheckFound, TeardownIo};
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
