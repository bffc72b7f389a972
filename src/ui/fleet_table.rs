//! The fleet overview: one row per host, worst first; columns give way as the terminal narrows.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};

use super::Ctx;
use super::app::Pane;
use super::widgets::{age, bar, fit, known, short_age};
use crate::clocks::{Clock, ClockKind, Urgency};
use crate::fleet::HostState;
use crate::probe::sample::HostSample;
use crate::sanitize::line as clean;
use crate::signals::{RunState, Severity};
use crate::transport::LinkState;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Name,
    Platform,
    Link,
    Run,
    Clock,
    Power,
    Vram,
    Util,
    Disk,
    Danger,
    Signal,
    Queue,
}

/// Columns with their width, most important first. As the terminal narrows they drop from the
/// end of this list, one at a time and always in this order (README says it): a column never
/// comes back at a narrower width. The host's width here is the least it gets; it grows to the
/// names (see `name_width`).
const COLUMNS: &[(Col, &str, u16)] = &[
    (Col::Name, "HOST", 14),
    (Col::Link, "LINK", 10),
    (Col::Run, "RUN", 9),
    (Col::Signal, "NEEDS YOU", 24),
    (Col::Queue, "QUEUE", 24),
    (Col::Danger, "NEXT CLOCK", 16),
    (Col::Clock, "SM CLOCK/MAX", 14),
    (Col::Vram, "VRAM (GPUS)", 12),
    (Col::Disk, "DISK B/INODE", 13),
    (Col::Power, "POWER/CAP", 14),
    (Col::Util, "UTIL", 5),
    (Col::Platform, "PLATFORM", 11),
];

const DISPLAY_ORDER: [Col; 12] = [
    Col::Name,
    Col::Platform,
    Col::Link,
    Col::Run,
    Col::Queue,
    Col::Clock,
    Col::Power,
    Col::Vram,
    Col::Util,
    Col::Disk,
    Col::Danger,
    Col::Signal,
];

/// The host column's width: the longest name, from 14 up to a fifth of the table (names longer
/// than that are shortened in the middle, where they differ least).
fn name_width<'a>(names: impl Iterator<Item = &'a str>, width: u16) -> u16 {
    let longest = names.map(|n| n.chars().count()).max().unwrap_or(0);
    let most = (width / 5).max(14);
    u16::try_from(longest).unwrap_or(u16::MAX).clamp(14, most)
}

/// Columns that fit `width`, taken from the head of [`COLUMNS`] until one does not fit; the
/// queue column only when some host has a queue, and the platform column always while the
/// table is sorted by it (a sort must show its key).
fn fitted(
    width: u16,
    queues: bool,
    names: u16,
    by_platform: bool,
) -> Vec<(Col, &'static str, u16)> {
    let wanted = |c: &Col| (queues || *c != Col::Queue) && !(by_platform && *c == Col::Platform);
    let mut chosen: Vec<(Col, &'static str, u16)> = Vec::new();
    let mut used = 2u16;
    let forced = by_platform.then_some((Col::Platform, "PLATFORM", 11));
    for (col, title, w) in forced
        .into_iter()
        .chain(COLUMNS.iter().copied().filter(|(c, _, _)| wanted(c)))
    {
        let w = if col == Col::Name { names } else { w };
        if used + w >= width && col != Col::Name && Some((col, title, w)) != forced {
            break;
        }
        chosen.push((col, title, w));
        used += w + 1;
    }
    let mut ordered: Vec<(Col, &str, u16)> = DISPLAY_ORDER
        .iter()
        .filter_map(|c| chosen.iter().find(|(x, _, _)| x == c).copied())
        .collect();
    // The signal column takes whatever is left.
    if let Some(last) = ordered.iter_mut().find(|(c, _, _)| *c == Col::Signal) {
        last.2 += width.saturating_sub(used);
    }
    ordered
}

/// `name` in `width` characters: whole when it fits, else its head and tail around a `…`, so
/// `h100-rebooted-12` and `h100-rebooted-13` stay told apart by the suffix that differs.
fn middle_cut(name: &str, width: usize) -> String {
    let n = name.chars().count();
    if n <= width {
        return name.to_string();
    }
    if width < 3 {
        return name.chars().take(width).collect();
    }
    let tail = (width - 1) / 2;
    let head = width - 1 - tail;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

pub fn is_stale(h: &HostState, ctx: &Ctx<'_>) -> bool {
    let period = crate::signals::stale_after(ctx.poll);
    !h.link.is_usable() || h.last_reading.is_none_or(|t| ctx.now - t > period)
}

fn link_cell<'a>(h: &HostState, ctx: &Ctx<'a>) -> Span<'a> {
    let t = ctx.theme;
    match &h.link {
        LinkState::Up { rtt_ms, .. } if *rtt_ms >= 999.5 => {
            Span::styled(format!("✓ up {:.1}s", rtt_ms / 1000.0), t.ok)
        }
        LinkState::Up { rtt_ms, .. } => Span::styled(format!("✓ up {:.0}ms", rtt_ms), t.ok),
        LinkState::Degraded { .. } => Span::styled("~ slow", t.warn),
        LinkState::Connecting { .. } => Span::styled("… conn", t.stale),
        LinkState::Down { since, .. } => Span::styled(
            format!("✗ down {}", short_age(*since, ctx.now)),
            t.link_down,
        ),
        LinkState::AuthRefused { .. } => Span::styled("✗ auth", t.link_down),
        LinkState::HostkeyRefused { .. } => Span::styled("✗ hostkey", t.link_down),
    }
}

fn run_cell<'a>(h: &HostState, ctx: &Ctx<'a>) -> Span<'a> {
    let t = ctx.theme;
    match &h.run {
        RunState::NotConfigured => Span::styled("-", t.stale),
        RunState::Alive { .. } => Span::styled("▶ alive", t.ok),
        RunState::Dead { .. } => Span::styled("■ DEAD", t.run_dead),
        // The colour of a lost link: what was known has stopped being true.
        RunState::Unknown { .. } => Span::styled("? unknown", t.link_down),
    }
}

fn gpu_cells(h: &HostState, ctx: &Ctx<'_>, col: Col, width: u16) -> Span<'static> {
    let Some(latest) = h.history.latest_gpu() else {
        let text = match h.gpu {
            crate::readings::GpuAvailability::NoNvidiaSmi if col == Col::Clock => "no GPU",
            _ => "-",
        };
        return Span::styled(text, ctx.theme.stale);
    };
    let n = latest.gpus.len();
    let w = usize::from(width).saturating_sub(0);
    match col {
        Col::Clock => {
            // The most held-back GPU speaks for the box.
            let worst = (0..n)
                .filter_map(|i| {
                    let clock = latest.gpus[i].sm_clock_mhz?;
                    Some((
                        f64::from(clock)
                            / f64::from(known(&h.history, i, |g| g.sm_clock_max_mhz)?.max(1)),
                        clock,
                    ))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            match worst {
                Some((ratio, clock)) => Span::raw(format!(
                    "{} {clock}",
                    bar(ratio, w.saturating_sub(5).min(8))
                )),
                None => Span::raw(
                    latest
                        .gpus
                        .first()
                        .and_then(|g| g.sm_clock_mhz)
                        .map_or("?".into(), |c| format!("{c}MHz")),
                ),
            }
        }
        Col::Power => {
            let draw: f64 = latest.gpus.iter().filter_map(|g| g.power_draw_w).sum();
            // A cap missing for any GPU leaves the sum without a scale: no bar, not a full one.
            let cap: f64 = (0..n)
                .map(|i| known(&h.history, i, |g| g.power_limit_w))
                .sum::<Option<f64>>()
                .unwrap_or(0.0);
            if cap > 0.0 {
                Span::raw(format!(
                    "{} {draw:.0}W",
                    bar(draw / cap, w.saturating_sub(6).min(7))
                ))
            } else {
                Span::raw(format!("{draw:.0}W"))
            }
        }
        Col::Vram => {
            let used: u64 = latest.gpus.iter().filter_map(|g| g.mem_used_mib).sum();
            let total: Option<u64> = (0..n)
                .map(|i| known(&h.history, i, |g| g.mem_total_mib))
                .sum();
            // The GPU count after the sizes, in brackets (the header says so): "8×557/640G"
            // read as a multiplication.
            let gpus = if n > 1 {
                format!(" ({n})")
            } else {
                String::new()
            };
            Span::raw(format!(
                "{:.0}/{}G{gpus}",
                used as f64 / 1024.0,
                total.map_or("?".into(), |t| format!("{:.0}", t as f64 / 1024.0))
            ))
        }
        _ => {
            let utils: Vec<u32> = latest.gpus.iter().filter_map(|g| g.util_gpu_pct).collect();
            match utils.len() {
                0 => Span::raw("?"),
                len => Span::raw(format!("{}%", utils.iter().sum::<u32>() / len as u32)),
            }
        }
    }
}

fn disk_cell(sample: Option<&HostSample>, ctx: &Ctx<'_>) -> Span<'static> {
    let Some(sample) = sample else {
        return Span::styled("-", ctx.theme.stale);
    };
    let worst = sample
        .mounts
        .iter()
        .filter_map(|m| {
            let b = crate::signals::disk_usage(m).0.map(|u| u.pct());
            let i = crate::signals::disk_usage(m).1.map(|u| u.pct());
            Some((b.unwrap_or(0.0).max(i.unwrap_or(0.0)), b, i))
                .filter(|_| b.is_some() || i.is_some())
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match worst {
        Some((top, b, i)) => {
            let pct = |p: Option<f64>| p.map_or("?".into(), |p| format!("{p:.0}%"));
            let style = if top >= ctx.state.thresholds.disk_crit_pct {
                ctx.theme.crit
            } else if top >= ctx.state.thresholds.disk_warn_pct {
                ctx.theme.warn
            } else {
                Style::default()
            };
            Span::styled(format!("B{} I{}", pct(b), pct(i)), style)
        }
        None => Span::styled("-", ctx.theme.stale),
    }
}

/// A short name for each clock, for the narrow column.
pub fn clock_word(kind: ClockKind) -> &'static str {
    match kind {
        ClockKind::AutoRelease => "release",
        ClockKind::StoppedBilling => "bills stopped",
        ClockKind::IdleTimeout => "idle timeout",
        ClockKind::MaxSession => "session end",
        ClockKind::WeeklyQuota => "weekly quota",
        ClockKind::DiskFull => "disk full",
        ClockKind::BalanceRunway => "balance out",
        ClockKind::CheckpointInterval => "ckpt due",
        ClockKind::Walltime => "walltime",
        ClockKind::LifetimeEnd => "lifetime end",
    }
}

pub fn clock_style(clock: &Clock, ctx: &Ctx<'_>) -> Style {
    let urgency = Urgency::of(clock);
    match urgency.severity() {
        Some(severity) => ctx.theme.severity(Some(severity)),
        None if urgency == Urgency::Accruing => ctx.theme.billing,
        None => ctx.theme.text,
    }
}

fn clock_cell<'a>(h: &HostState, ctx: &Ctx<'a>) -> Span<'a> {
    let Some(clock) = h.clocks.first() else {
        return Span::styled("-", ctx.theme.stale);
    };
    let text = match (clock.remaining_secs, clock.accrued) {
        (Some(s), _) if s <= 0 => format!("FIRED {}", clock_word(clock.kind)),
        // "~" marks an estimate from a rate (disk growth, burn), not a deadline someone set.
        (Some(s), _) => format!(
            "{}{} {}",
            if clock.confidence == crate::clocks::Confidence::Estimate {
                "~"
            } else {
                ""
            },
            crate::signals::minutes(chrono::Duration::seconds(s)),
            clock_word(clock.kind)
        ),
        (None, Some(a)) => format!("{a:.2} {}", clock_word(clock.kind)),
        (None, None) => clock_word(clock.kind).to_string(),
    };
    Span::styled(text, clock_style(clock, ctx))
}

/// A silenced host still shows what it needs; the mark says no alert is sent for it.
fn signal_cell<'a>(h: &HostState, ctx: &Ctx<'a>, stale: bool, width: u16) -> Span<'a> {
    let Some(until) = ctx.app.silenced.get(&h.config.name) else {
        return needs_you(h, ctx, stale, width);
    };
    let head = format!("⊘{} ", until.format("%H:%M"));
    let room = width.saturating_sub(head.chars().count() as u16);
    let rest = needs_you(h, ctx, stale, room);
    Span::styled(format!("{head}{}", rest.content), rest.style)
}

fn needs_you<'a>(h: &HostState, ctx: &Ctx<'a>, stale: bool, width: u16) -> Span<'a> {
    let t = ctx.theme;
    if let Some(top) = h.signals.first().filter(|s| s.severity > Severity::Info) {
        let mark = if top.severity == Severity::Crit {
            "‼"
        } else {
            "!"
        };
        let more = h
            .signals
            .iter()
            .filter(|s| s.severity > Severity::Info)
            .count();
        let count = if more > 1 {
            format!("{more} ")
        } else {
            " ".to_string()
        };
        let head = format!("{mark}{count}");
        let room = usize::from(width).saturating_sub(head.chars().count());
        return Span::styled(
            format!("{head}{}", fit(&clean(&top.message, 200), room)),
            t.severity(Some(top.severity)),
        );
    }
    if stale {
        let when = h.last_reading.map_or("never read".to_string(), |r| {
            format!("data {} old", age(r, ctx.now))
        });
        return Span::styled(fit(&format!("stale: {when}"), usize::from(width)), t.stale);
    }
    let room = usize::from(width).saturating_sub(2);
    match h.signals.first() {
        Some(s) => Span::styled(format!("· {}", fit(&clean(&s.message, 200), room)), t.info),
        None => Span::styled("✓ ok", t.ok),
    }
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let t = ctx.theme;
    let width = area.width.saturating_sub(2);
    let names = name_width(
        ctx.state.hosts.iter().map(|h| h.config.name.as_str()),
        width,
    );
    let columns = fitted(
        width,
        super::queue_views::any_queue(ctx),
        names,
        ctx.app.sort == super::app::SortKey::Profile,
    );
    let visible = ctx.app.visible(ctx.state);
    let selected = ctx.app.selected_index(&visible);
    // Only the rows that fit are built: at 100 hosts most are off screen.
    let fits = usize::from(area.height.saturating_sub(3)).max(1);
    let first = super::widgets::window_start(selected, visible.len(), fits);
    let rows: Vec<Row> = visible
        .iter()
        .skip(first)
        .take(fits)
        .map(|h| {
            let stale = is_stale(h, ctx);
            let sample = h.history.latest_host().map(|r| &r.sample);
            let cells: Vec<Cell> = columns
                .iter()
                .map(|(col, _, w)| {
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
                        Col::Signal => signal_cell(h, ctx, stale, *w),
                        Col::Danger => clock_cell(h, ctx),
                        Col::Queue => super::queue_views::queue_cell(h, ctx),
                    };
                    let span = if stale
                        && matches!(
                            col,
                            Col::Clock | Col::Power | Col::Vram | Col::Util | Col::Disk
                        ) {
                        span.style(t.stale)
                    } else {
                        span
                    };
                    Cell::from(Line::from(span))
                })
                .collect();
            Row::new(cells)
        })
        .collect();
    let header = Row::new(columns.iter().map(|(_, title, _)| Cell::from(*title))).style(t.header);
    let widths: Vec<Constraint> = columns
        .iter()
        .map(|(_, _, w)| Constraint::Length(*w))
        .collect();
    let focused = ctx.app.pane == Pane::Hosts;
    let title = if ctx.app.filter.is_empty() {
        format!(
            " Fleet · {} boxes · sorted {} ",
            visible.len(),
            ctx.app.sort.word()
        )
    } else {
        format!(
            " Fleet · {} of {} match /{} ",
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(width: u16, queues: bool, by_platform: bool) -> Vec<Col> {
        fitted(width, queues, 14, by_platform)
            .into_iter()
            .map(|(c, _, _)| c)
            .collect()
    }

    #[test]
    fn columns_drop_in_one_order_and_never_come_back_narrower() {
        for queues in [false, true] {
            for width in 30..260u16 {
                let (narrow, wide) = (cols(width, queues, false), cols(width + 1, queues, false));
                assert!(
                    narrow.iter().all(|c| wide.contains(c)),
                    "a column shown at {width} but not at {}",
                    width + 1
                );
                // What shows is a head of the priority list.
                let priority: Vec<Col> = COLUMNS
                    .iter()
                    .map(|(c, _, _)| *c)
                    .filter(|c| queues || *c != Col::Queue)
                    .collect();
                assert!(
                    priority[..narrow.len()].iter().all(|c| narrow.contains(c)),
                    "{width}"
                );
            }
        }
        assert!(
            cols(80, false, true).contains(&Col::Platform),
            "sorted by it"
        );
        assert!(!cols(80, false, false).contains(&Col::Platform));
    }

    #[test]
    fn long_names_keep_the_suffix_that_tells_them_apart() {
        let names = ["h100-rebooted-12", "h100-rebooted-13"];
        let w = name_width(names.iter().copied(), 80);
        assert_eq!(w, 16, "the column grows to the names");
        assert_eq!(
            name_width(["a-very-long-host-name-indeed-9"].into_iter(), 80),
            16
        );
        let cut: Vec<String> = names.iter().map(|n| middle_cut(n, 14)).collect();
        assert_eq!(cut, ["h100-re…ted-12", "h100-re…ted-13"]);
        assert_eq!(middle_cut("short", 14), "short");
        assert_eq!(middle_cut("abcdef", 2), "ab");
    }
}
