//! `T`: the teardown modal, over whatever is on screen. It shows what a destroy means and the
//! pull it would rely on, says why it refuses, and takes the host's name typed in full.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Ctx;
use crate::pull::Currentness;
use crate::teardown::{Guard, GuardEvent, GuardOutcome, QueueLooks, QueueNote};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the fresh listing of the box and re-hash of the local copies.
    Checking,
    Open,
    /// The guard fired; the destroy command is running.
    Running,
    Finished {
        ok: bool,
    },
}

#[derive(Debug, Clone)]
pub struct TeardownModal {
    pub host: String,
    pub guard: Guard,
    /// What the destroy means, from `teardown::describe`.
    pub lines: Vec<String>,
    /// The host's queue as the roster has it now; None without a queue.
    pub queue: Option<QueueNote>,
    pub phase: Phase,
    /// The answer to the last Enter, or the command's output.
    pub messages: Vec<String>,
}

/// What a key in the modal asks the event loop to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModalAction {
    None,
    Close,
    Destroy { pull_id: i64 },
}

impl TeardownModal {
    pub fn new(host: &str, lines: Vec<String>) -> TeardownModal {
        TeardownModal {
            host: host.to_string(),
            guard: Guard::new(host),
            lines,
            queue: None,
            phase: Phase::Checking,
            messages: Vec::new(),
        }
    }

    pub fn checked(&mut self, lines: Vec<String>, currentness: Currentness) {
        self.lines = lines;
        self.guard.handle(GuardEvent::Checked(currentness));
        if self.phase == Phase::Checking {
            self.phase = Phase::Open;
        }
    }

    /// Follows the roster: the queue line, and whether the guard asks twice.
    pub fn set_queue(&mut self, note: Option<QueueNote>) {
        let looks = note.as_ref().map_or(QueueLooks::NoQueue, |n| n.looks);
        self.guard.handle(GuardEvent::Queue(looks));
        self.queue = note;
    }

    pub fn key(&mut self, event: GuardEvent) -> ModalAction {
        if matches!(self.phase, Phase::Finished { .. }) {
            return ModalAction::Close;
        }
        if self.phase == Phase::Running {
            return ModalAction::None;
        }
        match self.guard.handle(event) {
            GuardOutcome::Closed => ModalAction::Close,
            GuardOutcome::Refused(why) => {
                self.messages = why;
                ModalAction::None
            }
            GuardOutcome::NeedsSecondConfirm => {
                self.messages = vec![format!(
                    "Careful: {}. Press Enter again to destroy it anyway, Esc to cancel.",
                    self.guard.cautions().join("; ")
                )];
                ModalAction::None
            }
            GuardOutcome::Fire { pull_id } => {
                self.phase = Phase::Running;
                self.messages = vec!["running the destroy command…".to_string()];
                ModalAction::Destroy { pull_id }
            }
            GuardOutcome::Nothing => {
                self.messages.clear();
                ModalAction::None
            }
        }
    }
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>, modal: &TeardownModal) {
    let t = ctx.theme;
    let mut lines: Vec<Line> = modal
        .lines
        .iter()
        .map(|l| Line::styled(format!(" {l}"), t.text))
        .collect();
    if let Some(note) = &modal.queue {
        lines.push(if note.looks.needs_second_confirm() {
            Line::styled(format!(" ⚠ {}", note.line), t.crit)
        } else {
            Line::styled(format!(" ✓ {}", note.line), t.ok)
        });
    }
    lines.push(Line::raw(""));
    match &modal.phase {
        Phase::Checking => lines.push(Line::styled(
            " checking the last pull against a fresh listing of the box…",
            t.stale,
        )),
        Phase::Open => {
            let refusals = modal.guard.refusals();
            let blocking: Vec<&String> = refusals
                .iter()
                .filter(|r| !r.starts_with("type the host's name"))
                .collect();
            if blocking.is_empty() {
                lines.push(Line::styled(
                    " The last pull is verified-current: every file hashed on both ends and loads.",
                    t.ok,
                ));
            } else {
                lines.push(Line::styled(" REFUSED — not until:", t.crit));
                for r in blocking {
                    lines.push(Line::styled(format!("   • {r}"), t.crit));
                }
            }
            lines.push(Line::from(vec![
                Span::styled(" Type the host's name to confirm: ", t.accent),
                Span::styled(format!("{}▏", modal.guard.typed()), t.header),
            ]));
        }
        Phase::Running => {}
        Phase::Finished { ok } => lines.push(Line::styled(
            if *ok {
                " Done; recorded in the ledger. Any key closes."
            } else {
                " THE DESTROY FAILED; recorded in the ledger. Any key closes."
            },
            if *ok { t.ok } else { t.crit },
        )),
    }
    for m in &modal.messages {
        lines.push(Line::styled(format!(" {m}"), t.warn));
    }
    lines.push(Line::styled(" Enter confirm · Esc cancel", t.stale));
    let width = area.width.min(110);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let wrapped: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    let height = u16::try_from(wrapped + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" Teardown {} — guarded ", modal.host))
                .border_style(t.crit),
        ),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pull::Currentness;
    use crate::teardown::QueueNote;

    const CURRENT: Currentness = Currentness::Current {
        pull_id: 7,
        files: 1,
        bytes: 1,
    };

    fn name(modal: &mut TeardownModal) {
        for c in modal.host.clone().chars() {
            modal.key(GuardEvent::Key(c));
        }
    }

    #[test]
    fn cells_not_done_show_in_red_and_ask_for_a_second_enter() {
        let (_, state) = crate::demo::Demo::start(chrono::Utc::now());
        let host = state.hosts[0].config.name.clone();
        let mut modal = TeardownModal::new(&host, vec!["Destroy it".into()]);
        modal.set_queue(Some(QueueNote {
            looks: QueueLooks::NotAllDone,
            line: "queue: 1 of 3 cells not done (1 failed)".into(),
        }));
        modal.checked(vec!["Destroy it".into()], CURRENT);
        name(&mut modal);
        assert_eq!(modal.key(GuardEvent::Confirm), ModalAction::None);
        assert!(
            modal.messages[0].starts_with("Careful: not every queue cell is done."),
            "{:?}",
            modal.messages
        );

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
        let buffer = crate::ui::render_buffer(&ctx, 120, 40);
        let text = crate::ui::buffer_text(&buffer);
        assert!(
            text.contains("⚠ queue: 1 of 3 cells not done (1 failed)"),
            "{text}"
        );
        let Some(modal) = app.modal.as_mut() else {
            panic!("the modal is open");
        };
        assert_eq!(
            modal.key(GuardEvent::Confirm),
            ModalAction::Destroy { pull_id: 7 }
        );
    }

    #[test]
    fn a_reconciled_queue_needs_one_enter() {
        let mut modal = TeardownModal::new("b", Vec::new());
        modal.set_queue(Some(QueueNote {
            looks: QueueLooks::AllDone,
            line: "queue: all 3 cells done, 3 verified".into(),
        }));
        modal.checked(Vec::new(), CURRENT);
        name(&mut modal);
        assert_eq!(
            modal.key(GuardEvent::Confirm),
            ModalAction::Destroy { pull_id: 7 }
        );
    }
}
