//! `?`: every key binding, over whatever is on screen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::Ctx;

pub const KEYS: &[(&str, &str)] = &[
    (
        "↑ ↓  j k",
        "move the selection (scroll in detail and events)",
    ),
    ("Enter  → l", "open the selected host's detail"),
    ("Esc  ← h", "back to the fleet; clear the filter"),
    ("Tab", "switch between hosts and events"),
    (
        "/",
        "filter by name, platform, link or signal (Enter keeps, Esc clears)",
    ),
    ("s", "sort: worst first, name, GPU util, platform"),
    ("g  G", "first / last"),
    ("r", "refresh now"),
    (
        "R",
        "the roster: every queue's cells, failed and missing first",
    ),
    ("p", "pull the selected host's results"),
    (
        "T",
        "teardown the selected host (guarded: refused without a verified pull)",
    ),
    (
        "S",
        "silence the selected host's alerts for 2 h (again: lift)",
    ),
    ("?", "this help"),
    ("q  Ctrl-C", "quit"),
];

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let width = area.width.min(84);
    let height = (KEYS.len() as u16 + 4).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!(" {k:<12}"), ctx.theme.accent),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::styled(" Esc or ? closes this", ctx.theme.stale));
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Keys ")
                .border_style(ctx.theme.accent),
        ),
        popup,
    );
}
