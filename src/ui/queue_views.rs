//! Queues on screen: the overview's queue column, the queue in a host's detail, and the
//! fleet-wide roster (`R`), problems first. Cell names and log lines are remote text: sanitized.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Ctx;
use crate::fleet::HostState;
use crate::fleet::queues::{QueueFacts, label, read_error, status};
use crate::queue::{CellReport, CellState, HostSummary, compact_duration};
use crate::sanitize::line as clean;

/// Whether the overview shows the queue column: only when some host has a queue.
pub fn any_queue(ctx: &Ctx<'_>) -> bool {
    ctx.state.hosts.iter().any(|h| h.queue.is_some())
}

fn summary<'a>(h: &HostState, ctx: &Ctx<'a>) -> Option<&'a HostSummary> {
    ctx.state
        .roster
        .as_ref()?
        .hosts
        .iter()
        .find(|s| s.host == h.config.name)
}

fn facts(h: &HostState) -> Option<&QueueFacts> {
    h.queue.as_ref()?.facts.as_ref()
}

/// `7/12 · ep 3/50 · ETA 5h10m`, or `-` without a queue or before its first reading.
pub fn queue_cell<'a>(h: &HostState, ctx: &Ctx<'a>) -> Span<'a> {
    let (Some(summary), Some(facts), Some(tracker)) = (summary(h, ctx), facts(h), &h.queue) else {
        return Span::styled("-", ctx.theme.stale);
    };
    let style = if summary.failed + summary.missing > 0 {
        ctx.theme.crit
    } else {
        ctx.theme.text
    };
    Span::styled(label(summary, facts, tracker.samples(), ctx.now), style)
}

fn state_style(state: &CellState, ctx: &Ctx<'_>) -> Style {
    match state {
        CellState::Missing | CellState::Failed | CellState::Colliding { .. } => ctx.theme.crit,
        CellState::Running => ctx.theme.ok,
        CellState::Pending => ctx.theme.text,
        CellState::Done { .. } => ctx.theme.stale,
    }
}

fn state_word(state: &CellState) -> &'static str {
    match state {
        CellState::Done { verified: true } => "done ✓",
        CellState::Done { .. } => "done",
        CellState::Running => "running",
        CellState::Pending => "pending",
        CellState::Failed => "FAILED",
        CellState::Missing => "MISSING",
        CellState::Colliding { .. } => "COLLIDES",
    }
}

fn cell_line<'a>(c: &CellReport, with_host: bool, ctx: &Ctx<'a>) -> Line<'a> {
    let host = if with_host {
        format!("{:<16} ", clean(&c.host, 16))
    } else {
        String::new()
    };
    Line::from(vec![
        Span::raw(format!("  {host}{:>3} ", c.index)),
        Span::styled(
            format!("{:<9}", state_word(&c.state)),
            state_style(&c.state, ctx),
        ),
        Span::raw(format!(" {} · {}", clean(&c.name, 40), clean(&c.task, 30))),
    ])
}

/// The queue section of a host's detail: the summary, every line with its state, the running
/// cell's progress and log tail, and the resume command of a killed queue.
pub fn detail_lines<'a>(h: &HostState, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let Some(config) = &h.config.queue else {
        return Vec::new();
    };
    let t = ctx.theme;
    let mut out = vec![Line::from(Span::styled(
        format!("── Queue {} ", clean(&config.file, 80)),
        t.header,
    ))];
    let (Some(summary), Some(facts), Some(tracker)) = (summary(h, ctx), facts(h), &h.queue) else {
        let why = h.history.latest_host().and_then(|r| read_error(&r.sample));
        out.push(match why {
            Some(why) => Line::styled(format!("  not read: {}", clean(why, 300)), t.crit),
            None => Line::styled("  not read yet", t.stale),
        });
        return out;
    };
    let status = status(summary, facts, tracker.samples(), ctx.now);
    out.push(Line::raw(format!(
        "  {} · {} done · {} running · {} pending · {} failed{}",
        label(summary, facts, tracker.samples(), ctx.now),
        status.done,
        status.running,
        status.pending,
        status.failed,
        if facts.run_alive {
            ""
        } else {
            " · queue not running"
        }
    )));
    if let Some(current) = &status.current
        && let Some(secs) = current.eta_secs
    {
        out.push(Line::raw(format!(
            "  cell {} ends in {}",
            clean(&current.name, 40),
            compact_duration(secs)
        )));
    }
    let mut cells: Vec<&CellReport> = ctx
        .state
        .roster
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|c| c.host == h.config.name)
        .collect();
    cells.sort_by_key(|c| c.index);
    out.extend(cells.into_iter().map(|c| cell_line(c, false, ctx)));
    if summary.current.is_some() {
        for line in facts.log_tail.iter().rev().take(3).rev() {
            out.push(Line::styled(format!("    │ {}", clean(line, 160)), t.text));
        }
    }
    if let Some(resume) = &summary.resume {
        out.push(Line::styled(
            format!("  resume: {}", clean(&resume.command, 200)),
            t.warn,
        ));
    }
    out
}

/// `R`: every cell of every queue, missing and failed first, then the resume commands.
pub fn render_roster(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let t = ctx.theme;
    let mut lines = Vec::new();
    match &ctx.state.roster {
        None => lines.push(Line::styled(
            "  no queue read yet: set `queue` and `final_dir` on a host in fleet.toml",
            t.stale,
        )),
        Some(roster) => {
            lines.extend(roster.cells.iter().map(|c| cell_line(c, true, ctx)));
            for h in &roster.hosts {
                if let Some(resume) = &h.resume {
                    lines.push(Line::styled(
                        format!(
                            "  resume {}: {}",
                            clean(&h.host, 40),
                            clean(&resume.command, 200)
                        ),
                        t.warn,
                    ));
                }
            }
        }
    }
    let cells = ctx.state.roster.as_ref().map_or(0, |r| r.cells.len());
    let scroll = super::widgets::clamp_scroll(ctx, &lines, area);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" Roster · {cells} cells "))
                .border_style(t.accent),
        ),
        area,
    );
}
