//! One host in full: its GPUs (`host_gpus`), every mount in bytes and inodes with
//! time to full, the run, its log tail (sanitized) and checkpoint, signals, and its events.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Ctx;
use super::widgets::{age, bytes};
use crate::fleet::HostState;
use crate::sanitize::line as clean;
use crate::signals::{RunState, disk_usage};
use crate::transport::LinkState;

pub(super) fn heading<'a>(text: &str, ctx: &Ctx<'a>) -> Line<'a> {
    Line::from(Span::styled(format!("── {text} "), ctx.theme.header))
}

fn kv<'a>(key: &str, value: String, style: Style) -> Line<'a> {
    Line::from(vec![
        Span::raw(format!("  {key:<12}")),
        Span::styled(value, style),
    ])
}

fn link_lines<'a>(h: &HostState, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let text = match &h.link {
        LinkState::Up {
            since,
            rtt_ms,
            banner,
            auth,
        } => (
            format!(
                "up {} · rtt {rtt_ms:.1} ms · {} · {}",
                age(*since, ctx.now),
                clean(banner, 60),
                clean(auth, 60)
            ),
            t.ok,
        ),
        LinkState::Degraded { reason, .. } => (format!("degraded: {}", clean(reason, 120)), t.warn),
        LinkState::Connecting { attempt } => (format!("connecting (attempt {attempt})"), t.stale),
        LinkState::Down {
            since,
            reason,
            retry_in_ms,
        } => (
            format!(
                "DOWN for {}: {} · retry in {:.0}s",
                age(*since, ctx.now),
                clean(reason, 120),
                *retry_in_ms as f64 / 1000.0
            ),
            t.link_down,
        ),
        LinkState::AuthRefused { reason, .. } => (
            format!("AUTH REFUSED: {}", clean(reason, 2000)),
            t.link_down,
        ),
        LinkState::HostkeyRefused { reason, .. } => (
            format!("HOST KEY REFUSED: {}", clean(reason, 2000)),
            t.link_down,
        ),
    };
    let mut out = vec![kv("link", text.0, text.1)];
    out.extend(host_load(h, ctx));
    out
}

/// Load and RAM: a data loader starving the GPU shows here as high load beside idle GPUs.
fn host_load<'a>(h: &HostState, ctx: &Ctx<'a>) -> Option<Line<'a>> {
    let sample = &h.history.latest_host()?.sample;
    let mut parts = Vec::new();
    if let Some(l) = &sample.load {
        parts.push(format!(
            "load {:.2} {:.2} {:.2} ({} running of {} tasks)",
            l.one, l.five, l.fifteen, l.runnable, l.total_tasks
        ));
    }
    if let Some(m) = &sample.memory {
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        match m.available_bytes {
            Some(free) => parts.push(format!(
                "RAM {:.1}/{:.1} GiB used",
                gib(m.total_bytes.saturating_sub(free)),
                gib(m.total_bytes)
            )),
            None => parts.push(format!("RAM {:.1} GiB", gib(m.total_bytes))),
        }
        if let (Some(total), Some(free)) = (m.swap_total_bytes, m.swap_free_bytes)
            && total > 0
        {
            parts.push(format!(
                "swap {:.1} GiB used",
                gib(total.saturating_sub(free))
            ));
        }
    }
    (!parts.is_empty()).then(|| kv("host", parts.join(" · "), ctx.theme.text))
}

fn disk_lines<'a>(h: &HostState, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let mut out = vec![heading("Disks (bytes and inodes)", ctx)];
    let Some(latest) = h.history.latest_host() else {
        out.push(Line::styled("  no reading yet", ctx.theme.stale));
        return out;
    };
    for m in &latest.sample.mounts {
        let (b, i) = disk_usage(m);
        let pct = |u: Option<crate::signals::Usage>| {
            u.map_or("?".to_string(), |u| format!("{:.0}%", u.pct()))
        };
        let size = b.map_or("?".into(), |u| {
            format!("{} of {}", bytes(u.used), bytes(u.total))
        });
        let full = h
            .fill
            .iter()
            .find(|(mount, _)| *mount == m.mount)
            .map_or("growth not judged yet".to_string(), |(_, o)| o.describe());
        let worst = b.map_or(0.0, |u| u.pct()).max(i.map_or(0.0, |u| u.pct()));
        let style = ctx
            .theme
            .severity(if worst >= ctx.state.thresholds.disk_crit_pct {
                Some(crate::signals::Severity::Crit)
            } else if worst >= ctx.state.thresholds.disk_warn_pct {
                Some(crate::signals::Severity::Warn)
            } else {
                None
            });
        out.push(Line::styled(
            format!(
                "  {:<16} bytes {:>4} ({size}) · inodes {:>4} · {full}",
                clean(&m.mount, 16),
                pct(b),
                pct(i)
            ),
            style,
        ));
    }
    out
}

fn run_lines<'a>(h: &HostState, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let mut out = vec![heading("Run", ctx)];
    let (text, style) = match &h.run {
        RunState::NotConfigured => (
            "no run configured (set run = \"tmux session\" or run_process = \"pattern\")"
                .to_string(),
            t.stale,
        ),
        RunState::Alive { how } => (format!("alive: {}", clean(how, 120)), t.ok),
        RunState::Dead {
            last_seen_alive,
            why,
        } => (
            format!(
                "DEAD: {}{}",
                clean(why, 120),
                last_seen_alive.map_or(String::new(), |at| format!(
                    " (last seen alive {} ago)",
                    age(at, ctx.now)
                ))
            ),
            t.run_dead,
        ),
        RunState::Unknown { since, reason } => (
            format!(
                "unknown ({}){}",
                clean(reason, 60),
                since.map_or(String::new(), |s| format!(
                    " since {}",
                    s.format("%H:%M:%S")
                ))
            ),
            t.link_down,
        ),
    };
    out.push(kv("state", text, style));
    let Some(sample) = h.history.latest_host().map(|r| &r.sample) else {
        return out;
    };
    if let Some(log) = &sample.log {
        out.push(kv(
            "log",
            format!(
                "{} · written {} ago",
                bytes(log.size_bytes),
                age(log.modified, ctx.now)
            ),
            t.text,
        ));
        for line in sample.log_tail.iter().rev().take(8).rev() {
            out.push(Line::styled(format!("    │ {}", clean(line, 160)), t.text));
        }
    }
    if let Some(ckpt) = &sample.checkpoint {
        out.push(kv(
            "checkpoint",
            format!(
                "{} · {} · {} old",
                clean(ckpt.path.as_deref().unwrap_or("?"), 80),
                bytes(ckpt.size_bytes),
                age(ckpt.modified, ctx.now)
            ),
            t.text,
        ));
    }
    out
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let t = ctx.theme;
    let Some(h) = ctx.app.detail_host(ctx.state) else {
        frame.render_widget(
            Paragraph::new("no host selected").block(Block::default().borders(Borders::ALL)),
            area,
        );
        return;
    };
    let mut lines = Vec::new();
    lines.extend(link_lines(h, ctx));
    if let Some(at) = h.last_reading {
        lines.push(kv(
            "data",
            format!("{} old", age(at, ctx.now)),
            if h.is_stale(ctx.now, ctx.poll) {
                t.stale
            } else {
                t.text
            },
        ));
    }
    lines.push(heading("Needs you", ctx));
    if h.signals.is_empty() {
        lines.push(Line::styled("  ✓ nothing", t.ok));
    }
    for s in &h.signals {
        // Wrapped, never cut: a signal says what to do, and the commands it names are copied.
        let message = clean(&s.message, 2000);
        lines.push(Line::styled(
            format!("  {:<4} {message}", s.severity.word()),
            t.severity(Some(s.severity)),
        ));
        // Each command again on a line of its own, so wrapping never splits it.
        for command in commands_in(&message) {
            lines.push(Line::styled(format!("       $ {command}"), t.accent));
        }
    }
    lines.extend(super::host_clocks::clock_lines(h, ctx));
    lines.extend(super::host_gpus::gpu_lines(h, ctx));
    lines.extend(disk_lines(h, ctx));
    lines.extend(run_lines(h, ctx));
    lines.extend(super::queue_views::detail_lines(h, ctx));
    if let Some(profile) = ctx.state.profile(&h.config.profile) {
        lines.push(heading(&format!("Platform: {}", profile.title), ctx));
        lines.push(Line::styled(
            format!("  {}", clean(&profile.summary, 300)),
            t.text,
        ));
        for warning in &profile.warnings {
            lines.push(Line::styled(
                format!("  ! {}", clean(warning, 300)),
                t.stale,
            ));
        }
    }
    lines.push(heading("Pull and teardown", ctx));
    lines.extend(record_lines(&h.config.name, None, ctx));
    lines.push(Line::styled(
        match &h.config.pull {
            Some(_) => {
                "  p pulls the [host.pull] paths home and verifies them by loading; \
                        T opens the teardown guard, refused until the last pull is verified-current"
            }
            None => "  no [host.pull] paths configured: teardown stays refused (see docs/pulls-and-teardown.md)",
        },
        t.stale,
    ));
    if let Some(who) = ctx.app.holders.get(&h.config.name) {
        // Whoever acts on the box now: p and T are refused (or wait) until it ends.
        lines.push(Line::styled(
            format!("  held now: {}", clean(who, 200)),
            t.warn,
        ));
    }
    lines.push(heading("Events", ctx));
    for e in ctx
        .state
        .events
        .iter()
        .filter(|e| e.host == h.config.name)
        .take(20)
    {
        lines.push(Line::styled(
            format!(
                "  {} {:<4} {}",
                e.at.format("%H:%M:%S"),
                e.severity.word(),
                clean(&e.text, 200)
            ),
            t.severity(Some(e.severity)),
        ));
    }
    if let Some((at, e)) = &h.last_error {
        lines.push(Line::styled(
            format!(
                "  last probe error {} ago: {}",
                age(*at, ctx.now),
                clean(e, 200)
            ),
            t.warn,
        ));
    }
    let title = format!(
        " {} · {} · {} ",
        clean(&h.config.name, 40),
        clean(&h.config.profile, 20),
        clean(&h.config.target.to_string(), 60)
    );
    super::widgets::detail_page(frame, area, ctx, title, lines);
}

/// The commands a message names between backticks (`ssh-keygen -R …`): text with a space in
/// it, so a lone `word` in quotes is not taken for one.
fn commands_in(message: &str) -> Vec<&str> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.contains(' '))
        .collect()
}

/// What the ledger records of `member`: its last pull and its last teardown (of `job` alone,
/// for a cluster's job), or that there is no pull yet (the guard refuses a teardown until a
/// pull is on record).
pub(super) fn record_lines(member: &str, job: Option<&str>, ctx: &Ctx<'_>) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let records = ctx.state.records(member);
    let pull = records.and_then(|r| r.last_pull.clone());
    let mut out = vec![match pull {
        Some(line) => Line::styled(format!("  last {}", clean(&line, 300)), t.text),
        None => Line::styled("  no pull on record yet".to_string(), t.stale),
    }];
    let teardown = match job {
        Some(job) => records.and_then(|r| r.job_teardowns.get(job)),
        None => records.and_then(|r| r.last_teardown.as_ref()),
    };
    if let Some(line) = teardown {
        let style = if records.is_some_and(|r| r.torn_down.is_some()) {
            t.text
        } else {
            t.warn
        };
        out.push(Line::styled(format!("  last {}", clean(line, 300)), style));
    }
    out
}
