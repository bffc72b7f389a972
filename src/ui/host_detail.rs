//! One host in full: GPUs with sparklines, who holds VRAM, every mount in bytes and inodes with
//! time to full, the run, its log tail (sanitized) and checkpoint, signals, and its events.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Ctx;
use super::widgets::{age, bytes, known, series, sparkline};
use crate::fleet::HostState;
use crate::sanitize::line as clean;
use crate::signals::{RunState, disk_usage};
use crate::transport::LinkState;

const SPARK_WIDTH: usize = 40;

fn heading<'a>(text: &str, ctx: &Ctx<'a>) -> Line<'a> {
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

fn gpu_lines<'a>(h: &HostState, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let mut out = vec![heading("GPUs", ctx)];
    let Some(latest) = h.history.latest_gpu() else {
        let why = match &h.gpu {
            crate::readings::GpuAvailability::NoNvidiaSmi => {
                "no GPUs: nvidia-smi is not installed".to_string()
            }
            crate::readings::GpuAvailability::Failing(why) => {
                format!("nvidia-smi failing: {}", clean(why, 120))
            }
            _ => "no GPU reading yet".to_string(),
        };
        out.push(Line::styled(format!("  {why}"), t.stale));
        return out;
    };
    let processes = h
        .history
        .latest_host()
        .and_then(|r| r.sample.gpu_processes.clone())
        .unwrap_or_default();
    if latest.gpus.len() >= TABLE_FROM {
        out.extend(gpu_table(h, &latest.gpus, &processes, ctx));
        return out;
    }
    for (i, g) in latest.gpus.iter().enumerate() {
        let max_clock = known(&h.history, i, |g| g.sm_clock_max_mhz);
        let cap = known(&h.history, i, |g| g.power_limit_w);
        let total = known(&h.history, i, |g| g.mem_total_mib);
        let name = known(&h.history, i, |g| g.name.clone()).unwrap_or_else(|| "GPU".into());
        let reasons = g.event_reasons.map(|r| {
            r.active()
                .iter()
                .map(|a| a.label())
                .collect::<Vec<_>>()
                .join(", ")
        });
        out.push(Line::from(vec![
            Span::styled(format!("  GPU{} ", g.index.unwrap_or(i as u32)), t.accent),
            Span::raw(format!(
                "{} · util {}% · {}°C · {}",
                clean(&name, 40),
                g.util_gpu_pct.map_or("?".into(), |u| u.to_string()),
                g.temp_gpu_c.map_or("?".into(), |c| c.to_string()),
                reasons
                    .filter(|r| !r.is_empty())
                    .map_or("no clock limits".into(), |r| format!("clocks held by: {r}"))
            )),
        ]));
        let clocks = series(&h.history, i, |g| g.sm_clock_mhz.map(f64::from));
        let power = series(&h.history, i, |g| g.power_draw_w);
        let vram = series(&h.history, i, |g| g.mem_used_mib.map(|m| m as f64));
        out.push(Line::from(vec![
            Span::raw("    SM clock  "),
            Span::styled(
                sparkline(&clocks, SPARK_WIDTH, 0.0, max_clock.map(f64::from)),
                t.accent,
            ),
            Span::raw(format!(
                " {} / {} MHz",
                g.sm_clock_mhz.map_or("?".into(), |c| c.to_string()),
                max_clock.map_or("?".into(), |c| c.to_string())
            )),
        ]));
        out.push(Line::from(vec![
            Span::raw("    power     "),
            Span::styled(sparkline(&power, SPARK_WIDTH, 0.0, cap), t.billing),
            Span::raw(format!(
                " {} / {} W",
                g.power_draw_w.map_or("?".into(), |p| format!("{p:.0}")),
                cap.map_or("?".into(), |c| format!("{c:.0}"))
            )),
        ]));
        out.push(Line::from(vec![
            Span::raw("    VRAM      "),
            Span::styled(
                sparkline(&vram, SPARK_WIDTH, 0.0, total.map(|t| t as f64)),
                t.info,
            ),
            Span::raw(format!(
                " {} / {} MiB",
                g.mem_used_mib.map_or("?".into(), |m| m.to_string()),
                total.map_or("?".into(), |m| m.to_string())
            )),
        ]));
        for p in processes
            .iter()
            .filter(|p| p.gpu_uuid.is_none() || p.gpu_uuid == g.uuid)
        {
            out.push(Line::raw(format!(
                "    holds VRAM: pid {} {} {} MiB",
                p.pid,
                clean(p.name.as_deref().unwrap_or("?"), 40),
                p.used_mib.map_or("?".into(), |m| m.to_string())
            )));
        }
    }
    out
}

/// From this many GPUs on, the detail shows one row per GPU (nvitop's table) instead of three
/// sparklines each: eight GPUs fit a screen.
const TABLE_FROM: usize = 3;

/// One row per GPU: index, util, SM clock against its max, power against its cap, VRAM in
/// GiB, temperature, clock limits, and who holds its VRAM.
fn gpu_table<'a>(
    h: &HostState,
    gpus: &[crate::probe::GpuSample],
    processes: &[crate::probe::GpuProcess],
    ctx: &Ctx<'a>,
) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let gib = |mib: u64| format!("{:.1}", mib as f64 / 1024.0);
    let mut out = vec![Line::styled(
        "  GPU  UTIL  SM/MAX MHz   POWER/CAP W  VRAM GiB      TEMP  HOLDERS",
        t.header,
    )];
    for (i, g) in gpus.iter().enumerate() {
        let max_clock = known(&h.history, i, |g| g.sm_clock_max_mhz);
        let cap = known(&h.history, i, |g| g.power_limit_w);
        let total = known(&h.history, i, |g| g.mem_total_mib);
        let q = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        let holders: Vec<String> = processes
            .iter()
            .filter(|p| p.gpu_uuid.is_some() && p.gpu_uuid == g.uuid)
            .map(|p| format!("{} {}", p.pid, clean(p.name.as_deref().unwrap_or("?"), 24)))
            .collect();
        let limits = g
            .event_reasons
            .map(|r| {
                r.active()
                    .iter()
                    .map(|a| a.label())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .filter(|r| !r.is_empty());
        let row = format!(
            "  {:<4} {:>4}  {:>11}  {:>11}  {:>12}  {:>4}  {}{}",
            g.index.unwrap_or(i as u32),
            q(g.util_gpu_pct.map(|u| format!("{u}%"))),
            format!(
                "{}/{}",
                q(g.sm_clock_mhz.map(|c| c.to_string())),
                q(max_clock.map(|c| c.to_string()))
            ),
            format!(
                "{}/{}",
                q(g.power_draw_w.map(|p| format!("{p:.0}"))),
                q(cap.map(|c| format!("{c:.0}")))
            ),
            format!("{}/{}", q(g.mem_used_mib.map(gib)), q(total.map(gib))),
            q(g.temp_gpu_c.map(|c| format!("{c}°C"))),
            if holders.is_empty() {
                "-".to_string()
            } else {
                holders.join(", ")
            },
            limits
                .map(|l| format!(" · clocks held by: {l}"))
                .unwrap_or_default()
        );
        out.push(Line::raw(row));
    }
    out
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
    lines.push(heading("Danger clocks and cost", ctx));
    if h.clocks.is_empty() {
        lines.push(Line::styled("  none running", t.stale));
    }
    for clock in &h.clocks {
        let left = match (clock.remaining_secs, clock.accrued) {
            _ if crate::clocks::Urgency::of(clock) == crate::clocks::Urgency::Fired => {
                crate::clocks::Urgency::Fired.word().to_string()
            }
            (Some(s), _) => format!(
                "in {}",
                crate::signals::minutes(chrono::Duration::seconds(s))
            ),
            (None, Some(a)) => format!("{a:.2} so far"),
            (None, None) => String::new(),
        };
        lines.push(Line::styled(
            format!(
                "  {:<8} {:<13} {:<12} {}: {}",
                crate::clocks::Urgency::of(clock).word(),
                super::fleet_table::clock_word(clock.kind),
                left,
                clock.confidence.word(),
                clean(&clock.message, 300)
            ),
            super::fleet_table::clock_style(clock, ctx),
        ));
    }
    if let Some(ledger) = &h.ledger {
        let currency = h.config.billing.currency.as_deref().unwrap_or("USD");
        let rate = h
            .rates(ctx.state.profile(&h.config.profile))
            .now(h.billed())
            .map_or(String::new(), |p| format!(" · {p:.2}/h now"));
        lines.push(Line::styled(
            format!(
                "  cost     {:.2} {currency} since {} ({:.2} while idle){rate}",
                ledger.spent,
                ledger.first_seen_up.format("%H:%M UTC"),
                ledger.idle_spent,
            ),
            t.billing,
        ));
    }
    if let Some(report) = &h.provider {
        lines.push(provider_line(report, ctx));
    }
    lines.extend(gpu_lines(h, ctx));
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

/// What the provider's CLI said, and when: its state and price, or why there is none.
fn provider_line(report: &crate::provider::ProviderReport, ctx: &Ctx<'_>) -> Line<'static> {
    let asked = format!("asked {} ago", age(report.checked_at, ctx.now));
    match (&report.state, &report.error) {
        (Some(state), _) => Line::styled(
            format!(
                "  {}   {} · {} running, {} stopped · {asked}",
                report.provider,
                clean(state.state.word(), 40),
                state
                    .price_per_hour
                    .map_or("?".into(), |p| format!("{p:.3}/h")),
                state
                    .stopped_price_per_hour
                    .map_or("?".into(), |p| format!("{p:.3}/h")),
            ),
            ctx.theme.billing,
        ),
        (None, error) => Line::styled(
            format!(
                "  {}   {} · {asked}; costs come from fleet.toml",
                report.provider,
                clean(error.as_deref().unwrap_or("no answer"), 200)
            ),
            ctx.theme.stale,
        ),
    }
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
