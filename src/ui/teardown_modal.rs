//! `T`: the teardown modal, over whatever is on screen. It feeds keys to the one teardown driver
//! (`teardown::Dialog`) and renders its state: what a destroy means and the pull it would rely
//! on, why it refuses, the host's name as typed, and what the destroy said.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Ctx;
use crate::ledger::DestroyOutcome;
use crate::teardown::{Dialog, Ending, Event, Stage};

/// The dialog on screen: the one teardown driver, how far its file list is scrolled, and
/// where the name prompt's cursor is.
#[derive(Debug, Clone)]
pub struct TeardownModal {
    pub dialog: Dialog,
    /// First line of the file list shown (Up/Down, PgUp/PgDn).
    pub scroll: usize,
    /// The name prompt's cursor, a character index (None: the end).
    cursor: Option<usize>,
}

impl TeardownModal {
    pub fn new(dialog: Dialog) -> TeardownModal {
        TeardownModal {
            dialog,
            scroll: 0,
            cursor: None,
        }
    }

    /// A key to the dialog: Esc cancels, Enter confirms, and every other key edits the name
    /// with the one line editor of every prompt (`line_edit`), its cursor kept here. The
    /// driver takes the name or not; a cursor past what it kept goes to the end.
    pub fn key(&mut self, key: crossterm::event::KeyEvent) -> Vec<crate::teardown::Effect> {
        use crossterm::event::KeyCode;
        let event = match key.code {
            KeyCode::Esc => Event::Cancel,
            KeyCode::Enter => Event::Confirm,
            _ => {
                let mut name = self.dialog.typed().to_string();
                super::line_edit::edit(&mut name, &mut self.cursor, key, crate::teardown::NAME_MAX);
                Event::Name(name)
            }
        };
        let effects = self.dialog.handle(event);
        let kept = self.dialog.typed().chars().count();
        if self.cursor.is_some_and(|c| c >= kept) {
            self.cursor = None;
        }
        effects
    }

    pub fn host(&self) -> &str {
        self.dialog.host()
    }

    pub fn scroll_by(&mut self, lines: isize) {
        let max = self.dialog.words().files.len().saturating_sub(1);
        self.scroll = self.scroll.saturating_add_signed(lines).min(max);
    }
}

/// The verdict, what will run, the prompt and the messages: always on screen, whatever the
/// size; the description and file list above them scroll.
fn footer<'a>(dialog: &'a Dialog, cursor: Option<usize>, t: &super::theme::Theme) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    let words = dialog.words();
    if let Some(note) = dialog.queue() {
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
    if !words.action.is_empty() {
        lines.push(Line::styled(
            format!(" {}", words.action.trim_start()),
            t.accent,
        ));
    }
    match dialog.stage() {
        Stage::Checking => lines.push(Line::styled(
            " checking the last pull against a fresh listing of the box…",
            t.stale,
        )),
        Stage::Refused(why) => {
            lines.push(Line::styled(" REFUSED — not until:", t.crit));
            for r in why {
                lines.push(Line::styled(
                    format!("   • {}", crate::sanitize::line(r, 400)),
                    t.crit,
                ));
            }
        }
        Stage::AwaitingName | Stage::AwaitingSecondConfirm | Stage::FinalChecking => {
            lines.push(Line::styled(
                " The last pull is verified-current: every file hashed on both ends and loads.",
                t.ok,
            ));
            lines.push(Line::from(vec![
                Span::styled(format!(" {}: ", dialog.confirm_prompt()), t.accent),
                Span::styled(
                    super::line_edit::with_cursor(dialog.typed(), cursor),
                    t.header,
                ),
            ]));
        }
        Stage::Destroying { .. } | Stage::Closed => {}
        Stage::Finished(finished) => lines.push(Line::styled(
            format!(" {}.", crate::sanitize::line(&finished.last, 600)),
            match finished.ending {
                Ending::Ran(DestroyOutcome::Confirmed) | Ending::Rehearsed => t.ok,
                Ending::Ran(DestroyOutcome::Unconfirmed) => t.warn,
                Ending::Ran(DestroyOutcome::Failed) | Ending::Refused => t.crit,
            },
        )),
    }
    for m in dialog.messages() {
        lines.push(Line::styled(
            format!(" {}", crate::sanitize::line(m, 400)),
            t.warn,
        ));
    }
    // Enter is offered only where it can confirm: not while the evidence refuses.
    lines.push(Line::styled(
        match dialog.stage() {
            _ if dialog.takes_name() => {
                " Enter confirm · Ctrl-U clear · Esc cancel · ↑↓ PgUp PgDn scroll the files"
            }
            Stage::Destroying { .. } => " the destroy runs: its outcome is shown here when it ends",
            Stage::Finished(_) => " any key closes",
            _ => " Esc close · ↑↓ PgUp PgDn scroll the files",
        },
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
    let footer = super::widgets::indent_wrapped(footer(&modal.dialog, modal.cursor, t), inner);
    let words = modal.dialog.words();
    let mut body: Vec<Line> = words
        .head
        .iter()
        .map(|l| Line::styled(format!(" {l}"), t.text))
        .collect();
    let files = &words.files;
    let first = modal.scroll.min(files.len().saturating_sub(1));
    if first > 0 {
        body.push(Line::styled(format!("    ↑ {first} more above"), t.stale));
    }
    body.extend(
        files[first.min(files.len())..]
            .iter()
            .map(|l| Line::styled(format!(" {l}"), t.text)),
    );
    let body = super::widgets::indent_wrapped(body, inner);
    // The footer is never cut: the body gets what is left, at least nothing.
    let room = usize::from(area.height.saturating_sub(2));
    let footer_rows = rows(&footer, inner).min(room);
    let body_room = room - footer_rows;
    let body_rows = rows(&body, inner).min(body_room);
    let height = u16::try_from(body_rows + footer_rows + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let popup = super::widgets::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(match modal.dialog.target() {
            crate::target::Target::Box(host) => format!(" Teardown {host} — guarded "),
            job => format!(" Teardown {job} — guarded "),
        })
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
