//! The events pane: what changed and when, newest first.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Ctx;
use super::app::Pane;
use super::widgets::fit;
use crate::sanitize::line as clean;

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let t = ctx.theme;
    let rows = usize::from(area.height.saturating_sub(2));
    // Time, host and severity take 30 columns; the text gets what is left inside the border.
    let room = usize::from(area.width.saturating_sub(2 + 30));
    let skip = ctx
        .app
        .alerts_scroll
        .min(ctx.state.events.len().saturating_sub(rows));
    let lines: Vec<Line> = if ctx.state.events.is_empty() {
        vec![Line::styled(
            " nothing has changed since rigwatch started",
            t.stale,
        )]
    } else {
        ctx.state
            .events
            .iter()
            .skip(skip)
            .take(rows)
            .map(|e| {
                Line::styled(
                    format!(
                        " {} {:<14} {:<4} {}",
                        e.at.format("%H:%M:%S"),
                        clean(&e.host, 14),
                        e.severity.word(),
                        fit(&clean(&e.text, 300), room)
                    ),
                    t.severity(Some(e.severity)),
                )
            })
            .collect()
    };
    let focused = ctx.app.pane == Pane::Alerts;
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(
            " Events · {} · newest first ",
            ctx.state.events.len()
        ))
        .border_style(if focused { t.accent } else { t.border });
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
