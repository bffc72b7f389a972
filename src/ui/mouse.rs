//! The mouse, as btop and k9s take it: the wheel scrolls what is under it as ↑↓ would, a click
//! on a row selects it (a host, a job, an event) and focuses its pane. Where each pane is comes
//! from the last frame drawn ([`Areas`]), so a click means what the person saw.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

use super::app::{Action, App, Pane, View};
use super::widgets::window_start;
use crate::fleet::FleetState;

/// Where the fleet view's panes were drawn last (empty before the first frame, or in another
/// view).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Areas {
    pub table: Rect,
    pub jobs: Rect,
    pub events: Rect,
}

fn inside(area: Rect, column: u16, row: u16) -> bool {
    area.width > 0
        && area.height > 0
        && column >= area.x
        && column < area.x + area.width
        && row >= area.y
        && row < area.y + area.height
}

impl App {
    pub fn handle_mouse(&mut self, mouse: MouseEvent, state: &FleetState) -> Action {
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        let areas = self.areas.get();
        let (column, row) = (mouse.column, mouse.row);
        match mouse.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                if self.view == View::Fleet {
                    self.focus_under(areas, column, row);
                }
                let code = if mouse.kind == MouseEventKind::ScrollDown {
                    KeyCode::Down
                } else {
                    KeyCode::Up
                };
                self.handle_key(key(code), state)
            }
            MouseEventKind::Down(MouseButton::Left) if self.view == View::Fleet => {
                self.click(areas, column, row, state);
                Action::None
            }
            _ => Action::None,
        }
    }

    fn focus_under(&mut self, areas: Areas, column: u16, row: u16) {
        if inside(areas.table, column, row) {
            self.pane = Pane::Hosts;
        } else if inside(areas.jobs, column, row) {
            self.pane = Pane::Jobs;
        } else if inside(areas.events, column, row) {
            self.pane = Pane::Alerts;
        }
    }

    fn click(&mut self, areas: Areas, column: u16, row: u16, state: &FleetState) {
        self.focus_under(areas, column, row);
        if inside(areas.table, column, row) {
            // A border line, then the header line, then the hosts as the last frame drew them.
            let Some(offset) = row.checked_sub(areas.table.y + 2) else {
                return;
            };
            let host = self.table_lines.borrow().get(usize::from(offset)).cloned();
            if let Some(host) = host {
                self.selected = Some(host);
                self.detail_scroll = 0;
            }
        } else if inside(areas.jobs, column, row) {
            let Some(offset) = row.checked_sub(areas.jobs.y + 1) else {
                return;
            };
            // The pane's lines, as drawn: a cluster's error line (no job), then its jobs.
            let shown = self.visible_jobs(state);
            let mut lines: Vec<Option<usize>> = Vec::new();
            for c in &state.clusters {
                if c.error.is_some() {
                    lines.push(None);
                }
                lines.extend(
                    (0..shown.len())
                        .filter(|i| shown[*i].0.name == c.name)
                        .map(Some),
                );
            }
            let here = self.job_index(&shown);
            let cursor_line = lines.iter().position(|l| *l == Some(here)).unwrap_or(0);
            let rows = usize::from(areas.jobs.height.saturating_sub(2));
            let first = window_start(cursor_line, lines.len(), rows);
            if let Some(Some(job)) = lines.get(first + usize::from(offset)) {
                self.select_job(&shown, *job);
            }
        } else if inside(areas.events, column, row) {
            let Some(offset) = row.checked_sub(areas.events.y + 1) else {
                return;
            };
            let rows = usize::from(areas.events.height.saturating_sub(2));
            let shown = self.visible_events(state).len();
            let last = shown.saturating_sub(1);
            let first = window_start(self.alerts_scroll.min(last), shown, rows);
            let at = first + usize::from(offset);
            if at <= last && shown > 0 {
                self.alerts_scroll = at;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_is_the_area_and_nothing_more() {
        let a = Rect::new(2, 3, 4, 2);
        assert!(inside(a, 2, 3) && inside(a, 5, 4));
        assert!(!inside(a, 6, 3) && !inside(a, 2, 5) && !inside(a, 1, 3));
        assert!(!inside(Rect::default(), 0, 0));
        assert_eq!(window_start(10, 20, 4), 7);
        assert_eq!(window_start(2, 20, 4), 0);
        assert_eq!(window_start(19, 20, 30), 0, "all of it fits");
    }
}
