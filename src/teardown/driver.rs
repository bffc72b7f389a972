//! The teardown dialog as one pure state machine, shared by the dashboard's modal and
//! `rigwatch teardown`: events in (what the person typed, what a check found, the clock), effects
//! out as data (take a check, take the final look, destroy), carried out by
//! [`super::io::execute`]. No I/O, no clock: `now` arrives with [`Event::Tick`].
//!
//! It destroys only when, in this opening of the dialog, a check found the pull
//! verified-current, the plan can run (or the platform is destroyed by hand), the host's name was
//! typed in full, a live run or unfinished queue got a second confirmation, and then — after that
//! last confirmation — a final check saw exactly what the user confirmed. Anything that changes
//! the evidence clears what was typed; while the evidence refuses, no name is taken at all.
//!
//! Past 400 lines on purpose: every stage and every event of the guard side by side, so each
//! path to a destroy is checked in one reading.

use std::time::{Duration, Instant};

use super::describe::Description;
use super::facts::{Finished, PlanLooks, RunLooks};
use super::queue_note::{QueueLooks, QueueNote};
use crate::pull::Currentness;
use crate::target::Target;

/// A check shown longer than this no longer counts: it is dropped and a new one is taken.
pub const CHECK_MAX_AGE: Duration = Duration::from_secs(30);

/// Where the dialog is: one value for its whole life, from opening to closing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// No check of this opening counts (just opened, aged, or a pull started); one is awaited.
    Checking,
    /// The evidence refuses, with why; no name is taken.
    Refused(Vec<String>),
    /// Nothing but the host's name, typed in full, stands in the way.
    AwaitingName,
    /// Confirmed once; a live run or an unfinished queue ([`Dialog::cautions`]) asks again.
    AwaitingSecondConfirm,
    /// Confirmed: the look after the last confirmation is under way.
    FinalChecking,
    /// The final look saw what was confirmed: the destroy runs, relying on this pull.
    Destroying {
        pull_id: i64,
    },
    /// What the destroy said.
    Finished(Finished),
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The dialog is on screen: take its first check.
    Opened,
    /// A check of the pull against the box and the local copies, with the destroy's words and
    /// whether it can run, taken for one opening (`at`: when it was taken). A check from any
    /// other opening is ignored.
    Checked {
        opening: u64,
        words: Description,
        plan: PlanLooks,
        currentness: Currentness,
        at: Instant,
    },
    /// The look asked for by [`Effect::FinalCheck`], taken after the last confirmation.
    FinalChecked {
        opening: u64,
        currentness: Currentness,
    },
    /// The clock: a check older than [`CHECK_MAX_AGE`] no longer counts and is taken again.
    Tick(Instant),
    /// Something happened that the last check did not see (a pull started).
    Invalidated,
    Run(RunLooks),
    /// The host's queue as it stands now; None without a queue.
    Queue(Option<QueueNote>),
    /// What the name prompt holds now, as the front end's line editor left it (the dashboard's
    /// keys with a cursor, a line read at a terminal). A finished dialog takes it as a key
    /// that closes it.
    Name(String),
    Confirm,
    Cancel,
    Destroyed(Finished),
}

/// What the dialog asks the executor to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Check the pull against a fresh listing of the box, and whether the destroy can run.
    Check { opening: u64, run: RunLooks },
    /// Re-hash the box's files against the pull, after the last confirmation.
    FinalCheck { opening: u64 },
    /// Run the one destroy path (intent, command, provider, outcome), relying on this pull.
    /// Emitted at most once per dialog.
    Destroy { pull_id: i64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// What it tears down: a box, a Slurm job, a Kubernetes Job; its member's name is typed.
    target: Target,
    opening: u64,
    stage: Stage,
    pull: Option<Currentness>,
    plan: PlanLooks,
    run: RunLooks,
    queue: Option<QueueNote>,
    words: Description,
    typed: String,
    /// When the check that counts was taken; kept through an invalidation so it still ages.
    checked_at: Option<Instant>,
    /// The answer to the last key, or what the dialog is doing.
    messages: Vec<String>,
}

/// The longest name the prompt holds (a member's name is far shorter).
pub const NAME_MAX: usize = 256;

impl Dialog {
    /// The dialog for one opening; `opening` tells its checks from any other's.
    pub fn new(target: Target, opening: u64) -> Dialog {
        Dialog {
            target,
            opening,
            stage: Stage::Checking,
            pull: None,
            plan: PlanLooks::Unknown,
            run: RunLooks::Unknown,
            queue: None,
            words: Description::default(),
            typed: String::new(),
            checked_at: None,
            messages: Vec::new(),
        }
    }

    /// The dialog for one opening of `target`, told how its run and its queue look, and
    /// opened: the one way every front end (the dashboard, `rigwatch teardown`, the demo's
    /// screenshots) starts a teardown. The effects are the first check, for the executor.
    pub fn open(
        target: Target,
        opening: u64,
        run: RunLooks,
        queue: Option<QueueNote>,
    ) -> (Dialog, Vec<Effect>) {
        let mut dialog = Dialog::new(target, opening);
        dialog.handle(Event::Run(run));
        dialog.handle(Event::Queue(queue));
        let effects = dialog.handle(Event::Opened);
        (dialog, effects)
    }

    /// The fleet member the dialog is for: the box, or the job's cluster (whose name is typed).
    pub fn host(&self) -> &str {
        self.target.member()
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// What the person types, and what it does: "Type the box's name to destroy it", "Type the
    /// cluster's name, hpc, to cancel Slurm job 4242 on hpc".
    pub fn confirm_prompt(&self) -> String {
        match &self.target {
            Target::Box(_) => "Type the box's name to destroy it".to_string(),
            Target::Job(job) => format!(
                "Type the cluster's name, {}, to {} {}",
                job.cluster,
                self.target.kind().teardown_verb(),
                self.target
            ),
        }
    }

    pub fn opening(&self) -> u64 {
        self.opening
    }

    pub fn stage(&self) -> &Stage {
        &self.stage
    }

    pub fn typed(&self) -> &str {
        &self.typed
    }

    pub fn pull(&self) -> Option<&Currentness> {
        self.pull.as_ref()
    }

    pub fn words(&self) -> &Description {
        &self.words
    }

    pub fn queue(&self) -> Option<&QueueNote> {
        self.queue.as_ref()
    }

    pub fn messages(&self) -> &[String] {
        &self.messages
    }

    fn queue_looks(&self) -> QueueLooks {
        self.queue.as_ref().map_or(QueueLooks::NoQueue, |n| n.looks)
    }

    /// What the second confirmation acknowledges; empty when one Confirm is enough.
    pub fn cautions(&self) -> Vec<&'static str> {
        let mut cautions = Vec::new();
        if self.run == RunLooks::Alive {
            cautions.push(self.target.kind().still_alive());
        }
        match self.queue_looks() {
            QueueLooks::NotAllDone => cautions.push("not every queue cell is done"),
            QueueLooks::Unread => cautions.push("the queue's cells are not accounted for"),
            QueueLooks::NoQueue | QueueLooks::AllDone => {}
        }
        cautions
    }

    /// Why the evidence refuses, whatever is typed; empty when a typed name would be taken.
    pub fn blockers(&self) -> Vec<String> {
        let mut why = Vec::new();
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

    /// Why Confirm would be refused right now; empty when it would go ahead.
    fn refusals(&self) -> Vec<String> {
        let mut why = self.blockers();
        if self.stage == Stage::FinalChecking {
            why.push("taking the last look at the box; wait".to_string());
        }
        // While the evidence refuses, no name is asked for: typing it would change nothing.
        if why.is_empty() && self.typed != self.host() {
            why.push(match &self.target {
                Target::Box(host) => format!("type the box's name, {host}, to confirm"),
                Target::Job(job) => format!("type the cluster's name, {}, to confirm", job.cluster),
            });
        }
        why
    }

    pub fn handle(&mut self, event: Event) -> Vec<Effect> {
        match (&self.stage, event) {
            // A running destroy is waited for: its outcome is recorded and shown.
            (Stage::Closed, _) | (Stage::Destroying { .. }, Event::Cancel) => Vec::new(),
            (Stage::Finished(_), Event::Name(_) | Event::Confirm) | (_, Event::Cancel) => {
                self.stage = Stage::Closed;
                Vec::new()
            }
            (Stage::Destroying { .. }, Event::Destroyed(finished)) => {
                self.messages = finished.output.clone();
                self.stage = Stage::Finished(finished);
                Vec::new()
            }
            // A destroy under way or ended takes nothing more but the keys that close it.
            (Stage::Destroying { .. } | Stage::Finished(_), _) | (_, Event::Destroyed(_)) => {
                Vec::new()
            }
            (_, Event::Opened) => vec![self.check()],
            (
                _,
                Event::Checked {
                    opening,
                    words,
                    plan,
                    currentness,
                    at,
                },
            ) if opening == self.opening => {
                self.words = words;
                self.checked_at = Some(at);
                let changed = plan != self.plan || self.pull.as_ref() != Some(&currentness);
                self.plan = plan;
                self.pull = Some(currentness);
                if changed || self.stage == Stage::Checking {
                    self.clear_confirmation();
                }
                Vec::new()
            }
            (
                Stage::FinalChecking,
                Event::FinalChecked {
                    opening,
                    currentness,
                },
            ) if opening == self.opening => self.final_check(currentness),
            (_, Event::Checked { .. } | Event::FinalChecked { .. }) => Vec::new(),
            (_, Event::Tick(now)) => self.age(now),
            (_, Event::Invalidated) => {
                self.pull = None;
                self.typed.clear();
                self.stage = Stage::Checking;
                Vec::new()
            }
            (_, Event::Run(run)) => {
                if run != self.run {
                    self.unacknowledge();
                }
                self.run = run;
                Vec::new()
            }
            (_, Event::Queue(note)) => {
                if note.as_ref().map(|n| n.looks) != self.queue.as_ref().map(|n| n.looks) {
                    self.unacknowledge();
                }
                self.queue = note;
                Vec::new()
            }
            (Stage::FinalChecking, Event::Name(_)) => Vec::new(),
            (_, Event::Name(name)) => {
                self.edit_name(name);
                Vec::new()
            }
            (_, Event::Confirm) => self.confirm(),
        }
    }

    /// The name as now typed: taken while the dialog takes a name (a change after a first
    /// Enter asks for the name's Enter again); otherwise only its clearing is. No control
    /// character.
    fn edit_name(&mut self, name: String) {
        let name: String = name
            .chars()
            .filter(|c| !c.is_control())
            .take(NAME_MAX)
            .collect();
        if name == self.typed {
            return;
        }
        self.messages.clear();
        if self.takes_name() {
            self.typed = name;
            self.stage = Stage::AwaitingName;
        } else if name.is_empty() {
            self.typed.clear();
        }
    }

    /// Whether the dialog takes the host's name now (and Enter can confirm): never while the
    /// evidence refuses, the check runs, or the destroy is under way or over.
    pub fn takes_name(&self) -> bool {
        matches!(
            self.stage,
            Stage::AwaitingName | Stage::AwaitingSecondConfirm
        )
    }

    fn check(&self) -> Effect {
        Effect::Check {
            opening: self.opening,
            run: self.run,
        }
    }

    /// A check older than its limit no longer counts (unless the final look is under way, which
    /// is fresher): it is dropped, with what was typed, and taken again.
    fn age(&mut self, now: Instant) -> Vec<Effect> {
        let old = self
            .checked_at
            .is_some_and(|at| now.saturating_duration_since(at) > CHECK_MAX_AGE);
        if !old || self.stage == Stage::FinalChecking {
            return Vec::new();
        }
        self.checked_at = None;
        self.pull = None;
        self.typed.clear();
        self.stage = Stage::Checking;
        self.messages = vec!["the check got old; looking at the box again…".to_string()];
        vec![self.check()]
    }

    fn confirm(&mut self) -> Vec<Effect> {
        let why = self.refusals();
        if !why.is_empty() {
            // A wrong name does not linger to be corrected: it is typed again, in full.
            if self.takes_name() && self.typed != self.host() {
                self.typed.clear();
            }
            self.messages = why;
            return Vec::new();
        }
        let cautions = self.cautions();
        if !cautions.is_empty() && self.stage != Stage::AwaitingSecondConfirm {
            self.stage = Stage::AwaitingSecondConfirm;
            self.messages = vec![format!(
                "Careful: {}. Press Enter again to {} it anyway, Esc to cancel.",
                cautions.join("; "),
                self.target.kind().teardown_verb()
            )];
            return Vec::new();
        }
        self.stage = Stage::FinalChecking;
        self.messages = vec![if self.words.final_check.is_empty() {
            "taking a last look at the box before acting…".to_string()
        } else {
            format!(
                "taking a last look at the box before acting: {}…",
                self.words.final_check
            )
        }];
        vec![Effect::FinalCheck {
            opening: self.opening,
        }]
    }

    /// Destroys only when the look taken after the last confirmation is the one confirmed.
    fn final_check(&mut self, fresh: Currentness) -> Vec<Effect> {
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
        if same && self.blockers().is_empty() && self.typed == self.host() {
            if let Some(Currentness::Current { pull_id, .. }) = self.pull {
                self.stage = Stage::Destroying { pull_id };
                self.messages = vec![match &self.words.command {
                    Some(command) => format!("running: {command}…"),
                    None => "waiting for your word that it is destroyed…".to_string(),
                }];
                return vec![Effect::Destroy { pull_id }];
            }
        }
        self.pull = Some(fresh);
        self.clear_confirmation();
        let mut why = vec![
            "the box or the local copies changed after you confirmed; nothing was run".to_string(),
        ];
        why.extend(self.blockers());
        self.messages = why;
        Vec::new()
    }

    /// The evidence changed: what was typed and acknowledged no longer holds.
    fn clear_confirmation(&mut self) {
        self.typed.clear();
        let why = self.blockers();
        self.stage = if why.is_empty() {
            Stage::AwaitingName
        } else {
            Stage::Refused(why)
        };
    }

    /// What was acknowledged no longer holds, and a final check under way no longer counts;
    /// the typed name stays.
    fn unacknowledge(&mut self) {
        if matches!(
            self.stage,
            Stage::AwaitingSecondConfirm | Stage::FinalChecking
        ) {
            self.stage = Stage::AwaitingName;
        }
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
