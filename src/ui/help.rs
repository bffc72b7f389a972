//! `?`: every key binding, over whatever is on screen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Ctx;

/// The keys as the book's table (docs/dashboard.md) shows them: one source for the overlay
/// and the book (a test holds the book to it).
pub fn markdown_table() -> String {
    let mut out = String::from("| key | does |\n|---|---|\n");
    for (key, does) in KEYS {
        let keys: Vec<String> = key.split("  ").map(|k| format!("`{}`", k.trim())).collect();
        out.push_str(&format!("| {} | {does} |\n", keys.join(" ")));
    }
    out
}

pub const KEYS: &[(&str, &str)] = &[
    (
        "↑ ↓  j k",
        "move the selection (scroll in detail and events)",
    ),
    ("Enter  →", "open the selection's detail: a box or a job"),
    ("Esc  ← h", "back to the fleet; clear the filter"),
    (
        "Tab",
        "next pane: boxes, jobs, events; every key acts on its selection",
    ),
    ("/", "filter the focused pane (Enter keeps, Esc clears)"),
    ("o", "order: worst first, name, GPU util, platform"),
    (
        "s  l  L",
        "ssh to the box: shell, log (less +F), pane; a job: scheduler's",
    ),
    ("g  G  r", "first / last; refresh now"),
    (
        "y",
        "copy the selection's name (OSC 52: the terminal may refuse)",
    ),
    (
        "R",
        "the roster: every queue's cells, failed and missing first",
    ),
    (
        "p",
        "pull results home, with a gauge; on a job: its cluster's or pod's",
    ),
    (
        "T",
        "teardown, refused without a verified-current pull: type the name, Enter (Ctrl-U \
         clears); on a job, scancel or kubectl delete",
    ),
    (
        "K",
        "end what holds a zombie GPU's VRAM: TERM, then KILL; type the name",
    ),
    (
        "S",
        "silence `watch` alerts 2 h (a job: its cluster's); again: lift",
    ),
    (
        "mouse",
        "click selects a row; the wheel scrolls; Shift-drag selects text",
    ),
    (
        ":",
        "commands: pull, ssh, log, sort util, filter TEXT… (Tab completes)",
    ),
    ("?  q", "this help; quit (Ctrl-C too)"),
];

/// The keys, wrapped to the popup and scrolled with ↑↓ where they do not fit (80×24 included).
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let width = area.width.min(84);
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
    let (popup, rows, lines) = super::widgets::popup(area, width, lines);
    let height = popup.height;
    let end = rows.saturating_sub(usize::from(height.saturating_sub(2)));
    let scroll = ctx
        .app
        .help_scroll
        .min(u16::try_from(end).unwrap_or(u16::MAX));
    let title = if end > 0 {
        " Keys · ↑↓ scroll "
    } else {
        " Keys "
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(title)
                    .border_style(ctx.theme.accent),
            ),
        popup,
    );
}
