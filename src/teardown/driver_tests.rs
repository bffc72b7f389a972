//! The dialog's tables (its proptest is in driver_proptest.rs): no destroy without a verified-current pull seen by a
//! check taken after the last confirmation, in the same opening, with the name typed. Ported
//! one for one from the guard's tables (a `Refused` outcome is now a message and no effect; the
//! guard's `Aged` is a `Tick` past the check's limit; the plan arrives with the check).
//!
//! Past 400 lines: a table of cases, each read on its own.

use std::time::Instant;

use super::*;
use crate::ledger::DestroyOutcome;
use crate::pull::NotCurrent;
use crate::target::Target;
use crate::teardown::Ending;

#[path = "driver_proptest.rs"]
mod proptest_of_the_dialog;

const OPENING: u64 = 1;

const CURRENT: Currentness = Currentness::Current {
    pull_id: 3,
    files: 2,
    bytes: 10,
    fingerprint: 99,
};

fn base() -> Instant {
    // One instant for the whole test run, so "later" is always later.
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn checked_with(opening: u64, plan: PlanLooks, c: Currentness) -> Event {
    Event::Checked {
        opening,
        words: Description::default(),
        plan,
        currentness: c,
        at: base(),
    }
}

fn checked(c: Currentness) -> Event {
    checked_with(OPENING, PlanLooks::Runs, c)
}

fn last_look(c: Currentness) -> Event {
    Event::FinalChecked {
        opening: OPENING,
        currentness: c,
    }
}

/// A tick past the check's limit.
fn aged() -> Event {
    Event::Tick(base() + CHECK_MAX_AGE + Duration::from_secs(1))
}

fn queue(looks: QueueLooks) -> Event {
    Event::Queue((looks != QueueLooks::NoQueue).then(|| QueueNote {
        looks,
        line: "queue: …".into(),
    }))
}

/// A dialog whose plan runs and whose pull was just found current.
fn ready(host: &str) -> Dialog {
    let mut d = Dialog::new(Target::Box(host.into()), OPENING);
    d.handle(checked(CURRENT));
    d
}

/// `text` typed after what the prompt holds, a key at a time, as a front end sends it.
fn typed(d: &mut Dialog, text: &str) {
    for c in text.chars() {
        let mut name = d.typed().to_string();
        name.push(c);
        d.handle(Event::Name(name));
    }
}

/// Confirm was pressed and refused: no effect, the stage did not move on, and why is shown.
fn refused(d: &mut Dialog) -> Vec<String> {
    let before = d.stage().clone();
    let effects = d.handle(Event::Confirm);
    assert_eq!(effects, vec![], "a refused Confirm asks for nothing");
    assert_eq!(d.stage(), &before, "a refused Confirm moves nothing");
    assert!(!d.messages().is_empty(), "a refusal says why");
    d.messages().to_vec()
}

fn destroying(d: &Dialog) -> bool {
    matches!(d.stage(), Stage::Destroying { .. })
}

const FINAL: Effect = Effect::FinalCheck { opening: OPENING };

#[test]
fn refuses_without_a_current_pull_and_takes_no_name() {
    let mut d = Dialog::new(Target::Box("box-1".into()), OPENING);
    d.handle(checked(Currentness::NotCurrent(vec![
        NotCurrent::NeverPulled,
    ])));
    typed(&mut d, "box-1");
    assert_eq!(d.typed(), "", "no name prompt while the evidence refuses");
    assert_eq!(
        d.stage(),
        &Stage::Refused(vec![NotCurrent::NeverPulled.to_string()])
    );
    let why = refused(&mut d);
    assert_eq!(why[0], NotCurrent::NeverPulled.to_string());
    assert!(!destroying(&d));
}

#[test]
fn destroys_once_only_after_a_final_check_that_saw_the_same_box() {
    let mut d = ready("box-1");
    typed(&mut d, "box-");
    refused(&mut d);
    assert_eq!(d.typed(), "", "a wrong name is typed again, in full");
    typed(&mut d, "box-1");
    assert_eq!(d.handle(Event::Confirm), vec![FINAL]);
    assert_eq!(d.stage(), &Stage::FinalChecking);
    typed(&mut d, "x");
    assert_eq!(d.typed(), "box-1", "keys wait while the last look is taken");
    assert_eq!(
        d.handle(last_look(CURRENT)),
        vec![Effect::Destroy { pull_id: 3 }]
    );
    assert_eq!(d.handle(Event::Confirm), vec![]);
    assert_eq!(d.stage(), &Stage::Destroying { pull_id: 3 });
    assert_eq!(d.handle(last_look(CURRENT)), vec![]);
    assert_eq!(
        d.handle(Event::Cancel),
        vec![],
        "a running destroy is waited for"
    );
    assert_eq!(d.stage(), &Stage::Destroying { pull_id: 3 });
}

#[test]
fn a_checkpoint_written_after_the_confirm_refuses_and_clears_the_name() {
    let mut d = ready("b");
    typed(&mut d, "b");
    assert_eq!(d.handle(Event::Confirm), vec![FINAL]);
    let effects = d.handle(last_look(Currentness::NotCurrent(vec![
        NotCurrent::NewOnBox("/w/step9.pt".into()),
    ])));
    assert_eq!(effects, vec![]);
    let why = d.messages();
    assert!(why[0].contains("changed after you confirmed"), "{why:?}");
    assert!(why.iter().any(|w| w.contains("/w/step9.pt")), "{why:?}");
    assert_eq!(d.typed(), "");
    assert!(matches!(d.stage(), Stage::Refused(_)));
    // Still current, but not the same box: a different fingerprint refuses too.
    let mut d = ready("b");
    typed(&mut d, "b");
    d.handle(Event::Confirm);
    let moved = Currentness::Current {
        pull_id: 3,
        files: 2,
        bytes: 10,
        fingerprint: 100,
    };
    assert_eq!(d.handle(last_look(moved)), vec![]);
    assert!(d.messages()[0].contains("changed after you confirmed"));
    assert!(!destroying(&d));
}

#[test]
fn a_check_from_another_opening_or_an_aged_one_never_counts() {
    let mut d = Dialog::new(Target::Box("b".into()), 2);
    d.handle(checked(CURRENT));
    assert_eq!(d.pull(), None, "opening 1's check is not opening 2's");
    assert_eq!(d.stage(), &Stage::Checking);
    typed(&mut d, "b");
    refused(&mut d);
    let mut d = ready("b");
    typed(&mut d, "b");
    assert_eq!(
        d.handle(aged()),
        vec![Effect::Check {
            opening: OPENING,
            run: RunLooks::Unknown
        }]
    );
    assert_eq!(d.typed(), "");
    refused(&mut d);
}

#[test]
fn a_blocked_or_unchecked_plan_refuses_before_any_name_is_typed() {
    let mut d = Dialog::new(Target::Box("b".into()), OPENING);
    d.handle(checked_with(OPENING, PlanLooks::Unknown, CURRENT));
    typed(&mut d, "b");
    assert_eq!(d.typed(), "", "the destroy command is not checked yet");
    d.handle(checked_with(
        OPENING,
        PlanLooks::Blocked("vastai is not installed".into()),
        CURRENT,
    ));
    typed(&mut d, "b");
    assert_eq!(d.typed(), "");
    let why = refused(&mut d);
    assert!(why.iter().any(|w| w.contains("not installed")), "{why:?}");
    d.handle(checked_with(OPENING, PlanLooks::ByHand, CURRENT));
    typed(&mut d, "b");
    assert_eq!(d.handle(Event::Confirm), vec![FINAL]);
}

#[test]
fn a_live_run_needs_a_second_confirm_and_a_change_during_the_last_look_cancels_it() {
    let mut d = ready("b");
    d.handle(Event::Run(RunLooks::Alive));
    typed(&mut d, "b");
    assert_eq!(d.handle(Event::Confirm), vec![]);
    assert_eq!(d.stage(), &Stage::AwaitingSecondConfirm);
    assert_eq!(d.handle(Event::Confirm), vec![FINAL]);
    assert_eq!(
        d.handle(last_look(CURRENT)),
        vec![Effect::Destroy { pull_id: 3 }]
    );

    let mut d = ready("b");
    typed(&mut d, "b");
    assert_eq!(d.handle(Event::Confirm), vec![FINAL]);
    d.handle(Event::Run(RunLooks::Alive));
    assert_eq!(
        d.handle(last_look(CURRENT)),
        vec![],
        "the run came alive after the confirm: that look no longer counts"
    );
    assert_eq!(d.handle(Event::Confirm), vec![]);
    assert_eq!(d.stage(), &Stage::AwaitingSecondConfirm);
}

#[test]
fn cells_not_done_need_a_second_confirm_but_never_lift_a_refusal() {
    let mut d = Dialog::new(Target::Box("b".into()), OPENING);
    d.handle(queue(QueueLooks::NotAllDone));
    assert_eq!(d.handle(Event::Confirm), vec![]);
    assert_eq!(
        d.stage(),
        &Stage::Checking,
        "still no pull: refused, not asked twice"
    );
    d.handle(checked(CURRENT));
    typed(&mut d, "b");
    assert_eq!(d.cautions(), vec!["not every queue cell is done"]);
    assert_eq!(d.handle(Event::Confirm), vec![]);
    assert_eq!(d.stage(), &Stage::AwaitingSecondConfirm);
    assert!(d.messages()[0].starts_with("Careful: not every queue cell is done."));
    d.handle(queue(QueueLooks::Unread));
    assert_eq!(d.handle(Event::Confirm), vec![]);
    assert_eq!(
        d.stage(),
        &Stage::AwaitingSecondConfirm,
        "the queue changed: what was acknowledged no longer holds"
    );
    assert_eq!(d.handle(Event::Confirm), vec![FINAL]);
}

#[test]
fn cancel_closes_for_good() {
    let mut d = ready("b");
    typed(&mut d, "b");
    assert_eq!(d.handle(Event::Cancel), vec![]);
    assert_eq!(d.stage(), &Stage::Closed);
    assert_eq!(d.handle(Event::Confirm), vec![]);
    assert_eq!(d.handle(last_look(CURRENT)), vec![]);
    assert_eq!(d.stage(), &Stage::Closed);
}

/// The lifecycle, one row per step: (event, effects it asks for, stage after).
#[test]
fn the_whole_dialog_as_a_table() {
    let later = |s| Event::Tick(base() + Duration::from_secs(s));
    let check = Effect::Check {
        opening: OPENING,
        run: RunLooks::Dead,
    };
    let finished = Finished {
        ending: Ending::Ran(DestroyOutcome::Confirmed),
        output: vec!["destroying instance 4242.".into()],
        last: "confirmed: gone".into(),
    };
    let rows: Vec<(Event, Vec<Effect>, Stage)> = vec![
        (Event::Run(RunLooks::Dead), vec![], Stage::Checking),
        (Event::Opened, vec![check.clone()], Stage::Checking),
        (later(40), vec![], Stage::Checking),
        (
            checked_with(OPENING + 1, PlanLooks::Runs, CURRENT),
            vec![],
            Stage::Checking,
        ),
        (checked(CURRENT), vec![], Stage::AwaitingName),
        (Event::Name("b".into()), vec![], Stage::AwaitingName),
        (later(30), vec![], Stage::AwaitingName),
        (later(31), vec![check.clone()], Stage::Checking),
        (later(90), vec![], Stage::Checking),
        (checked(CURRENT), vec![], Stage::AwaitingName),
        (Event::Name("b".into()), vec![], Stage::AwaitingName),
        (Event::Invalidated, vec![], Stage::Checking),
        (later(31), vec![check.clone()], Stage::Checking),
        (checked(CURRENT), vec![], Stage::AwaitingName),
        (Event::Name("b".into()), vec![], Stage::AwaitingName),
        (Event::Confirm, vec![FINAL], Stage::FinalChecking),
        (later(120), vec![], Stage::FinalChecking),
        (
            Event::FinalChecked {
                opening: OPENING + 1,
                currentness: CURRENT,
            },
            vec![],
            Stage::FinalChecking,
        ),
        (
            last_look(CURRENT),
            vec![Effect::Destroy { pull_id: 3 }],
            Stage::Destroying { pull_id: 3 },
        ),
        (later(300), vec![], Stage::Destroying { pull_id: 3 }),
        (
            Event::Destroyed(finished.clone()),
            vec![],
            Stage::Finished(finished),
        ),
        (Event::Name("x".into()), vec![], Stage::Closed),
    ];
    let mut d = Dialog::new(Target::Box("b".into()), OPENING);
    for (n, (event, effects, stage)) in rows.into_iter().enumerate() {
        assert_eq!(d.handle(event.clone()), effects, "row {n}: {event:?}");
        assert_eq!(d.stage(), &stage, "row {n}: {event:?}");
    }
}

#[test]
fn a_refused_box_never_asks_for_the_name_whatever_is_pressed() {
    let mut d = Dialog::new(Target::Box("b".into()), OPENING);
    d.handle(Event::Opened);
    d.handle(checked(Currentness::NotCurrent(vec![
        NotCurrent::NeverPulled,
    ])));
    for e in [
        Event::Name("b".into()),
        Event::Confirm,
        Event::Confirm,
        Event::Name(String::new()),
        Event::Name("b".into()),
        Event::Confirm,
    ] {
        assert_eq!(d.handle(e), vec![]);
        assert!(matches!(d.stage(), Stage::Refused(_)), "{:?}", d.stage());
    }
    assert_eq!(d.typed(), "");
}

#[test]
fn a_refusal_never_asks_for_the_name_in_its_reasons() {
    let mut d = Dialog::new(Target::Box("box-1".into()), OPENING);
    d.handle(checked(Currentness::NotCurrent(vec![
        NotCurrent::NeverPulled,
    ])));
    let why = refused(&mut d);
    assert!(
        why.iter().all(|w| !w.contains("type the box's name")),
        "{why:?}"
    );
    assert!(!d.takes_name());
}

/// The name is whatever the prompt's editor made it (no control character, at most NAME_MAX
/// characters); a wrong one is cleared on Enter, to be typed again in full.
#[test]
fn the_name_is_taken_as_edited_and_a_wrong_one_is_cleared_on_enter() {
    let mut d = ready("h100-zombie");
    assert!(d.takes_name());
    d.handle(Event::Name("h100-\u{1b}zom\u{7}".into()));
    assert_eq!(d.typed(), "h100-zom", "no control character is taken");
    d.handle(Event::Name("x".repeat(1000)));
    assert_eq!(d.typed().chars().count(), crate::teardown::NAME_MAX);
    d.handle(Event::Name(String::new()));
    typed(&mut d, "h100-zombe");
    let why = refused(&mut d);
    assert_eq!(d.typed(), "", "a wrong name does not stay after Enter");
    assert!(
        why[0].contains("type the box's name, h100-zombie"),
        "{why:?}"
    );
    typed(&mut d, "h100-zombie");
    assert_eq!(d.handle(Event::Confirm), vec![FINAL]);
}

/// A job's dialog speaks of the job: what is typed (its cluster's name) and what it does
/// (cancel, delete), the caution for one still alive, and the refusal before the name.
#[test]
fn a_jobs_dialog_says_cancel_or_delete_and_which_name_to_type() {
    use crate::cluster::Scheduler;
    let mut d = Dialog::new(Target::job("hpc", Scheduler::Slurm, "4242"), OPENING);
    assert_eq!(
        d.confirm_prompt(),
        "Type the cluster's name, hpc, to cancel Slurm job 4242 on hpc"
    );
    d.handle(Event::Run(RunLooks::Alive));
    d.handle(checked(CURRENT));
    assert_eq!(
        d.cautions(),
        vec!["the job has not ended: it still runs or waits in the queue"]
    );
    let why = refused(&mut d);
    assert_eq!(
        why,
        vec!["type the cluster's name, hpc, to confirm".to_string()]
    );
    typed(&mut d, "hpc");
    d.handle(Event::Confirm);
    assert!(
        d.messages()[0].contains("Press Enter again to cancel it anyway"),
        "{:?}",
        d.messages()
    );
    let k = Dialog::new(Target::job("gke", Scheduler::Kubernetes, "train"), OPENING);
    assert_eq!(
        k.confirm_prompt(),
        "Type the cluster's name, gke, to delete Kubernetes Job train on gke"
    );
}
