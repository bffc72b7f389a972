//! A row's most urgent line shown whole before its own bars: where NEEDS YOU is too narrow for
//! it, the row gives up its bars from the one beside NEEDS YOU leftwards until the line fits,
//! and the line wraps onto more lines of the row (four at most) where even that is not enough
//! and the table has lines to spare once every row has one ([`share`], worst rows first: a
//! line more never hides a box). Other rows keep their bars. Pure but for [`draw`], which
//! writes over the table's cells.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::columns::Col;

/// The most lines a row takes for its urgent line; past them the last is cut.
const MOST_LINES: usize = 4;

/// How one row shows its urgent line over more than NEEDS YOU.
#[derive(Debug, Clone)]
pub struct Wide {
    /// The first column (an index into the table's columns) the line takes from.
    pub first: usize,
    pub lines: Vec<Line<'static>>,
    /// The cells each line has.
    room: usize,
}

impl Wide {
    pub fn height(&self) -> u16 {
        u16::try_from(self.lines.len()).unwrap_or(1)
    }
}

/// Columns a row may give up for its urgent line: its bars, never who or how it is, its queue
/// or its next clock.
fn gives_way(col: Col) -> bool {
    matches!(
        col,
        Col::Clock | Col::Power | Col::Vram | Col::Util | Col::Cpu | Col::Disk
    )
}

/// The room `said` (NEEDS YOU's whole line) takes in a row of `columns`, NEEDS YOU last; None
/// where it fits NEEDS YOU as it is.
pub fn widen(columns: &[(Col, &str, u16)], said: Span<'static>) -> Option<Wide> {
    let signal = columns.iter().position(|(c, _, _)| *c == Col::Signal)?;
    let want = said.width();
    let mut room = usize::from(columns[signal].2);
    if want <= room {
        return None;
    }
    let mut first = signal;
    while first > 0 && gives_way(columns[first - 1].0) && room < want {
        first -= 1;
        room += usize::from(columns[first].2) + 1;
    }
    let lines = super::super::widgets::indent_wrapped(vec![Line::from(said)], room);
    let mut wide = Wide { first, lines, room };
    wide.cut_to(MOST_LINES);
    Some(wide)
}

impl Wide {
    /// At most `most` lines, the last ending in `…` where more were cut.
    fn cut_to(&mut self, most: usize) {
        if self.lines.len() <= most.max(1) {
            return;
        }
        self.lines.truncate(most.max(1));
        if let Some(last) = self.lines.last_mut() {
            let text: String = last.spans.iter().map(|s| s.content.as_ref()).collect();
            let style = last.spans.last().map_or(Style::default(), |s| s.style);
            let cut = super::super::widgets::fit(&format!("{text} …"), self.room);
            *last = Line::from(Span::styled(cut, style));
        }
    }
}

/// Lines past each row's first, given out in row order (worst first) from `spare`: the lines
/// the table has once every row has one. A row given none keeps one line, cut.
pub fn share(rows: &mut [Option<Wide>], mut spare: usize) {
    for wide in rows.iter_mut().flatten() {
        let more = (wide.lines.len() - 1).min(spare);
        spare -= more;
        wide.cut_to(1 + more);
    }
}

/// Where each column's cells are in a row at `row` (the table's own layout: one cell for the
/// selection mark, then the columns one apart from the left).
fn cells(row: Rect, widths: &[u16]) -> Vec<Rect> {
    let [_, columns] = Layout::horizontal([Constraint::Length(1), Constraint::Fill(0)]).areas(row);
    Layout::horizontal(widths.iter().map(|w| Constraint::Length(*w)))
        .flex(Flex::Start)
        .spacing(1)
        .split(columns)
        .to_vec()
}

/// Each widened row's line, written over its blank cells. `rows`: the rows drawn, top down,
/// with their height, their widening and whether the row is the selected one; `inner`: the
/// table inside its border (the header on its first line).
pub fn draw(
    frame: &mut Frame,
    inner: Rect,
    widths: &[u16],
    rows: &[(u16, Option<&Wide>, bool)],
    selected: Style,
) {
    let mut y = inner.y + 1;
    for (height, wide, is_selected) in rows {
        if let Some(wide) = wide {
            let cells = cells(Rect::new(inner.x, y, inner.width, 1), widths);
            let (Some(from), Some(to)) = (cells.get(wide.first), cells.last()) else {
                continue;
            };
            let area = Rect::new(from.x, y, to.right().saturating_sub(from.x), *height)
                .intersection(inner);
            let style = if *is_selected {
                selected
            } else {
                Style::default()
            };
            frame.render_widget(Paragraph::new(wide.lines.clone()).style(style), area);
        }
        y = y.saturating_add(*height);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: [(Col, &str, u16); 5] = [
        (Col::Name, "HOST", 14),
        (Col::Run, "RUN", 9),
        (Col::Clock, "SM CLOCK/MAX", 14),
        (Col::Disk, "DISK", 13),
        (Col::Signal, "NEEDS YOU", 24),
    ];

    #[test]
    fn a_line_that_fits_keeps_the_bars_and_a_long_one_takes_them_from_the_right() {
        assert!(widen(&COLUMNS, Span::raw("x".repeat(24))).is_none());
        let wide = widen(&COLUMNS, Span::raw("x".repeat(30))).expect("wider");
        assert_eq!((wide.first, wide.lines.len()), (3, 1), "DISK gives way");
        let words = "word ".repeat(20);
        let wide = widen(&COLUMNS, Span::raw(words.trim().to_string())).expect("wider");
        assert_eq!(wide.first, 2, "every bar gives way, never RUN");
        assert_eq!(wide.lines.len(), 2, "and the rest wraps");
        let wide = widen(&COLUMNS, Span::raw("word ".repeat(60))).expect("wider");
        assert_eq!(wide.lines.len(), MOST_LINES);
    }

    #[test]
    fn spare_lines_go_to_the_worst_rows_first_and_no_row_loses_its_first() {
        let long = || widen(&COLUMNS, Span::raw("word ".repeat(30))).expect("wider");
        let mut rows = vec![Some(long()), None, Some(long())];
        share(&mut rows, 2);
        let heights: Vec<usize> = rows
            .iter()
            .map(|r| r.as_ref().map_or(1, |w| w.lines.len()))
            .collect();
        assert_eq!(heights, [3, 1, 1]);
        let last = &rows[2].as_ref().expect("wide").lines[0];
        assert!(
            last.spans.iter().any(|s| s.content.ends_with('…')),
            "{last:?}"
        );
    }
}
