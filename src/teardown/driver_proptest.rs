//! The dialog's proptest: whatever arrives in whatever order, the destroy is asked for at most
//! once and only as the Iron Law allows (ported from the guard's, with the same assertions).

use proptest::prelude::*;

use super::*;
use crate::target::Target;

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

fn plan() -> impl Strategy<Value = PlanLooks> {
    prop_oneof![
        Just(PlanLooks::Unknown),
        Just(PlanLooks::Runs),
        Just(PlanLooks::ByHand),
        Just(PlanLooks::Blocked("no instance_id".into())),
        Just(PlanLooks::Blocked("vastai: command not found".into())),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (0..2u64, plan(), currentness())
            .prop_map(|(opening, plan, c)| checked_with(opening, plan, c)),
        (0..2u64, currentness()).prop_map(|(opening, currentness)| Event::FinalChecked {
            opening,
            currentness
        }),
        Just(aged()),
        Just(Event::Invalidated),
        prop_oneof![
            Just(RunLooks::Alive),
            Just(RunLooks::Dead),
            Just(RunLooks::Unknown)
        ]
        .prop_map(Event::Run),
        prop_oneof![
            Just(QueueLooks::NoQueue),
            Just(QueueLooks::AllDone),
            Just(QueueLooks::NotAllDone),
            Just(QueueLooks::Unread)
        ]
        .prop_map(queue),
        // What the name prompt holds after a key: on the way to the host's name, past it, off it.
        prop_oneof![
            Just(""),
            Just("a"),
            Just("ab"),
            Just("ab-"),
            Just("ab-1"),
            Just("ab-1x"),
            Just("x")
        ]
        .prop_map(|n| Event::Name(n.to_string())),
        Just(Event::Confirm),
        Just(Event::Confirm),
        Just(Event::Cancel),
        Just(Event::Opened),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// Whatever happens, the destroy is asked for at most once, and only: on a final check of
    /// this opening that came after the last Confirm and saw the same current pull (same id,
    /// same fingerprint) as the check the user confirmed on; with the plan runnable; with the
    /// host's name typed since the last change of evidence; with a second confirm for a live
    /// run or a queue not done.
    #[test]
    fn never_destroys_without_a_fresh_current_check_after_the_last_confirm(
        events in prop::collection::vec(event(), 0..80)
    ) {
        let host = "ab-1";
        let mut d = Dialog::new(Target::Box(host.into()), OPENING);
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
                Event::Checked { opening, currentness, plan: p, .. } if *opening == OPENING => {
                    shown = Some(currentness.clone());
                    plan = p.clone();
                }
                Event::Invalidated => shown = None,
                Event::Run(r) => {
                    if *r != run { second_asked = false; confirmed_since_evidence = false; }
                    run = *r;
                }
                Event::Queue(q) => {
                    let q = q.as_ref().map_or(QueueLooks::NoQueue, |n| n.looks);
                    if q != queue { second_asked = false; confirmed_since_evidence = false; }
                    queue = q;
                }
                Event::Name(n) if n != d.typed() => second_asked = false,
                _ => {}
            }
            let final_look = match &e {
                Event::FinalChecked { opening, currentness } if *opening == OPENING => {
                    Some(currentness.clone())
                }
                _ => None,
            };
            let was_final = d.stage() == &Stage::FinalChecking;
            let effects = d.handle(e.clone());
            // A tick that took a new check dropped the one shown.
            if matches!(e, Event::Tick(_)) && !effects.is_empty() {
                shown = None;
            }
            if before != shown {
                confirmed_since_evidence = false;
                second_asked = false;
            }
            for effect in &effects {
                if let Effect::Destroy { pull_id } = effect {
                    fires += 1;
                    prop_assert!(confirmed_since_evidence, "destroyed without a confirm after the last change");
                    let Some(Currentness::Current { pull_id: p, fingerprint: f, .. }) = shown.clone() else {
                        return Err(TestCaseError::fail("destroyed without a current pull on screen"));
                    };
                    prop_assert_eq!(p, *pull_id);
                    let same = matches!(final_look, Some(Currentness::Current { pull_id: fp, fingerprint: ff, .. }) if fp == p && ff == f);
                    prop_assert!(same, "destroyed on something other than a final check that saw the same box");
                    prop_assert!(matches!(plan, PlanLooks::Runs | PlanLooks::ByHand), "destroyed on a blocked plan");
                    prop_assert_eq!(d.typed(), host);
                    if run == RunLooks::Alive || matches!(queue, QueueLooks::NotAllDone | QueueLooks::Unread) {
                        prop_assert!(second_asked, "a caution was not confirmed twice");
                    }
                }
                if *effect == FINAL {
                    confirmed_since_evidence = true;
                }
            }
            if e == Event::Confirm && d.stage() == &Stage::AwaitingSecondConfirm {
                second_asked = true;
            }
            if final_look.is_some() && was_final {
                confirmed_since_evidence = false;
            }
        }
        prop_assert!(fires <= 1);
    }
}
