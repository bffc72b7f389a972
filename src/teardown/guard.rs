//! The teardown guard: a pure state machine between the user and the destroy command. It fires
//! only when, in this opening of the dialog, a check found the pull verified-current, the plan
//! can run (or the platform is destroyed by hand), the host's name was typed in full, a live run
//! or unfinished queue got a second confirmation, and then — after that last confirmation — a
//! final check saw exactly what the user confirmed. Anything that changes the evidence clears
//! what was typed; while the evidence refuses, no name is taken at all.

use super::queue_note::QueueLooks;
use crate::pull::Currentness;

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

/// Whether the destroy itself can happen, as the executor found it before any name is typed.
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardEvent {
    /// A check of the pull against the box and the local copies, taken for one opening of the
    /// dialog: a check from any other opening is ignored.
    Checked {
        opening: u64,
        currentness: Currentness,
    },
    /// The check asked for by [`GuardOutcome::TakeFinalCheck`], taken after the last
    /// confirmation.
    FinalChecked {
        opening: u64,
        currentness: Currentness,
    },
    /// The shown check is older than its limit: it no longer counts; a new one is on its way.
    Aged,
    /// Something happened that the last check did not see (a pull, a reconnect, new files).
    Invalidated,
    Plan(PlanLooks),
    RunLooks(RunLooks),
    Queue(QueueLooks),
    Key(char),
    Backspace,
    Confirm,
    Cancel,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardOutcome {
    Nothing,
    /// Confirm was pressed and refused; each line says why and what to do.
    Refused(Vec<String>),
    /// The run still looks alive, or queue cells are not done ([`Guard::cautions`] says which):
    /// a second Confirm (with the name still typed) goes ahead.
    NeedsSecondConfirm,
    /// Everything is confirmed: look at the box once more, now, and answer with
    /// [`GuardEvent::FinalChecked`].
    TakeFinalCheck,
    /// Run the destroy now, relying on this pull. Emitted at most once per guard.
    Fire {
        pull_id: i64,
    },
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    host: String,
    opening: u64,
    pull: Option<Currentness>,
    plan: PlanLooks,
    run: RunLooks,
    queue: QueueLooks,
    typed: String,
    cautions_acknowledged: bool,
    final_pending: bool,
    fired: bool,
    closed: bool,
}

impl Guard {
    /// A guard for one opening of the dialog; `opening` tells its checks from any other's.
    pub fn new(host: &str, opening: u64) -> Guard {
        Guard {
            host: host.to_string(),
            opening,
            pull: None,
            plan: PlanLooks::Unknown,
            run: RunLooks::Unknown,
            queue: QueueLooks::NoQueue,
            typed: String::new(),
            cautions_acknowledged: false,
            final_pending: false,
            fired: false,
            closed: false,
        }
    }

    pub fn opening(&self) -> u64 {
        self.opening
    }

    pub fn typed(&self) -> &str {
        &self.typed
    }

    pub fn pull(&self) -> Option<&Currentness> {
        self.pull.as_ref()
    }

    pub fn plan(&self) -> &PlanLooks {
        &self.plan
    }

    pub fn run(&self) -> RunLooks {
        self.run
    }

    pub fn fired(&self) -> bool {
        self.fired
    }

    pub fn queue(&self) -> QueueLooks {
        self.queue
    }

    pub fn awaiting_second_confirm(&self) -> bool {
        self.cautions_acknowledged
    }

    /// The final check is under way.
    pub fn final_pending(&self) -> bool {
        self.final_pending
    }

    /// What the second confirmation acknowledges; empty when one Confirm is enough.
    pub fn cautions(&self) -> Vec<&'static str> {
        let mut cautions = Vec::new();
        if self.run == RunLooks::Alive {
            cautions.push("the run still looks alive on this box");
        }
        match self.queue {
            QueueLooks::NotAllDone => cautions.push("not every queue cell is done"),
            QueueLooks::Unread => cautions.push("the queue's cells are not accounted for"),
            QueueLooks::NoQueue | QueueLooks::AllDone => {}
        }
        cautions
    }

    /// Why the evidence refuses, whatever is typed; empty when a typed name would be taken.
    pub fn blockers(&self) -> Vec<String> {
        let mut why = Vec::new();
        if self.fired {
            why.push("already destroyed from this dialog".to_string());
        }
        match &self.pull {
            None => why.push("still checking the pull against the box".to_string()),
            Some(Currentness::NotCurrent(reasons)) => {
                why.extend(reasons.iter().map(ToString::to_string));
            }
            Some(Currentness::Current { .. }) => {}
        }
        match &self.plan {
            PlanLooks::Unknown => why.push("still checking the destroy command".to_string()),
            PlanLooks::Blocked(b) => why.push(crate::sanitize::line(b, 400)),
            PlanLooks::Runs | PlanLooks::ByHand => {}
        }
        why
    }

    /// The name prompt exists only while nothing but the name stands in the way.
    pub fn accepts_name(&self) -> bool {
        self.blockers().is_empty() && !self.final_pending
    }

    /// Why Confirm would be refused right now; empty when it would go ahead.
    pub fn refusals(&self) -> Vec<String> {
        let mut why = self.blockers();
        if self.final_pending {
            why.push("taking the last look at the box; wait".to_string());
        }
        if self.typed != self.host {
            why.push(format!("type the host's name, {}, to confirm", self.host));
        }
        why
    }

    pub fn handle(&mut self, event: GuardEvent) -> GuardOutcome {
        if self.closed {
            return GuardOutcome::Closed;
        }
        match event {
            GuardEvent::Checked {
                opening,
                currentness,
            } if opening == self.opening => {
                if self.pull.as_ref() != Some(&currentness) {
                    self.clear_confirmation();
                }
                self.pull = Some(currentness);
                GuardOutcome::Nothing
            }
            GuardEvent::FinalChecked {
                opening,
                currentness,
            } if opening == self.opening && self.final_pending => self.final_check(currentness),
            GuardEvent::Checked { .. } | GuardEvent::FinalChecked { .. } => GuardOutcome::Nothing,
            GuardEvent::Aged | GuardEvent::Invalidated => {
                self.pull = None;
                self.clear_confirmation();
                GuardOutcome::Nothing
            }
            GuardEvent::Plan(plan) => {
                if plan != self.plan {
                    self.clear_confirmation();
                }
                self.plan = plan;
                GuardOutcome::Nothing
            }
            GuardEvent::RunLooks(run) => {
                if run != self.run {
                    self.unacknowledge();
                }
                self.run = run;
                GuardOutcome::Nothing
            }
            GuardEvent::Queue(queue) => {
                if queue != self.queue {
                    self.unacknowledge();
                }
                self.queue = queue;
                GuardOutcome::Nothing
            }
            GuardEvent::Key(c)
                if !c.is_control() && self.typed.chars().count() < 256 && self.accepts_name() =>
            {
                self.typed.push(c);
                self.cautions_acknowledged = false;
                GuardOutcome::Nothing
            }
            GuardEvent::Key(_) => GuardOutcome::Nothing,
            GuardEvent::Backspace if !self.final_pending => {
                self.typed.pop();
                self.cautions_acknowledged = false;
                GuardOutcome::Nothing
            }
            GuardEvent::Backspace => GuardOutcome::Nothing,
            GuardEvent::Cancel => {
                self.closed = true;
                GuardOutcome::Closed
            }
            GuardEvent::Confirm => self.confirm(),
        }
    }

    fn confirm(&mut self) -> GuardOutcome {
        let why = self.refusals();
        if !why.is_empty() {
            return GuardOutcome::Refused(why);
        }
        if !self.cautions().is_empty() && !self.cautions_acknowledged {
            self.cautions_acknowledged = true;
            return GuardOutcome::NeedsSecondConfirm;
        }
        self.final_pending = true;
        GuardOutcome::TakeFinalCheck
    }

    /// Fires only when the look taken after the last confirmation is the one confirmed.
    fn final_check(&mut self, fresh: Currentness) -> GuardOutcome {
        self.final_pending = false;
        let same = match (&self.pull, &fresh) {
            (
                Some(Currentness::Current {
                    pull_id,
                    fingerprint,
                    ..
                }),
                Currentness::Current {
                    pull_id: p,
                    fingerprint: f,
                    ..
                },
            ) => pull_id == p && fingerprint == f,
            _ => false,
        };
        if same && self.refusals().is_empty() {
            if let Some(Currentness::Current { pull_id, .. }) = self.pull {
                self.fired = true;
                return GuardOutcome::Fire { pull_id };
            }
        }
        self.pull = Some(fresh);
        self.clear_confirmation();
        let mut why = vec![
            "the box or the local copies changed after you confirmed; nothing was run".to_string(),
        ];
        why.extend(self.blockers());
        GuardOutcome::Refused(why)
    }

    fn clear_confirmation(&mut self) {
        self.typed.clear();
        self.unacknowledge();
    }

    /// What was acknowledged no longer holds, and a final check under way no longer counts.
    fn unacknowledge(&mut self) {
        self.cautions_acknowledged = false;
        self.final_pending = false;
    }
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
