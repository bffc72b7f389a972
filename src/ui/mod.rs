//! The dashboard: the only module that imports ratatui or crossterm. Views borrow the state and
//! never mutate it; keys become actions; the event loop owns the state and does the I/O.

mod alerts;
pub mod app;
mod command_line;
mod event_loop;
pub mod fleet_table;
mod frames;
mod handover;
mod header;
pub mod help;
mod host_clocks;
mod host_detail;
mod host_gpus;
mod job_detail;
mod jobs_pane;
mod jobs_table;
mod keys;
mod kill_modal;
mod line_edit;
mod mouse;
mod queue_views;
pub mod svg;
pub mod teardown_modal;
pub mod theme;
mod widgets;

use std::time::Duration;

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::fleet::FleetState;

use app::{App, Pane, View};
pub use event_loop::{Ended, run};
pub use frames::{DEMO_POLL, demo_frames, run_terminal, screenshot_time};
pub use mouse::Areas;
use theme::Theme;

/// What every view reads from: borrowed, never mutated while drawing.
pub struct Ctx<'a> {
    pub app: &'a App,
    pub state: &'a FleetState,
    pub theme: &'a Theme,
    pub now: DateTime<Utc>,
    pub poll: Duration,
}

pub fn draw(frame: &mut Frame, ctx: &Ctx<'_>) {
    let [header, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(header::line(ctx, header.width)), header);
    match ctx.app.view {
        View::Fleet => {
            let events = if body.height >= 20 {
                body.height / 3
            } else {
                5.min(body.height / 2)
            };
            // Cluster jobs take what they need up to a third of the body, under the boxes.
            let jobs = if ctx.state.clusters.is_empty() {
                0
            } else {
                jobs_table::height(&ctx.state.clusters).min(body.height / 3)
            };
            let [table, jobs_area, alerts] = Layout::vertical([
                Constraint::Min(3),
                Constraint::Length(jobs),
                Constraint::Length(events),
            ])
            .areas(body);
            ctx.app.areas.set(mouse::Areas {
                table,
                jobs: jobs_area,
                events: alerts,
            });
            fleet_table::render(frame, table, ctx);
            if jobs > 0 {
                jobs_table::render(frame, jobs_area, ctx);
            }
            alerts::render(frame, alerts, ctx);
        }
        View::Detail => {
            ctx.app.areas.set(mouse::Areas::default());
            host_detail::render(frame, body, ctx);
        }
        View::Job => {
            ctx.app.areas.set(mouse::Areas::default());
            job_detail::render(frame, body, ctx);
        }
        View::Roster => {
            ctx.app.areas.set(mouse::Areas::default());
            queue_views::render_roster(frame, body, ctx);
        }
    }
    frame.render_widget(Paragraph::new(status_line(ctx, status.width)), status);
    if ctx.app.help {
        help::render(frame, body, ctx);
    }
    if let Some(modal) = &ctx.app.kill {
        kill_modal::render(frame, body, ctx, modal);
    }
    if let Some(modal) = &ctx.app.modal {
        teardown_modal::render(frame, body, ctx, modal);
    }
}

fn status_line<'a>(ctx: &Ctx<'a>, width: u16) -> Line<'a> {
    let t = ctx.theme;
    if let Some(line) = &ctx.app.command {
        let (before, after) = line_edit::split(line, ctx.app.prompt_cursor);
        return Line::from(vec![
            Span::styled(" :", t.accent),
            Span::raw(before.to_string()),
            Span::styled("▏", t.accent),
            Span::raw(after.to_string()),
            Span::styled(
                "  Tab completes · ↑↓ history · Enter runs · Esc cancels",
                t.stale,
            ),
        ]);
    }
    if ctx.app.editing_filter {
        let pane = match ctx.app.pane {
            Pane::Hosts => "boxes",
            Pane::Jobs => "jobs",
            Pane::Alerts => "events",
        };
        let filter = match ctx.app.pane {
            Pane::Hosts => &ctx.app.filter,
            Pane::Jobs => &ctx.app.job_filter,
            Pane::Alerts => &ctx.app.event_filter,
        };
        let (before, after) = line_edit::split(filter, ctx.app.prompt_cursor);
        return Line::from(vec![
            Span::styled(format!(" filter {pane} /"), t.accent),
            Span::raw(before.to_string()),
            Span::styled("▏", t.accent),
            Span::raw(after.to_string()),
            Span::styled("  Enter keep · Esc clear", t.stale),
        ]);
    }
    if let Some(notice) = &ctx.app.notice {
        return Line::styled(format!(" {notice}"), t.warn);
    }
    if let Some((host, progress)) = ctx.app.pulls.iter().next() {
        return Line::styled(pull_gauge(host, progress), t.accent);
    }
    Line::styled(
        footer_keys(
            ctx.app.view,
            ctx.app.pane,
            usize::from(width),
            notebook(ctx),
        ),
        t.stale,
    )
}

/// The keys of the current view and focused pane, most needed first, as many as fit:
/// `? help · q quit` always stay (as k9s's hints do), the rest drop from the end as the
/// terminal narrows.
/// Whether the open job is a Kaggle commit: nothing to cancel, no shell, no log to follow.
fn notebook(ctx: &Ctx<'_>) -> bool {
    ctx.app.view == View::Job
        && ctx
            .app
            .detail_job(ctx.state)
            .is_some_and(|(c, _)| c.scheduler == crate::cluster::Scheduler::Kaggle)
}

fn footer_keys(view: View, pane: Pane, width: usize, notebook: bool) -> String {
    let keys: &[&str] = match (view, pane) {
        (View::Job, _) if notebook => &[
            "? help",
            "q quit",
            "Esc back",
            "↑↓ scroll",
            "p pull its output",
            "y copy its name",
        ],
        (View::Fleet, Pane::Jobs) => &[
            "? help",
            "q quit",
            "↑↓ select job",
            "Enter job detail",
            "T cancel/delete",
            "p pull",
            "/ filter jobs",
            "l log",
            "s shell",
            "Tab events",
        ],
        (View::Fleet, Pane::Alerts) => &[
            "? help",
            "q quit",
            "↑↓ select event",
            "Enter its box or job",
            "p pull it",
            "T teardown it",
            "/ filter events",
            "Tab boxes",
        ],
        (View::Fleet, Pane::Hosts) => &[
            "? help",
            "q quit",
            "↑↓ select",
            "Enter detail",
            "T teardown",
            "p pull",
            "/ filter",
            "s ssh",
            "l log",
            "o order",
            "Tab next pane",
        ],
        (View::Detail, _) => &[
            "? help",
            "q quit",
            "Esc back",
            "↑↓ scroll",
            "T teardown",
            "p pull",
            "s ssh",
            "l log",
            "g G top/end",
        ],
        (View::Job, _) => &[
            "? help",
            "q quit",
            "Esc back",
            "↑↓ scroll",
            "T cancel/delete",
            "p pull",
            "l log",
            "s shell",
            "L inside the job",
        ],
        (View::Roster, _) => &["? help", "q quit", "Esc back", "↑↓ scroll", "g G top/end"],
    };
    let mut out = String::new();
    for key in keys {
        let next = if out.is_empty() {
            format!(" {key}")
        } else {
            format!("{out} · {key}")
        };
        if next.chars().count() > width && !out.is_empty() {
            break;
        }
        out = next;
    }
    out
}

fn pull_gauge(host: &str, progress: &crate::pull::Progress) -> String {
    use std::sync::atomic::Ordering;
    let done = progress.bytes_done.load(Ordering::Relaxed);
    let total = progress.bytes_total.load(Ordering::Relaxed);
    let fraction = if total == 0 {
        0.0
    } else {
        (done as f64 / total as f64).clamp(0.0, 1.0)
    };
    let filled = (fraction * 20.0).round() as usize;
    let stage = progress.stage().word();
    let speed = match progress.rate_and_eta() {
        Some((rate, Some(eta))) => format!(
            "  {}/s  ETA {}",
            widgets::bytes(rate as u64),
            crate::signals::minutes(chrono::Duration::from_std(eta).unwrap_or_default())
        ),
        Some((rate, None)) => format!("  {}/s", widgets::bytes(rate as u64)),
        None => String::new(),
    };
    format!(
        " pull {host}: {stage} [{}{}] {:.0}%  {} / {}{speed}  {} left",
        "█".repeat(filled),
        "░".repeat(20 - filled),
        fraction * 100.0,
        widgets::bytes(done),
        widgets::bytes(total),
        match progress.files_left() {
            1 => "1 file".to_string(),
            n => format!("{n} files"),
        }
    )
}

/// Renders one frame into a buffer: for snapshot tests, screenshots and the render benchmark.
pub fn render_buffer(ctx: &Ctx<'_>, width: u16, height: u16) -> Buffer {
    let backend = TestBackend::new(width, height);
    let Ok(mut terminal) = ratatui::Terminal::new(backend) else {
        return Buffer::empty(Rect::new(0, 0, width, height));
    };
    let _ = terminal.draw(|frame| draw(frame, ctx));
    terminal.backend().buffer().clone()
}

/// A buffer as plain text, one line per row, for snapshots.
pub fn buffer_text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut row = String::new();
        for x in 0..area.width {
            row.push_str(buffer.cell((x, y)).map_or(" ", |c| c.symbol()));
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}
