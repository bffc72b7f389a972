//! The modal on `TestBackend`: what it says at 80×24 and larger, that every byte a box chose is
//! cleaned before it reaches the screen, and the whole dialog end to end — keys through the
//! app, effects through the one executor with the test I/O, every step rendered.
//!
//! Past 400 lines: a table of cases, each read on its own.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::ledger::{PullRecord, PulledFile};
use crate::pull::{Currentness, NotCurrent};
use crate::teardown::scripted::ScriptedIo;
use crate::teardown::{
    CHECK_MAX_AGE, CheckFound, Description, Effect, Method, PlanLooks, QueueLooks, QueueNote,
    RunLooks, TeardownPlan, describe, execute,
};
use crate::ui::app::{Action, App};

const CURRENT: Currentness = Currentness::Current {
    pull_id: 7,
    files: 1,
    bytes: 1,
    fingerprint: 5,
};

fn words(files: usize, odd: &str) -> Description {
    let plan = TeardownPlan {
        host: "gpu-a".into(),
        target: crate::target::Target::Box("gpu-a".into()),
        platform: "vast.ai".into(),
        instance_id: Some("4242".into()),
        method: Method::Command {
            command: "vastai destroy instance '4242' -y".into(),
        },
        destroyed: vec!["the container disk".into()],
        survives: vec![],
        reversible: false,
        still_bills: "nothing".into(),
        stops_per_hour: Some(1.0),
        currency: "USD".into(),
    };
    let file = |i: usize| PulledFile {
        remote_path: format!("/w/{odd}{i}.pt"),
        size: 5,
        mtime: 1,
        stamp: Some("1.0 1.0 1".into()),
        remote_sha256: Some("ab".repeat(32)),
        local_path: format!("/r/{odd}{i}.pt"),
        local_sha256: Some("ab".repeat(32)),
        sent: 5,
        verified: i != 3,
        unproven: false,
        local_stat: None,
        settled_since: None,
        verification: if i == 3 {
            format!("failed: {odd}")
        } else {
            "zip".into()
        },
        error: None,
        at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
    };
    let pull = PullRecord {
        id: 7,
        host: "gpu-a".into(),
        started: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        finished: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        paths: vec!["/w".into()],
        unmatched: vec![],
        instance_id: Some("4242".into()),
        files: (0..files).map(file).collect(),
        local_disk_full: false,
    };
    describe(
        &plan,
        Some(&pull),
        RunLooks::Dead,
        crate::teardown::FinalCheck::OnBox,
    )
}

/// A modal whose check (for `opening`) found this.
fn checked(
    host: &str,
    opening: u64,
    words: Description,
    plan: PlanLooks,
    c: Currentness,
) -> TeardownModal {
    let mut dialog = Dialog::new(crate::target::Target::Box(host.to_string()), 1);
    let found = CheckFound {
        words,
        plan,
        currentness: c,
    };
    dialog.handle(found.answer(opening, std::time::Instant::now()));
    TeardownModal::new(dialog)
}

fn name(modal: &mut TeardownModal) {
    for c in modal.host().to_string().chars() {
        modal.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
}

fn screen_of(app: &App, width: u16, height: u16) -> String {
    let (_, state) = crate::demo::Demo::start(chrono::Utc::now());
    let theme = crate::ui::theme::Theme::mono();
    let ctx = Ctx {
        app,
        state: &state,
        theme: &theme,
        now: chrono::Utc::now(),
        poll: std::time::Duration::from_secs(2),
    };
    crate::ui::buffer_text(&crate::ui::render_buffer(&ctx, width, height))
}

fn screen(modal: TeardownModal, width: u16, height: u16) -> String {
    let mut app = App::new(false);
    app.modal = Some(modal);
    screen_of(&app, width, height)
}

#[test]
fn at_80x24_the_verdict_command_and_prompt_stay_and_failing_files_come_first() {
    let mut modal = checked("gpu-a", 1, words(40, "f"), PlanLooks::Runs, CURRENT);
    let text = screen(modal.clone(), 80, 24);
    assert!(text.contains("will run: vastai destroy"), "{text}");
    assert!(text.contains("Type the box's name to destroy it"), "{text}");
    assert!(text.contains("verified-current"), "{text}");
    assert!(
        text.contains("FAILED   /r/f3.pt"),
        "failing file first:\n{text}"
    );
    modal.scroll_by(20);
    let text = screen(modal, 80, 24);
    assert!(text.contains("more above"), "{text}");
    assert!(text.contains("Type the box's name to destroy it"), "{text}");
}

#[test]
fn while_the_guard_refuses_there_is_no_name_prompt() {
    let mut modal = checked(
        "gpu-a",
        1,
        words(2, "f"),
        PlanLooks::Blocked("vastai is not installed".into()),
        CURRENT,
    );
    name(&mut modal);
    assert_eq!(modal.dialog.typed(), "");
    let text = screen(modal, 100, 30);
    assert!(text.contains("REFUSED"), "{text}");
    assert!(text.contains("vastai is not installed"), "{text}");
    assert!(!text.contains("Type the box's name"), "{text}");
}

#[test]
fn no_byte_a_box_chose_reaches_the_screen_raw() {
    let osc = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;cGF5bG9hZA==\u{7}\u{202e}gpj";
    let mut modal = checked(
        "gpu-a",
        1,
        words(4, osc),
        PlanLooks::Blocked(format!("vastai lists no instance {osc}")),
        Currentness::NotCurrent(vec![NotCurrent::NewOnBox(format!("/w/{osc}"))]),
    );
    modal.dialog.handle(Event::Queue(Some(QueueNote {
        looks: QueueLooks::NotAllDone,
        line: format!("queue: {osc}"),
    })));
    // Enter: the refusal's reasons, the box's names among them, become the messages.
    modal.dialog.handle(Event::Confirm);
    assert!(modal.dialog.messages().iter().any(|m| m.contains("gpj")));
    let text = screen(modal, 120, 50);
    assert!(
        text.contains("vastai lists no instance gpj") && !text.contains("pwned"),
        "the text is shown, the sequences taken out whole:\n{text}"
    );
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' || c == '\u{202e}'),
        "{text:?}"
    );
}

#[test]
fn a_check_from_an_earlier_opening_is_ignored() {
    let mut modal = checked("gpu-a", 2, words(1, "f"), PlanLooks::Runs, CURRENT);
    assert_eq!(modal.dialog.stage(), &Stage::Checking);
    name(&mut modal);
    assert_eq!(modal.dialog.handle(Event::Confirm), vec![]);
    let text = screen(modal, 100, 30);
    assert!(text.contains("checking the last pull"), "{text}");
}

#[test]
fn cells_not_done_ask_twice_and_the_destroy_waits_for_the_final_look() {
    let mut modal = checked("b", 1, Description::default(), PlanLooks::Runs, CURRENT);
    modal.dialog.handle(Event::Queue(Some(QueueNote {
        looks: QueueLooks::NotAllDone,
        line: "queue: 1 of 3 cells not done (1 failed)".into(),
    })));
    name(&mut modal);
    assert_eq!(modal.dialog.handle(Event::Confirm), vec![]);
    assert!(
        modal.dialog.messages()[0].starts_with("Careful: not every queue cell is done."),
        "{:?}",
        modal.dialog.messages()
    );
    let text = screen(modal.clone(), 120, 40);
    assert!(
        text.contains("⚠ queue: 1 of 3 cells not done (1 failed)"),
        "{text}"
    );
    assert_eq!(
        modal.dialog.handle(Event::Confirm),
        vec![Effect::FinalCheck { opening: 1 }]
    );
    assert_eq!(
        modal.dialog.handle(Event::FinalChecked {
            opening: 1,
            currentness: CURRENT
        }),
        vec![Effect::Destroy { pull_id: 7 }]
    );
}

#[test]
fn an_aged_check_no_longer_counts() {
    let mut modal = checked("b", 1, Description::default(), PlanLooks::Runs, CURRENT);
    name(&mut modal);
    let later = std::time::Instant::now() + CHECK_MAX_AGE + std::time::Duration::from_secs(1);
    assert_eq!(
        modal.dialog.handle(Event::Tick(later)),
        vec![Effect::Check {
            opening: 1,
            run: RunLooks::Unknown
        }]
    );
    assert_eq!(modal.dialog.typed(), "");
    let text = screen(modal.clone(), 100, 30);
    assert!(text.contains("the check got old"), "{text}");
    assert!(text.contains("checking the last pull"), "{text}");
    assert_eq!(modal.dialog.handle(Event::Confirm), vec![]);
}

fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
    let (_, state) = crate::demo::Demo::start(chrono::Utc::now());
    match app.handle_key(KeyEvent::new(code, KeyModifiers::NONE), &state) {
        Action::Dialog { effects, .. } => effects,
        _ => Vec::new(),
    }
}

/// What the event loop does with the dialog's effects: each through the one executor, its
/// answer back into the dialog, until nothing more is asked.
async fn carry_out(app: &mut App, io: &ScriptedIo, effects: Vec<Effect>) {
    let mut pending = effects;
    while let Some(effect) = pending.pop() {
        let event = execute(io, effect).await;
        if let Some(modal) = app.modal.as_mut() {
            pending.extend(modal.dialog.handle(event));
        }
    }
}

fn scripted(currentness: Currentness) -> ScriptedIo {
    ScriptedIo::unrecorded_destroy(words(2, "f"), currentness)
}

fn opened(host: &str) -> (App, Vec<Effect>) {
    let mut app = App::new(false);
    let mut dialog = Dialog::new(crate::target::Target::Box(host.to_string()), 1);
    dialog.handle(Event::Run(RunLooks::Alive));
    let effects = dialog.handle(Event::Opened);
    app.modal = Some(TeardownModal::new(dialog));
    (app, effects)
}

#[tokio::test]
async fn the_dialog_end_to_end_open_check_name_second_confirm_final_look_destroy() {
    let io = scripted(CURRENT);
    let (mut app, effects) = opened("gpu-a");
    let text = screen_of(&app, 120, 40);
    assert!(text.contains("checking the last pull"), "{text}");
    carry_out(&mut app, &io, effects).await;
    let text = screen_of(&app, 120, 40);
    assert!(
        text.contains("Type the box's name to destroy it: ▏"),
        "{text}"
    );
    for c in "gpu-a".chars() {
        assert_eq!(press(&mut app, KeyCode::Char(c)), vec![]);
    }
    assert!(screen_of(&app, 120, 40).contains("Type the box's name to destroy it: gpu-a▏"));
    // The run still looks alive: the first Enter asks again and asks for nothing yet.
    assert_eq!(press(&mut app, KeyCode::Enter), vec![]);
    let text = screen_of(&app, 120, 40);
    assert!(
        text.contains("Careful: the run still looks alive on this box"),
        "{text}"
    );
    assert_eq!(io.asked(), vec!["check"]);
    let effects = press(&mut app, KeyCode::Enter);
    assert_eq!(effects, vec![Effect::FinalCheck { opening: 1 }]);
    let text = screen_of(&app, 120, 40);
    assert!(text.contains("taking a last look at the box"), "{text}");
    carry_out(&mut app, &io, effects).await;
    assert_eq!(io.asked(), vec!["check", "final check", "destroy #7"]);
    let text = screen_of(&app, 120, 40);
    assert!(text.contains("destroying instance 4242."), "{text}");
    assert!(
        text.contains("OUTCOME NOT RECORDED: database is locked."),
        "what the destroy said is shown though its outcome was not recorded:\n{text}"
    );
    press(&mut app, KeyCode::Char('x'));
    assert!(app.modal.is_none(), "any key closes");
}

#[tokio::test]
async fn the_dialog_end_to_end_refused_takes_no_name_and_runs_nothing() {
    let io = scripted(Currentness::NotCurrent(vec![NotCurrent::NeverPulled]));
    let (mut app, effects) = opened("gpu-a");
    carry_out(&mut app, &io, effects).await;
    for code in [
        KeyCode::Char('g'),
        KeyCode::Enter,
        KeyCode::Char('g'),
        KeyCode::Enter,
    ] {
        assert_eq!(press(&mut app, code), vec![]);
    }
    let text = screen_of(&app, 120, 40);
    assert!(text.contains("REFUSED — not until:"), "{text}");
    assert!(
        text.contains(&NotCurrent::NeverPulled.to_string()),
        "{text}"
    );
    assert!(
        !text.contains("Type the box's name to destroy it"),
        "{text}"
    );
    // Enter on a refused box says why it refuses, never to type the name.
    assert!(
        !text.contains("type the box's name, gpu-a, to confirm"),
        "{text}"
    );
    assert_eq!(io.asked(), vec!["check"]);
    press(&mut app, KeyCode::Esc);
    assert!(app.modal.is_none());
}

/// The name prompt is the one line editor of every prompt: the cursor moves (← → Home End,
/// Ctrl-A/E, Alt-B/F), a typo mid-name is mended where it is, Ctrl-W/U erase before the
/// cursor, no other chord types its letter, and the cursor is drawn where typing goes.
#[test]
fn the_name_prompt_is_the_one_line_editor_with_a_cursor() {
    use crossterm::event::KeyModifiers as M;
    let mut modal = checked("gpu-a", 1, words(2, "f"), PlanLooks::Runs, CURRENT);
    let keys = |modal: &mut TeardownModal, keys: &[(KeyCode, M)]| {
        for (code, mods) in keys {
            assert_eq!(modal.key(KeyEvent::new(*code, *mods)), vec![]);
        }
    };
    let typing = |text: &str| -> Vec<(KeyCode, M)> {
        text.chars().map(|c| (KeyCode::Char(c), M::NONE)).collect()
    };
    keys(&mut modal, &typing("gpua"));
    keys(&mut modal, &[(KeyCode::Left, M::NONE)]);
    keys(&mut modal, &typing("-"));
    assert_eq!(modal.dialog.typed(), "gpu-a");
    keys(
        &mut modal,
        &[(KeyCode::Home, M::NONE), (KeyCode::Char('x'), M::CONTROL)],
    );
    assert_eq!(modal.dialog.typed(), "gpu-a", "Ctrl-X types no x");
    let text = screen(modal.clone(), 100, 30);
    assert!(text.contains("▏gpu-a"), "the cursor at the start: {text}");
    keys(
        &mut modal,
        &[(KeyCode::End, M::NONE), (KeyCode::Char('w'), M::CONTROL)],
    );
    assert_eq!(modal.dialog.typed(), "");
    keys(&mut modal, &typing("gpu-a"));
    keys(&mut modal, &[(KeyCode::Char('u'), M::CONTROL)]);
    assert_eq!(modal.dialog.typed(), "");
    keys(&mut modal, &typing("gpu-a"));
    assert_eq!(
        modal.key(KeyEvent::new(KeyCode::Enter, M::NONE)),
        vec![Effect::FinalCheck { opening: 1 }]
    );
    assert_eq!(modal.dialog.stage(), &Stage::FinalChecking);
}

#[tokio::test]
async fn a_refused_box_offers_no_enter_to_confirm() {
    let io = scripted(Currentness::NotCurrent(vec![NotCurrent::NeverPulled]));
    let (mut app, effects) = opened("gpu-a");
    carry_out(&mut app, &io, effects).await;
    let text = screen_of(&app, 120, 40);
    assert!(text.contains("Esc close"), "{text}");
    assert!(!text.contains("Enter confirm"), "{text}");
}
