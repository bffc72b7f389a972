//! The modal on `TestBackend`: what it says at 80×24 and larger, that every byte a box chose is
//! cleaned before it reaches the screen, and that it destroys only after the final look.

use super::*;
use crate::ledger::{PullRecord, PulledFile};
use crate::pull::Currentness;
use crate::teardown::{Method, QueueNote, RunLooks, TeardownPlan, describe};

const CURRENT: Currentness = Currentness::Current {
    pull_id: 7,
    files: 1,
    bytes: 1,
    fingerprint: 5,
};

fn name(modal: &mut TeardownModal) {
    for c in modal.host.clone().chars() {
        modal.key(GuardEvent::Key(c));
    }
}

fn words(files: usize, odd: &str) -> Description {
    let plan = TeardownPlan {
        host: "gpu-a".into(),
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
    describe(&plan, Some(&pull), RunLooks::Dead)
}

fn screen(modal: TeardownModal, width: u16, height: u16) -> String {
    let (_, state) = crate::demo::Demo::start(chrono::Utc::now());
    let mut app = crate::ui::app::App::new(true);
    app.modal = Some(modal);
    let theme = crate::ui::theme::Theme::mono();
    let ctx = Ctx {
        app: &app,
        state: &state,
        theme: &theme,
        now: chrono::Utc::now(),
        poll: std::time::Duration::from_secs(2),
    };
    crate::ui::buffer_text(&crate::ui::render_buffer(&ctx, width, height))
}

#[test]
fn at_80x24_the_verdict_command_and_prompt_stay_and_failing_files_come_first() {
    let mut modal = TeardownModal::new("gpu-a", 1);
    modal.checked(1, words(40, "f"), PlanLooks::Runs, CURRENT);
    let text = screen(modal.clone(), 80, 24);
    assert!(text.contains("will run: vastai destroy"), "{text}");
    assert!(text.contains("Type the host's name to confirm"), "{text}");
    assert!(text.contains("verified-current"), "{text}");
    assert!(
        text.contains("FAILED   /r/f3.pt"),
        "failing file first:\n{text}"
    );
    modal.scroll_by(20);
    let text = screen(modal, 80, 24);
    assert!(text.contains("more above"), "{text}");
    assert!(text.contains("Type the host's name to confirm"), "{text}");
}

#[test]
fn while_the_guard_refuses_there_is_no_name_prompt() {
    let mut modal = TeardownModal::new("gpu-a", 1);
    modal.checked(
        1,
        words(2, "f"),
        PlanLooks::Blocked("vastai is not installed".into()),
        CURRENT,
    );
    name(&mut modal);
    assert_eq!(modal.guard.typed(), "");
    let text = screen(modal, 100, 30);
    assert!(text.contains("REFUSED"), "{text}");
    assert!(text.contains("vastai is not installed"), "{text}");
    assert!(!text.contains("Type the host's name"), "{text}");
}

#[test]
fn no_byte_a_box_chose_reaches_the_screen_raw() {
    let osc = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;cGF5bG9hZA==\u{7}\u{202e}gpj";
    let mut modal = TeardownModal::new("gpu-a", 1);
    modal.checked(
        1,
        words(4, osc),
        PlanLooks::Blocked(format!("vastai lists no instance {osc}")),
        Currentness::NotCurrent(vec![crate::pull::NotCurrent::NewOnBox(format!("/w/{osc}"))]),
    );
    modal.set_queue(Some(QueueNote {
        looks: QueueLooks::NotAllDone,
        line: format!("queue: {osc}"),
    }));
    modal.messages = vec![format!("sftp: {osc}")];
    let text = screen(modal, 120, 50);
    assert!(text.contains("pwned"), "the text itself is shown:\n{text}");
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' || c == '\u{202e}'),
        "{text:?}"
    );
}

#[test]
fn a_check_from_an_earlier_opening_is_ignored() {
    let mut modal = TeardownModal::new("gpu-a", 2);
    modal.checked(1, words(1, "f"), PlanLooks::Runs, CURRENT);
    assert_eq!(modal.phase, Phase::Checking);
    name(&mut modal);
    assert!(matches!(modal.key(GuardEvent::Confirm), ModalAction::None));
}

#[test]
fn cells_not_done_ask_twice_and_the_destroy_waits_for_the_final_look() {
    let mut modal = TeardownModal::new("b", 1);
    modal.set_queue(Some(QueueNote {
        looks: QueueLooks::NotAllDone,
        line: "queue: 1 of 3 cells not done (1 failed)".into(),
    }));
    modal.checked(1, Description::default(), PlanLooks::Runs, CURRENT);
    name(&mut modal);
    assert_eq!(modal.key(GuardEvent::Confirm), ModalAction::None);
    assert!(
        modal.messages[0].starts_with("Careful: not every queue cell is done."),
        "{:?}",
        modal.messages
    );
    let text = screen(modal.clone(), 120, 40);
    assert!(
        text.contains("⚠ queue: 1 of 3 cells not done (1 failed)"),
        "{text}"
    );
    assert_eq!(
        modal.key(GuardEvent::Confirm),
        ModalAction::FinalCheck { opening: 1 }
    );
    assert_eq!(
        modal.final_checked(1, CURRENT),
        ModalAction::Destroy { pull_id: 7 }
    );
}

#[test]
fn an_aged_check_no_longer_counts() {
    let mut modal = TeardownModal::new("b", 1);
    modal.checked(1, Description::default(), PlanLooks::Runs, CURRENT);
    name(&mut modal);
    let later = std::time::Instant::now() + CHECK_MAX_AGE + Duration::from_secs(1);
    assert!(modal.age(later));
    assert_eq!(modal.guard.typed(), "");
    assert!(matches!(modal.key(GuardEvent::Confirm), ModalAction::None));
}
