//! The teardown guard: a pure state machine between the user and the destroy command. It fires
//! only with a verified-current pull in hand, the host's name typed in full, and, if the run still
//! looks alive or the queue has cells not done, a second confirmation. Anything that changes the
//! evidence clears what was typed.

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardEvent {
    /// A fresh check of the pull against the box and the local copies.
    Checked(Currentness),
    /// Something happened that the last check did not see (a pull, a reconnect, new files).
    Invalidated,
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
    /// Run the destroy now, relying on this pull. Emitted at most once per guard.
    Fire {
        pull_id: i64,
    },
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    host: String,
    pull: Option<Currentness>,
    run: RunLooks,
    queue: QueueLooks,
    typed: String,
    cautions_acknowledged: bool,
    fired: bool,
    closed: bool,
}

impl Guard {
    pub fn new(host: &str) -> Guard {
        Guard {
            host: host.to_string(),
            pull: None,
            run: RunLooks::Unknown,
            queue: QueueLooks::NoQueue,
            typed: String::new(),
            cautions_acknowledged: false,
            fired: false,
            closed: false,
        }
    }

    pub fn typed(&self) -> &str {
        &self.typed
    }

    pub fn pull(&self) -> Option<&Currentness> {
        self.pull.as_ref()
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

    /// Why Confirm would be refused right now; empty when it would go ahead.
    pub fn refusals(&self) -> Vec<String> {
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
            GuardEvent::Checked(c) => {
                if self.pull.as_ref() != Some(&c) {
                    self.clear_confirmation();
                }
                self.pull = Some(c);
                GuardOutcome::Nothing
            }
            GuardEvent::Invalidated => {
                self.pull = None;
                self.clear_confirmation();
                GuardOutcome::Nothing
            }
            GuardEvent::RunLooks(run) => {
                if run != self.run {
                    self.cautions_acknowledged = false;
                }
                self.run = run;
                GuardOutcome::Nothing
            }
            GuardEvent::Queue(queue) => {
                if queue != self.queue {
                    self.cautions_acknowledged = false;
                }
                self.queue = queue;
                GuardOutcome::Nothing
            }
            GuardEvent::Key(c) if !c.is_control() && self.typed.chars().count() < 256 => {
                self.typed.push(c);
                self.cautions_acknowledged = false;
                GuardOutcome::Nothing
            }
            GuardEvent::Key(_) => GuardOutcome::Nothing,
            GuardEvent::Backspace => {
                self.typed.pop();
                self.cautions_acknowledged = false;
                GuardOutcome::Nothing
            }
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
        let Some(Currentness::Current { pull_id, .. }) = self.pull else {
            return GuardOutcome::Refused(vec!["no verified-current pull".into()]);
        };
        if !self.cautions().is_empty() && !self.cautions_acknowledged {
            self.cautions_acknowledged = true;
            return GuardOutcome::NeedsSecondConfirm;
        }
        self.fired = true;
        GuardOutcome::Fire { pull_id }
    }

    fn clear_confirmation(&mut self) {
        self.typed.clear();
        self.cautions_acknowledged = false;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::pull::NotCurrent;

    const CURRENT: Currentness = Currentness::Current {
        pull_id: 3,
        files: 2,
        bytes: 10,
    };

    fn typed(guard: &mut Guard, text: &str) {
        for c in text.chars() {
            guard.handle(GuardEvent::Key(c));
        }
    }

    #[test]
    fn refuses_without_a_current_pull_and_says_why() {
        let mut g = Guard::new("box-1");
        g.handle(GuardEvent::Checked(Currentness::NotCurrent(vec![
            NotCurrent::NeverPulled,
        ])));
        typed(&mut g, "box-1");
        let GuardOutcome::Refused(why) = g.handle(GuardEvent::Confirm) else {
            panic!("expected a refusal");
        };
        assert_eq!(why, vec![NotCurrent::NeverPulled.to_string()]);
        assert!(!g.fired());
    }

    #[test]
    fn fires_once_with_current_pull_and_exact_name() {
        let mut g = Guard::new("box-1");
        g.handle(GuardEvent::Checked(CURRENT));
        typed(&mut g, "box-");
        assert!(matches!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::Refused(_)
        ));
        typed(&mut g, "1");
        assert_eq!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::Fire { pull_id: 3 }
        );
        assert!(matches!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::Refused(_)
        ));
    }

    #[test]
    fn a_live_run_needs_a_second_confirm() {
        let mut g = Guard::new("b");
        g.handle(GuardEvent::Checked(CURRENT));
        g.handle(GuardEvent::RunLooks(RunLooks::Alive));
        typed(&mut g, "b");
        assert_eq!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::NeedsSecondConfirm
        );
        assert_eq!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::Fire { pull_id: 3 }
        );
    }

    #[test]
    fn cells_not_done_need_a_second_confirm_but_never_lift_a_refusal() {
        let mut g = Guard::new("b");
        g.handle(GuardEvent::Queue(QueueLooks::NotAllDone));
        typed(&mut g, "b");
        assert!(
            matches!(g.handle(GuardEvent::Confirm), GuardOutcome::Refused(_)),
            "still no pull: refused, not asked twice"
        );
        g.handle(GuardEvent::Checked(CURRENT));
        typed(&mut g, "b");
        assert_eq!(g.cautions(), vec!["not every queue cell is done"]);
        assert_eq!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::NeedsSecondConfirm
        );
        g.handle(GuardEvent::Queue(QueueLooks::Unread));
        assert_eq!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::NeedsSecondConfirm,
            "the queue changed: what was acknowledged no longer holds"
        );
        assert_eq!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::Fire { pull_id: 3 }
        );
        let mut done = Guard::new("b");
        done.handle(GuardEvent::Checked(CURRENT));
        done.handle(GuardEvent::Queue(QueueLooks::AllDone));
        typed(&mut done, "b");
        assert_eq!(
            done.handle(GuardEvent::Confirm),
            GuardOutcome::Fire { pull_id: 3 }
        );
    }

    #[test]
    fn new_evidence_clears_the_typed_name() {
        let mut g = Guard::new("b");
        g.handle(GuardEvent::Checked(CURRENT));
        typed(&mut g, "b");
        g.handle(GuardEvent::Invalidated);
        assert_eq!(g.typed(), "");
        g.handle(GuardEvent::Checked(CURRENT));
        assert!(matches!(
            g.handle(GuardEvent::Confirm),
            GuardOutcome::Refused(_)
        ));
    }

    #[test]
    fn cancel_closes_for_good() {
        let mut g = Guard::new("b");
        g.handle(GuardEvent::Checked(CURRENT));
        typed(&mut g, "b");
        assert_eq!(g.handle(GuardEvent::Cancel), GuardOutcome::Closed);
        assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::Closed);
    }

    fn event() -> impl Strategy<Value = GuardEvent> {
        prop_oneof![
            Just(GuardEvent::Checked(CURRENT)),
            Just(GuardEvent::Checked(Currentness::Current {
                pull_id: 4,
                files: 1,
                bytes: 1
            })),
            Just(GuardEvent::Checked(Currentness::NotCurrent(vec![
                NotCurrent::ChangedOnBox("/w/a.pt".into())
            ]))),
            Just(GuardEvent::Checked(Currentness::NotCurrent(vec![
                NotCurrent::LocalChanged("/l/a.pt".into())
            ]))),
            Just(GuardEvent::Checked(Currentness::NotCurrent(vec![
                NotCurrent::Failed {
                    path: "/w/b.pt".into(),
                    why: "hash mismatch".into()
                }
            ]))),
            Just(GuardEvent::Invalidated),
            prop_oneof![
                Just(RunLooks::Alive),
                Just(RunLooks::Dead),
                Just(RunLooks::Unknown)
            ]
            .prop_map(GuardEvent::RunLooks),
            prop_oneof![
                Just(QueueLooks::NoQueue),
                Just(QueueLooks::AllDone),
                Just(QueueLooks::NotAllDone),
                Just(QueueLooks::Unread)
            ]
            .prop_map(GuardEvent::Queue),
            prop_oneof![Just('a'), Just('b'), Just('-'), Just('1'), Just('x')]
                .prop_map(GuardEvent::Key),
            Just(GuardEvent::Backspace),
            Just(GuardEvent::Confirm),
            Just(GuardEvent::Confirm),
            Just(GuardEvent::Cancel),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

        /// Whatever happens, the destroy fires at most once, and only when the last word about
        /// the pull was "current" (with no invalidation since), the host's name is exactly what
        /// was typed since that word, and a live run or a queue with cells not done got a second
        /// confirm.
        #[test]
        fn never_fires_without_current_pull_and_typed_name(events in prop::collection::vec(event(), 0..60)) {
            let host = "ab-1";
            let mut g = Guard::new(host);
            let mut last_word: Option<Currentness> = None;
            let mut typed_since = String::new();
            let mut run = RunLooks::Unknown;
            let mut queue = QueueLooks::NoQueue;
            let mut second_asked = false;
            let mut fires = 0;
            for e in events {
                match &e {
                    GuardEvent::Checked(c) => {
                        if last_word.as_ref() != Some(c) {
                            typed_since.clear();
                            second_asked = false;
                        }
                        last_word = Some(c.clone());
                    }
                    GuardEvent::Invalidated => {
                        last_word = None;
                        typed_since.clear();
                        second_asked = false;
                    }
                    GuardEvent::Key(c) => {
                        typed_since.push(*c);
                        second_asked = false;
                    }
                    GuardEvent::Backspace => {
                        typed_since.pop();
                        second_asked = false;
                    }
                    GuardEvent::RunLooks(r) => {
                        if *r != run {
                            second_asked = false;
                        }
                        run = *r;
                    }
                    GuardEvent::Queue(q) => {
                        if *q != queue {
                            second_asked = false;
                        }
                        queue = *q;
                    }
                    _ => {}
                }
                let out = g.handle(e.clone());
                if let GuardOutcome::Fire { pull_id } = out {
                    fires += 1;
                    let current = matches!(last_word, Some(Currentness::Current { pull_id: p, .. }) if p == pull_id);
                    prop_assert!(current, "fired without a current pull");
                    prop_assert_eq!(typed_since.as_str(), host);
                    if run == RunLooks::Alive {
                        prop_assert!(second_asked, "a live run was destroyed on the first confirm");
                    }
                    if matches!(queue, QueueLooks::NotAllDone | QueueLooks::Unread) {
                        prop_assert!(second_asked, "cells not done were lost on the first confirm");
                    }
                }
                if out == GuardOutcome::NeedsSecondConfirm {
                    second_asked = true;
                }
            }
            prop_assert!(fires <= 1);
        }
    }
}
