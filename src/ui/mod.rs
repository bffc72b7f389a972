//! The dashboard: the only module that imports ratatui or crossterm. Views borrow the state and
//! never mutate it; keys become actions; the event loop owns the state and does the I/O.

mod alerts;
pub mod app;
mod event_loop;
pub mod fleet_table;
mod frames;
mod help;
mod host_detail;
mod jobs;
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

use crate::fleet::GpuAvailability;
use crate::monitor::FleetState;
use crate::signals::{Severity, SignalKind};
use app::{App, View};
pub use event_loop::{Source, run};
pub use frames::{DEMO_POLL, demo_frames, run_terminal, screenshot_time};
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
    frame.render_widget(Paragraph::new(header_line(ctx)), header);
    match ctx.app.view {
        View::Fleet => {
            let events = if body.height >= 20 {
                body.height / 3
            } else {
                5.min(body.height / 2)
            };
            let [table, alerts] =
                Layout::vertical([Constraint::Min(3), Constraint::Length(events)]).areas(body);
            fleet_table::render(frame, table, ctx);
            alerts::render(frame, alerts, ctx);
        }
        View::Detail => host_detail::render(frame, body, ctx),
        View::Roster => queue_views::render_roster(frame, body, ctx),
    }
    frame.render_widget(Paragraph::new(status_line(ctx)), status);
    if ctx.app.help {
        help::render(frame, body, ctx);
    }
    if let Some(modal) = &ctx.app.modal {
        teardown_modal::render(frame, body, ctx, modal);
    }
}

fn header_line<'a>(ctx: &Ctx<'a>) -> Line<'a> {
    let t = ctx.theme;
    let hosts = &ctx.state.hosts;
    let up = hosts.iter().filter(|h| h.link.is_usable()).count();
    let (mut busy, mut idle, mut zombie, mut gpus) = (0, 0, 0, 0);
    for h in hosts {
        let Some(latest) = h.history.latest_gpu() else {
            continue;
        };
        gpus += latest.gpus.len();
        let zombies = h
            .signals
            .iter()
            .filter(|s| s.kind == SignalKind::ZombieVram)
            .count();
        zombie += zombies;
        let busy_here = latest
            .gpus
            .iter()
            .filter(|g| g.util_gpu_pct.is_some_and(|u| u > 2))
            .count();
        busy += busy_here;
        idle += latest.gpus.len().saturating_sub(busy_here + zombies);
    }
    let no_gpu = hosts
        .iter()
        .filter(|h| h.gpu == GpuAvailability::NoNvidiaSmi)
        .count();
    let need = hosts
        .iter()
        .filter(|h| h.worst() >= Some(Severity::Warn))
        .count();
    // The oldest reading among hosts that are up: one frozen box must show, not hide behind
    // eleven fresh ones.
    let oldest_up = hosts
        .iter()
        .filter(|h| h.link.is_usable())
        .map(|h| h.last_reading)
        .min();
    let mut spans = vec![Span::styled(" rigwatch ", t.header)];
    if ctx.app.demo {
        spans.push(Span::styled(" DEMO: replayed captures ", t.demo));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled(
        format!("{} boxes {up} up", hosts.len()),
        t.text,
    ));
    if up < hosts.len() {
        spans.push(Span::styled(
            format!(" {} down", hosts.len() - up),
            t.link_down,
        ));
    }
    spans.push(Span::styled(
        format!(" · {gpus} GPUs {busy} busy {idle} idle"),
        t.text,
    ));
    if zombie > 0 {
        spans.push(Span::styled(format!(" {zombie} zombie"), t.crit));
    }
    if no_gpu > 0 {
        spans.push(Span::styled(format!(" · {no_gpu} without GPU"), t.stale));
    }
    spans.push(Span::styled(
        format!(" · {need} need you"),
        if need > 0 { t.warn } else { t.ok },
    ));
    let burn = ctx.state.burn_per_hour();
    if burn > 0.0 {
        let spent: f64 = hosts
            .iter()
            .filter_map(|h| h.ledger.as_ref())
            .map(|l| l.spent)
            .sum();
        let idle_spent: f64 = hosts
            .iter()
            .filter_map(|h| h.ledger.as_ref())
            .map(|l| l.idle_spent)
            .sum();
        spans.push(Span::styled(
            format!(" · {burn:.2}/h, spent {spent:.2} ({idle_spent:.2} idle)"),
            t.billing,
        ));
        if let Some(hours) = ctx.state.runway_hours() {
            let style = if hours < 6.0 { t.crit } else { t.billing };
            spans.push(Span::styled(format!(" · balance {hours:.1} h"), style));
        }
    }
    let data = match oldest_up {
        None => "no host up".to_string(),
        Some(None) => "data: a host up has sent none yet".to_string(),
        Some(Some(at)) => format!("data {}", widgets::age(at, ctx.now)),
    };
    spans.push(Span::styled(
        format!(" · {data} · {}", ctx.now.format("%H:%M:%S UTC")),
        t.stale,
    ));
    Line::from(spans)
}

fn status_line<'a>(ctx: &Ctx<'a>) -> Line<'a> {
    let t = ctx.theme;
    if ctx.app.editing_filter {
        return Line::from(vec![
            Span::styled(" filter /", t.accent),
            Span::raw(ctx.app.filter.clone()),
            Span::styled("▏ Enter keep · Esc clear", t.stale),
        ]);
    }
    if let Some(notice) = &ctx.app.notice {
        return Line::styled(format!(" {notice}"), t.warn);
    }
    if let Some((host, progress)) = ctx.app.pulls.iter().next() {
        return Line::styled(pull_gauge(host, progress), t.accent);
    }
    let keys = match ctx.app.view {
        View::Fleet => {
            " ↑↓ select · Enter detail · Tab events · / filter · s sort · p pull · T teardown · ? help · q quit"
        }
        View::Detail => " ↑↓ scroll · Esc back · p pull · T teardown · ? help · q quit",
        View::Roster => " ↑↓ scroll · Esc back · ? help · q quit",
    };
    Line::styled(keys, t.stale)
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
    let stage = progress.stage.lock().map(|s| s.clone()).unwrap_or_default();
    format!(
        " pull {host}: {stage} [{}{}] {:.0}%  {} / {}  files {}/{}",
        "█".repeat(filled),
        "░".repeat(20 - filled),
        fraction * 100.0,
        widgets::bytes(done),
        widgets::bytes(total),
        progress.files_done.load(Ordering::Relaxed),
        progress.files_total.load(Ordering::Relaxed)
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
