//! The guard's tables and its proptest: no destroy without a verified-current pull seen by a
//! check taken after the last confirmation, in the same opening, with the name typed.

use proptest::prelude::*;

use super::*;
use crate::pull::NotCurrent;

const OPENING: u64 = 1;

const CURRENT: Currentness = Currentness::Current {
    pull_id: 3,
    files: 2,
    bytes: 10,
    fingerprint: 99,
};

fn checked(c: Currentness) -> GuardEvent {
    GuardEvent::Checked {
        opening: OPENING,
        currentness: c,
    }
}

fn last_look(c: Currentness) -> GuardEvent {
    GuardEvent::FinalChecked {
        opening: OPENING,
        currentness: c,
    }
}

/// A guard whose plan runs and whose pull was just found current.
fn ready(host: &str) -> Guard {
    let mut g = Guard::new(host, OPENING);
    g.handle(GuardEvent::Plan(PlanLooks::Runs));
    g.handle(checked(CURRENT));
    g
}

fn typed(guard: &mut Guard, text: &str) {
    for c in text.chars() {
        guard.handle(GuardEvent::Key(c));
    }
}

#[test]
fn refuses_without_a_current_pull_and_takes_no_name() {
    let mut g = Guard::new("box-1", OPENING);
    g.handle(GuardEvent::Plan(PlanLooks::Runs));
    g.handle(checked(Currentness::NotCurrent(vec![
        NotCurrent::NeverPulled,
    ])));
    typed(&mut g, "box-1");
    assert_eq!(g.typed(), "", "no name prompt while the evidence refuses");
    let GuardOutcome::Refused(why) = g.handle(GuardEvent::Confirm) else {
        panic!("expected a refusal");
    };
    assert_eq!(why[0], NotCurrent::NeverPulled.to_string());
    assert!(!g.fired());
}

#[test]
fn fires_once_only_after_a_final_check_that_saw_the_same_box() {
    let mut g = ready("box-1");
    typed(&mut g, "box-");
    assert!(matches!(
        g.handle(GuardEvent::Confirm),
        GuardOutcome::Refused(_)
    ));
    typed(&mut g, "1");
    assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::TakeFinalCheck);
    assert!(g.final_pending());
    typed(&mut g, "x");
    assert_eq!(g.typed(), "box-1", "keys wait while the last look is taken");
    assert_eq!(
        g.handle(last_look(CURRENT)),
        GuardOutcome::Fire { pull_id: 3 }
    );
    assert!(matches!(
        g.handle(GuardEvent::Confirm),
        GuardOutcome::Refused(_)
    ));
    assert_eq!(g.handle(last_look(CURRENT)), GuardOutcome::Nothing);
}

#[test]
fn a_checkpoint_written_after_the_confirm_refuses_and_clears_the_name() {
    let mut g = ready("b");
    typed(&mut g, "b");
    assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::TakeFinalCheck);
    let GuardOutcome::Refused(why) = g.handle(last_look(Currentness::NotCurrent(vec![
        NotCurrent::NewOnBox("/w/step9.pt".into()),
    ]))) else {
        panic!("expected a refusal");
    };
    assert!(why[0].contains("changed after you confirmed"), "{why:?}");
    assert!(why.iter().any(|w| w.contains("/w/step9.pt")), "{why:?}");
    assert_eq!(g.typed(), "");
    // Still current, but not the same box: a different fingerprint refuses too.
    let mut g = ready("b");
    typed(&mut g, "b");
    g.handle(GuardEvent::Confirm);
    let moved = Currentness::Current {
        pull_id: 3,
        files: 2,
        bytes: 10,
        fingerprint: 100,
    };
    assert!(matches!(
        g.handle(last_look(moved)),
        GuardOutcome::Refused(_)
    ));
    assert!(!g.fired());
}

#[test]
fn a_check_from_another_opening_or_an_aged_one_never_counts() {
    let mut g = Guard::new("b", 2);
    g.handle(GuardEvent::Plan(PlanLooks::Runs));
    g.handle(checked(CURRENT));
    assert_eq!(g.pull(), None, "opening 1's check is not opening 2's");
    typed(&mut g, "b");
    assert!(matches!(
        g.handle(GuardEvent::Confirm),
        GuardOutcome::Refused(_)
    ));
    let mut g = ready("b");
    typed(&mut g, "b");
    g.handle(GuardEvent::Aged);
    assert_eq!(g.typed(), "");
    assert!(matches!(
        g.handle(GuardEvent::Confirm),
        GuardOutcome::Refused(_)
    ));
}

#[test]
fn a_blocked_or_unchecked_plan_refuses_before_any_name_is_typed() {
    let mut g = Guard::new("b", OPENING);
    g.handle(checked(CURRENT));
    typed(&mut g, "b");
    assert_eq!(g.typed(), "", "the destroy command is not checked yet");
    g.handle(GuardEvent::Plan(PlanLooks::Blocked(
        "vastai is not installed".into(),
    )));
    typed(&mut g, "b");
    assert_eq!(g.typed(), "");
    let GuardOutcome::Refused(why) = g.handle(GuardEvent::Confirm) else {
        panic!("expected a refusal");
    };
    assert!(why.iter().any(|w| w.contains("not installed")), "{why:?}");
    g.handle(GuardEvent::Plan(PlanLooks::ByHand));
    typed(&mut g, "b");
    assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::TakeFinalCheck);
}

#[test]
fn a_live_run_needs_a_second_confirm_and_a_change_during_the_last_look_cancels_it() {
    let mut g = ready("b");
    g.handle(GuardEvent::RunLooks(RunLooks::Alive));
    typed(&mut g, "b");
    assert_eq!(
        g.handle(GuardEvent::Confirm),
        GuardOutcome::NeedsSecondConfirm
    );
    assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::TakeFinalCheck);
    assert_eq!(
        g.handle(last_look(CURRENT)),
        GuardOutcome::Fire { pull_id: 3 }
    );

    let mut g = ready("b");
    typed(&mut g, "b");
    assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::TakeFinalCheck);
    g.handle(GuardEvent::RunLooks(RunLooks::Alive));
    assert_eq!(
        g.handle(last_look(CURRENT)),
        GuardOutcome::Nothing,
        "the run came alive after the confirm: that look no longer counts"
    );
    assert_eq!(
        g.handle(GuardEvent::Confirm),
        GuardOutcome::NeedsSecondConfirm
    );
}

#[test]
fn cells_not_done_need_a_second_confirm_but_never_lift_a_refusal() {
    let mut g = Guard::new("b", OPENING);
    g.handle(GuardEvent::Plan(PlanLooks::Runs));
    g.handle(GuardEvent::Queue(QueueLooks::NotAllDone));
    assert!(
        matches!(g.handle(GuardEvent::Confirm), GuardOutcome::Refused(_)),
        "still no pull: refused, not asked twice"
    );
    g.handle(checked(CURRENT));
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
    assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::TakeFinalCheck);
}

#[test]
fn cancel_closes_for_good() {
    let mut g = ready("b");
    typed(&mut g, "b");
    assert_eq!(g.handle(GuardEvent::Cancel), GuardOutcome::Closed);
    assert_eq!(g.handle(GuardEvent::Confirm), GuardOutcome::Closed);
}

fn currentness() -> impl Strategy<Value = Currentness> {
    prop_oneof![
        Just(CURRENT),
        Just(Currentness::Current {
            pull_id: 4,
            files: 1,
            bytes: 1,
            fingerprint: 99,
        }),
        Just(Currentness::Current {
            pull_id: 3,
            files: 2,
            bytes: 10,
            fingerprint: 7,
        }),
        Just(Currentness::NotCurrent(vec![NotCurrent::ChangedOnBox(
            "/w/a.pt".into()
        )])),
        Just(Currentness::NotCurrent(vec![NotCurrent::Unlisted {
            path: "/w/ckpt".into(),
            why: "a link".into()
        }])),
    ]
}

fn event() -> impl Strategy<Value = GuardEvent> {
    prop_oneof![
        (0..2u64, currentness()).prop_map(|(opening, currentness)| GuardEvent::Checked {
            opening,
            currentness
        }),
        (0..2u64, currentness()).prop_map(|(opening, currentness)| GuardEvent::FinalChecked {
            opening,
            currentness
        }),
        Just(GuardEvent::Aged),
        Just(GuardEvent::Invalidated),
        prop_oneof![
            Just(PlanLooks::Unknown),
            Just(PlanLooks::Runs),
            Just(PlanLooks::ByHand),
            Just(PlanLooks::Blocked("no instance_id".into())),
            Just(PlanLooks::Blocked("vastai: command not found".into())),
        ]
        .prop_map(GuardEvent::Plan),
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

    /// Whatever happens, the destroy fires at most once, and only: on a final check of this
    /// opening that came after the last Confirm and saw the same current pull (same id, same
    /// fingerprint) as the check the user confirmed on; with the plan runnable; with the host's
    /// name typed since the last change of evidence; with a second confirm for a live run or a
    /// queue not done.
    #[test]
    fn never_fires_without_a_fresh_current_check_after_the_last_confirm(
        events in prop::collection::vec(event(), 0..80)
    ) {
        let host = "ab-1";
        let mut g = Guard::new(host, OPENING);
        let mut shown: Option<Currentness> = None;
        let mut plan = PlanLooks::Unknown;
        let mut confirmed_since_evidence = false;
        let mut run = RunLooks::Unknown;
        let mut queue = QueueLooks::NoQueue;
        let mut second_asked = false;
        let mut fires = 0;
        for e in events {
            let before = shown.clone();
            match &e {
                GuardEvent::Checked { opening, currentness } if *opening == OPENING => {
                    shown = Some(currentness.clone());
                }
                GuardEvent::Aged | GuardEvent::Invalidated => shown = None,
                GuardEvent::Plan(p) => plan = p.clone(),
                GuardEvent::RunLooks(r) => {
                    if *r != run { second_asked = false; confirmed_since_evidence = false; }
                    run = *r;
                }
                GuardEvent::Queue(q) => {
                    if *q != queue { second_asked = false; confirmed_since_evidence = false; }
                    queue = *q;
                }
                GuardEvent::Key(_) | GuardEvent::Backspace => second_asked = false,
                _ => {}
            }
            if before != shown {
                confirmed_since_evidence = false;
                second_asked = false;
            }
            let final_look = match &e {
                GuardEvent::FinalChecked { opening, currentness } if *opening == OPENING => {
                    Some(currentness.clone())
                }
                _ => None,
            };
            let out = g.handle(e.clone());
            if let GuardOutcome::Fire { pull_id } = out {
                fires += 1;
                prop_assert!(confirmed_since_evidence, "fired without a confirm after the last change");
                let Some(Currentness::Current { pull_id: p, fingerprint: f, .. }) = shown.clone() else {
                    return Err(TestCaseError::fail("fired without a current pull on screen"));
                };
                prop_assert_eq!(p, pull_id);
                let same = matches!(final_look, Some(Currentness::Current { pull_id: fp, fingerprint: ff, .. }) if fp == p && ff == f);
                prop_assert!(same, "fired on something other than a final check that saw the same box");
                prop_assert!(matches!(plan, PlanLooks::Runs | PlanLooks::ByHand), "fired on a blocked plan");
                prop_assert_eq!(g.typed(), host);
                if run == RunLooks::Alive || matches!(queue, QueueLooks::NotAllDone | QueueLooks::Unread) {
                    prop_assert!(second_asked, "a caution was not confirmed twice");
                }
            }
            match out {
                GuardOutcome::NeedsSecondConfirm => second_asked = true,
                GuardOutcome::TakeFinalCheck => confirmed_since_evidence = true,
                _ => {}
            }
            if final_look.is_some() && out != GuardOutcome::Nothing {
                confirmed_since_evidence = false;
            }
        }
        prop_assert!(fires <= 1);
    }
}
