//! The fleet overview: one row per host, worst first; columns give way as the terminal narrows
//! (`columns` chooses which), each cell says its column's part (`cells`), and a row's urgent
//! line takes its bars' room where it needs it (`urgent`).

mod cells;
pub(super) mod columns;
mod urgent;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};

use super::Ctx;
use super::app::Pane;
use super::widgets::fit;
use crate::sanitize::line as clean;
use crate::signals::Severity;
use cells::{clock_cell, cpu_cell, disk_cell, gpu_cells, link_cell, run_cell, signal_cell};
pub use cells::{clock_style, clock_word};
use columns::{Col, fitted, middle_cut, name_width};

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let t = ctx.theme;
    let width = area.width.saturating_sub(2);
    let names = name_width(
        ctx.state.hosts.iter().map(|h| h.config.name.as_str()),
        width,
    );
    let sorted = ctx.app.sort.column();
    let columns = fitted(width, super::queue_views::any_queue(ctx), names, sorted);
    let visible = ctx.app.visible(ctx.state);
    let selected = ctx.app.selected_index(&visible);
    // Only the rows that fit are built: at 100 hosts most are off screen. A row whose urgent
    // line is wider than NEEDS YOU takes its bars' room for it, and more lines where needed.
    let lines = usize::from(area.height.saturating_sub(3)).max(1);
    // Either every row fits with lines to spare, which `share` gives out, or the window around
    // the selection takes a line a row: only the rows shown are widened (a hundred hosts draw
    // a screenful each frame).
    let first = super::widgets::window_start(selected, visible.len(), lines);
    let shown = visible.len().min(lines);
    let mut wide: Vec<Option<urgent::Wide>> = visible
        .iter()
        .skip(first)
        .take(shown)
        .map(|h| {
            // Only a warning or worse takes a row's bars: an info line is cut as before.
            let top = h.signals.first().map(|s| s.severity);
            if top.is_none_or(|s| s <= Severity::Info) {
                return None;
            }
            let said = signal_cell(h, ctx, h.is_stale(ctx.now, ctx.poll), u16::MAX);
            urgent::widen(
                &columns,
                Span::styled(said.content.into_owned(), said.style),
            )
        })
        .collect();
    urgent::share(&mut wide, lines.saturating_sub(visible.len()));
    let height = |i: usize| wide[i - first].as_ref().map_or(1, urgent::Wide::height);
    let rows: Vec<Row> = visible
        .iter()
        .enumerate()
        .skip(first)
        .take(shown)
        .map(|(i, h)| {
            let stale = h.is_stale(ctx.now, ctx.poll);
            let sample = h.history.latest_host().map(|r| &r.sample);
            let blank_from = wide[i - first].as_ref().map_or(usize::MAX, |w| w.first);
            let cells: Vec<Cell> = columns
                .iter()
                .enumerate()
                .map(|(n, (col, _, w))| {
                    if n >= blank_from {
                        return Cell::from("");
                    }
                    let span = match col {
                        Col::Name => Span::styled(
                            middle_cut(&clean(&h.config.name, 200), usize::from(*w)),
                            t.text.add_modifier(Modifier::BOLD),
                        ),
                        Col::Platform => Span::styled(clean(&h.config.profile, 20), t.text),
                        Col::Link => link_cell(h, ctx),
                        Col::Run => run_cell(h, ctx),
                        Col::Clock | Col::Power | Col::Vram | Col::Util => {
                            gpu_cells(h, ctx, *col, *w)
                        }
                        Col::Disk => disk_cell(sample, ctx),
                        Col::Cpu => cpu_cell(sample, ctx),
                        Col::Signal => signal_cell(h, ctx, stale, *w),
                        Col::Danger => clock_cell(h, ctx),
                        Col::Queue => {
                            let span = super::queue_views::queue_cell(h, ctx);
                            Span::styled(fit(&span.content, usize::from(*w)), span.style)
                        }
                    };
                    let span = if stale
                        && matches!(
                            col,
                            Col::Clock | Col::Power | Col::Vram | Col::Util | Col::Cpu | Col::Disk
                        ) {
                        span.style(t.stale)
                    } else {
                        span
                    };
                    Cell::from(Line::from(span))
                })
                .collect();
            Row::new(cells).height(height(i))
        })
        .collect();
    // The sorted column's header carries the marker.
    let header = Row::new(columns.iter().map(|(col, title, _)| {
        Cell::from(if *col == sorted {
            format!("{title}▾")
        } else {
            (*title).to_string()
        })
    }))
    .style(t.header);
    let widths: Vec<Constraint> = columns
        .iter()
        .map(|(_, _, w)| Constraint::Length(*w))
        .collect();
    let focused = ctx.app.pane == Pane::Hosts;
    // Where the selection is, once the rows do not all fit: 12/104.
    let position = if visible.len() > shown {
        format!("· {}/{} ", selected + 1, visible.len())
    } else {
        String::new()
    };
    let title = if ctx.app.filter.is_empty() {
        format!(
            " Fleet · {} boxes · sorted {} {position}",
            visible.len(),
            ctx.app.sort.word()
        )
    } else {
        format!(
            " Fleet · {} of {} match /{} {position}",
            visible.len(),
            ctx.state.hosts.len(),
            ctx.app.filter
        )
    };
    let table = Table::new(rows, widths)
        .header(header)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(title)
                .border_style(if focused { t.accent } else { t.border }),
        )
        .row_highlight_style(t.selection)
        .highlight_symbol("›");
    let mut table_state = TableState::default();
    if !visible.is_empty() {
        table_state.select(Some(selected - first));
    }
    frame.render_stateful_widget(table, area, &mut table_state);
    let drawn: Vec<(u16, Option<&urgent::Wide>, bool)> = (first..first + shown)
        .map(|i| (height(i), wide[i - first].as_ref(), i == selected))
        .collect();
    *ctx.app.table_lines.borrow_mut() = (first..first + shown)
        .flat_map(|i| std::iter::repeat_n(visible[i].config.name.clone(), usize::from(height(i))))
        .collect();
    let widths: Vec<u16> = columns.iter().map(|(_, _, w)| *w).collect();
    let inner = Block::default().borders(Borders::ALL).inner(area);
    urgent::draw(frame, inner, &widths, &drawn, t.selection);
}
