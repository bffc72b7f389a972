//! `T`: the teardown modal, over whatever is on screen. It shows what a destroy means and the
//! pull it would rely on, says why it refuses, and takes the host's name typed in full.

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Ctx;
use crate::ledger::DestroyOutcome;
use crate::pull::Currentness;
use crate::teardown::{
    Description, Guard, GuardEvent, GuardOutcome, PlanLooks, QueueLooks, QueueNote,
};

/// A check shown longer than this no longer counts: the guard drops it and a new one is taken.
pub const CHECK_MAX_AGE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the fresh listing of the box and re-hash of the local copies.
    Checking,
    Open,
    /// The guard fired; the destroy command is running.
    Running,
    /// The destroy's outcome (None: refused, nothing ran) and its last line.
    Finished {
        outcome: Option<DestroyOutcome>,
        last: String,
    },
}

#[derive(Debug, Clone)]
pub struct TeardownModal {
    pub host: String,
    pub guard: Guard,
    /// What the destroy means, from `teardown::describe`.
    pub words: Description,
    /// The host's queue as the roster has it now; None without a queue.
    pub queue: Option<QueueNote>,
    pub phase: Phase,
    /// The answer to the last Enter, or the command's output.
    pub messages: Vec<String>,
    /// First line of the file list shown (Up/Down, PgUp/PgDn).
    pub scroll: usize,
    /// When the check on screen arrived.
    pub checked_at: Option<Instant>,
}

/// What a key or a job's answer asks the event loop to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModalAction {
    None,
    Close,
    /// Take the final look at the box, for this opening.
    FinalCheck {
        opening: u64,
    },
    Destroy {
        pull_id: i64,
    },
}

impl TeardownModal {
    pub fn new(host: &str, opening: u64) -> TeardownModal {
        TeardownModal {
            host: host.to_string(),
            guard: Guard::new(host, opening),
            words: Description::default(),
            queue: None,
            phase: Phase::Checking,
            messages: Vec::new(),
            scroll: 0,
            checked_at: None,
        }
    }

    /// A check (and the plan's readiness) for `opening`; one for an earlier opening is ignored.
    pub fn checked(
        &mut self,
        opening: u64,
        words: Description,
        plan: PlanLooks,
        currentness: Currentness,
    ) {
        if opening != self.guard.opening() {
            return;
        }
        self.words = words;
        self.guard.handle(GuardEvent::Plan(plan));
        self.guard.handle(GuardEvent::Checked {
            opening,
            currentness,
        });
        self.checked_at = Some(Instant::now());
        if self.phase == Phase::Checking {
            self.phase = Phase::Open;
        }
    }

    /// True when the check on screen is too old to count; the guard has then dropped it.
    pub fn age(&mut self, now: Instant) -> bool {
        let old = self
            .checked_at
            .is_some_and(|at| now.duration_since(at) > CHECK_MAX_AGE);
        if old && self.phase == Phase::Open && !self.guard.final_pending() {
            self.guard.handle(GuardEvent::Aged);
            self.checked_at = None;
            self.messages = vec!["the check got old; looking at the box again…".to_string()];
            return true;
        }
        false
    }

    /// Follows the roster: the queue line, and whether the guard asks twice.
    pub fn set_queue(&mut self, note: Option<QueueNote>) {
        let looks = note.as_ref().map_or(QueueLooks::NoQueue, |n| n.looks);
        self.guard.handle(GuardEvent::Queue(looks));
        self.queue = note;
    }

    pub fn scroll_by(&mut self, lines: isize) {
        let max = self.words.files.len().saturating_sub(1);
        self.scroll = self.scroll.saturating_add_signed(lines).min(max);
    }

    pub fn key(&mut self, event: GuardEvent) -> ModalAction {
        if matches!(self.phase, Phase::Finished { .. }) {
            return ModalAction::Close;
        }
        if self.phase == Phase::Running {
            return ModalAction::None;
        }
        let outcome = self.guard.handle(event);
        self.outcome(outcome)
    }

    /// The final look the guard asked for.
    pub fn final_checked(&mut self, opening: u64, currentness: Currentness) -> ModalAction {
        if self.phase != Phase::Open {
            return ModalAction::None;
        }
        let outcome = self.guard.handle(GuardEvent::FinalChecked {
            opening,
            currentness,
        });
        self.outcome(outcome)
    }

    fn outcome(&mut self, outcome: GuardOutcome) -> ModalAction {
        match outcome {
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
            GuardOutcome::TakeFinalCheck => {
                self.messages = vec![if self.words.final_check.is_empty() {
                    "taking a last look at the box before acting…".to_string()
                } else {
                    format!(
                        "taking a last look at the box before acting: {}…",
                        self.words.final_check
                    )
                }];
                ModalAction::FinalCheck {
                    opening: self.guard.opening(),
                }
            }
            GuardOutcome::Fire { pull_id } => {
                self.phase = Phase::Running;
                self.messages = vec!["running the destroy command…".to_string()];
                ModalAction::Destroy { pull_id }
            }
            GuardOutcome::Nothing => {
                if !self.guard.final_pending() {
                    self.messages.clear();
                }
                ModalAction::None
            }
        }
    }
}

/// The verdict, what will run, the prompt and the messages: always on screen, whatever the
/// size; the description and file list above them scroll.
fn footer<'a>(modal: &'a TeardownModal, t: &super::theme::Theme, demo: bool) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if let Some(note) = &modal.queue {
        lines.push(if note.looks.needs_second_confirm() {
            Line::styled(
                format!(" ⚠ {}", crate::sanitize::line(&note.line, 300)),
                t.crit,
            )
        } else {
            Line::styled(
                format!(" ✓ {}", crate::sanitize::line(&note.line, 300)),
                t.ok,
            )
        });
    }
    if !modal.words.action.is_empty() {
        lines.push(Line::styled(
            format!(" {}", modal.words.action.trim_start()),
            t.accent,
        ));
    }
    match &modal.phase {
        Phase::Checking => lines.push(Line::styled(
            " checking the last pull against a fresh listing of the box…",
            t.stale,
        )),
        Phase::Open => {
            let blockers = modal.guard.blockers();
            if blockers.is_empty() {
                lines.push(Line::styled(
                    " The last pull is verified-current: every file hashed on both ends and loads.",
                    t.ok,
                ));
                lines.push(Line::from(vec![
                    Span::styled(" Type the host's name to confirm: ", t.accent),
                    Span::styled(format!("{}▏", modal.guard.typed()), t.header),
                ]));
            } else {
                lines.push(Line::styled(" REFUSED — not until:", t.crit));
                for r in blockers {
                    lines.push(Line::styled(format!("   • {r}"), t.crit));
                }
            }
        }
        Phase::Running => {}
        Phase::Finished { .. } if demo => lines.push(Line::styled(
            " Demo: the guard let it through; nothing was destroyed or recorded. Any key closes.",
            t.ok,
        )),
        Phase::Finished { outcome, last } => lines.push(Line::styled(
            format!(" {}. Any key closes.", crate::sanitize::line(last, 600)),
            match outcome {
                Some(DestroyOutcome::Confirmed) => t.ok,
                Some(DestroyOutcome::Unconfirmed) => t.warn,
                Some(DestroyOutcome::Failed) | None => t.crit,
            },
        )),
    }
    for m in &modal.messages {
        lines.push(Line::styled(
            format!(" {}", crate::sanitize::line(m, 400)),
            t.warn,
        ));
    }
    lines.push(Line::styled(
        " Enter confirm · Esc cancel · ↑↓ PgUp PgDn scroll the files",
        t.stale,
    ));
    lines
}

fn rows(lines: &[Line<'_>], inner: usize) -> usize {
    lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum()
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>, modal: &TeardownModal) {
    let t = ctx.theme;
    let width = area.width.min(110);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let footer = footer(modal, t, ctx.app.demo);
    let mut body: Vec<Line> = modal
        .words
        .head
        .iter()
        .map(|l| Line::styled(format!(" {l}"), t.text))
        .collect();
    let files = &modal.words.files;
    let first = modal.scroll.min(files.len().saturating_sub(1));
    if first > 0 {
        body.push(Line::styled(format!("    ↑ {first} more above"), t.stale));
    }
    body.extend(
        files[first.min(files.len())..]
            .iter()
            .map(|l| Line::styled(format!(" {l}"), t.text)),
    );
    // The footer is never cut: the body gets what is left, at least nothing.
    let room = usize::from(area.height.saturating_sub(2));
    let footer_rows = rows(&footer, inner).min(room);
    let body_room = room - footer_rows;
    let body_rows = rows(&body, inner).min(body_room);
    let height = u16::try_from(body_rows + footer_rows + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" Teardown {} — guarded ", modal.host))
        .border_style(t.crit);
    let inside = block.inner(popup);
    frame.render_widget(block, popup);
    let body_height = u16::try_from(body_rows).unwrap_or(0);
    let body_area = Rect {
        height: body_height.min(inside.height),
        ..inside
    };
    let footer_area = Rect {
        y: inside.y + body_area.height,
        height: inside.height - body_area.height,
        ..inside
    };
    frame.render_widget(Paragraph::new(body).wrap(Wrap { trim: false }), body_area);
    frame.render_widget(
        Paragraph::new(footer).wrap(Wrap { trim: false }),
        footer_area,
    );
}

#[cfg(test)]
#[path = "teardown_modal_tests.rs"]
mod tests;
