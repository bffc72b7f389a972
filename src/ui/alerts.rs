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
    // The cursor (the event Enter opens) stays on screen: the window follows it.
    let events = ctx.app.visible_events(ctx.state);
    let cursor = ctx.app.alerts_scroll.min(events.len().saturating_sub(1));
    let skip = super::widgets::window_start(cursor, events.len(), rows);
    let focused = ctx.app.pane == Pane::Alerts;
    let lines: Vec<Line> = if events.is_empty() {
        vec![Line::styled(
            if ctx.app.event_filter.is_empty() {
                " nothing has changed since rigwatch started".to_string()
            } else {
                format!(
                    " no event matches /{} (Esc clears it)",
                    clean(&ctx.app.event_filter, 40)
                )
            },
            t.stale,
        )]
    } else {
        events
            .iter()
            .enumerate()
            .skip(skip)
            .take(rows)
            .map(|(i, e)| {
                let here = focused && i == cursor;
                let style = t.severity(Some(e.severity));
                Line::styled(
                    format!(
                        "{}{} {:<14} {:<4} {}",
                        if here { "›" } else { " " },
                        e.at.format("%H:%M:%S"),
                        clean(&e.host, 14),
                        e.severity.word(),
                        fit(&clean(&e.text, 300), room)
                    ),
                    if here {
                        style.patch(t.selection)
                    } else {
                        style
                    },
                )
            })
            .collect()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(
            " Events · {}{} · newest first ",
            events.len(),
            super::widgets::filter_mark(&ctx.app.event_filter)
        ))
        .border_style(if focused { t.accent } else { t.border });
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
