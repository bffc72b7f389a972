//! The fleet table's cells, one function a column: what each says about a host in the width
//! it has.

use ratatui::style::Style;
use ratatui::text::Span;

use super::super::Ctx;
use super::super::widgets::{age, bar, fit, known, short_age};
use super::columns::Col;
use crate::clocks::{Clock, ClockKind, Urgency};
use crate::fleet::HostState;
use crate::probe::sample::HostSample;
use crate::sanitize::line as clean;
use crate::signals::{RunState, Severity};
use crate::transport::LinkState;

pub(super) fn link_cell<'a>(h: &HostState, ctx: &Ctx<'a>) -> Span<'a> {
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

pub(super) fn run_cell<'a>(h: &HostState, ctx: &Ctx<'a>) -> Span<'a> {
    let t = ctx.theme;
    match &h.run {
        RunState::NotConfigured => Span::styled("-", t.stale),
        RunState::Alive { .. } => Span::styled("▶ alive", t.ok),
        RunState::Dead { .. } => Span::styled("■ DEAD", t.run_dead),
        // The colour of a lost link: what was known has stopped being true.
        RunState::Unknown { .. } => Span::styled("? unknown", t.link_down),
    }
}

pub(super) fn gpu_cells(h: &HostState, ctx: &Ctx<'_>, col: Col, width: u16) -> Span<'static> {
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
            // The GPU count after the sizes, in brackets (the header says so): "8×557/640GiB"
            // read as a multiplication. GiB, written: the unit of `status` and the detail.
            let gpus = if n > 1 {
                format!(" ({n})")
            } else {
                String::new()
            };
            Span::raw(format!(
                "{:.0}/{}GiB{gpus}",
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

pub(super) fn disk_cell(sample: Option<&HostSample>, ctx: &Ctx<'_>) -> Span<'static> {
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

/// The box's load against its CPUs online and its RAM in use: `7.9/8 54%`. Warned where the
/// load fills every CPU or RAM is nearly gone (a data loader starving the GPUs, a swap storm).
pub(super) fn cpu_cell(sample: Option<&HostSample>, ctx: &Ctx<'_>) -> Span<'static> {
    let Some(sample) = sample.filter(|s| s.load.is_some() || s.memory.is_some()) else {
        return Span::styled("-", ctx.theme.stale);
    };
    let load = sample.load.map(|l| l.one);
    let ram = sample.memory.and_then(|m| {
        let free = m.available_bytes?;
        (m.total_bytes > 0)
            .then(|| 100.0 * m.total_bytes.saturating_sub(free) as f64 / m.total_bytes as f64)
    });
    let full = load
        .zip(sample.cpus)
        .is_some_and(|(l, n)| l >= f64::from(n.max(1)))
        || ram.is_some_and(|r| r >= crate::signals::host::RAM_WARN_PCT);
    let style = if full {
        ctx.theme.warn
    } else {
        Style::default()
    };
    Span::styled(cpu_text(load, sample.cpus, ram), style)
}

fn cpu_text(load: Option<f64>, cpus: Option<u32>, ram_pct: Option<f64>) -> String {
    let load = match load {
        Some(l) if l < 9.95 => format!("{l:.1}"),
        Some(l) => format!("{l:.0}"),
        None => "?".into(),
    };
    let cpus = cpus.map_or("?".into(), |n| n.to_string());
    let ram = ram_pct.map_or("?".into(), |r| format!("{r:.0}%"));
    format!("{load}/{cpus} {ram}")
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

pub(super) fn clock_cell<'a>(h: &HostState, ctx: &Ctx<'a>) -> Span<'a> {
    let Some(clock) = h.clocks.first() else {
        return Span::styled("-", ctx.theme.stale);
    };
    let text = match (clock.remaining_secs, clock.accrued) {
        _ if Urgency::of(clock) == Urgency::Fired => format!("FIRED {}", clock_word(clock.kind)),
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
pub(super) fn signal_cell<'a>(h: &HostState, ctx: &Ctx<'a>, stale: bool, width: u16) -> Span<'a> {
    let Some(until) = ctx.app.silenced.get(&h.config.name) else {
        return needs_you(h, ctx, stale, width);
    };
    let head = format!("⊘{} ", until.format("%H:%M"));
    let room = width.saturating_sub(head.chars().count() as u16);
    let rest = needs_you(h, ctx, stale, room);
    Span::styled(format!("{head}{}", rest.content), rest.style)
}

/// The key on the row that deals with a signal, in words, where one does.
fn fixing_key(kind: crate::signals::SignalKind) -> Option<&'static str> {
    use crate::signals::SignalKind as K;
    match kind {
        K::ZombieVram => Some("K ends it"),
        K::IdleButBilling => Some("p pulls, T tears down"),
        K::RunDead | K::HungRun => Some("l log"),
        _ => None,
    }
}

fn needs_you<'a>(h: &HostState, ctx: &Ctx<'a>, stale: bool, width: u16) -> Span<'a> {
    let t = ctx.theme;
    // A box whose teardown was confirmed is gone: that, not its lost link, is its news.
    if let Some(at) = ctx.state.records(&h.config.name).and_then(|r| r.torn_down) {
        let said = format!(
            "torn down {} (confirmed; see the ledger)",
            at.format("%m-%d %H:%M")
        );
        return Span::styled(fit(&said, usize::from(width)), t.stale);
    }
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
        // The key that fixes it first, where one does: a cut never takes it.
        let key = fixing_key(top.kind).map_or(String::new(), |k| format!("{k} · "));
        let head = format!("{mark}{count}{key}");
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

#[cfg(test)]
mod tests {
    use super::cpu_text;

    #[test]
    fn load_reads_against_the_cpus_and_ram_as_a_share() {
        assert_eq!(cpu_text(Some(7.92), Some(8), Some(54.4)), "7.9/8 54%");
        assert_eq!(
            cpu_text(Some(123.4), Some(192), Some(100.0)),
            "123/192 100%"
        );
        assert_eq!(cpu_text(Some(9.96), Some(16), None), "10/16 ?");
        assert_eq!(cpu_text(None, None, Some(3.0)), "?/? 3%");
    }
}
