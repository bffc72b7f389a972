//! The header: the fleet's totals in one line. At full width every figure with its words; when
//! that does not fit (80 columns), a compact form that still keeps what matters at 3 a.m.: how
//! many need you, the data's age, what is down and the burn rate.

use ratatui::text::{Line, Span};

use super::{Ctx, widgets};
use crate::readings::GpuAvailability;
use crate::signals::{Severity, SignalKind};

/// The figures, counted once for either form.
struct Totals {
    hosts: usize,
    up: usize,
    gpus: usize,
    busy: usize,
    idle: usize,
    zombie: usize,
    no_gpu: usize,
    need: usize,
    /// Burn per hour, spent, spent idle; None when nothing bills.
    money: Option<(f64, f64, f64)>,
    runway_hours: Option<f64>,
    data: String,
}

fn totals(ctx: &Ctx<'_>) -> Totals {
    let hosts = &ctx.state.hosts;
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
    // The oldest reading among hosts that are up: one frozen box must show, not hide behind
    // eleven fresh ones.
    let oldest_up = hosts
        .iter()
        .filter(|h| h.link.is_usable())
        .map(|h| h.last_reading)
        .min();
    let burn = ctx.state.burn_per_hour();
    let sum = |f: fn(&crate::clocks::CostLedger) -> f64| -> f64 {
        hosts.iter().filter_map(|h| h.ledger.as_ref()).map(f).sum()
    };
    Totals {
        hosts: hosts.len(),
        up: hosts.iter().filter(|h| h.link.is_usable()).count(),
        gpus,
        busy,
        idle,
        zombie,
        no_gpu: hosts
            .iter()
            .filter(|h| h.gpu == GpuAvailability::NoNvidiaSmi)
            .count(),
        need: hosts
            .iter()
            .filter(|h| h.worst() >= Some(Severity::Warn))
            .count(),
        money: (burn > 0.0).then(|| (burn, sum(|l| l.spent), sum(|l| l.idle_spent))),
        runway_hours: ctx.state.runway_hours(),
        data: match oldest_up {
            None => "no host up".to_string(),
            Some(None) => "data: a host up has sent none yet".to_string(),
            Some(Some(at)) => format!("data {}", widgets::age(at, ctx.now)),
        },
    }
}

/// The widest form that fits: everything; everything but the clock and the money spent; or
/// the compact form.
pub fn line<'a>(ctx: &Ctx<'a>, width: u16) -> Line<'a> {
    let n = totals(ctx);
    [full(ctx, &n, true), full(ctx, &n, false)]
        .into_iter()
        .find(|l| l.width() <= usize::from(width))
        .unwrap_or_else(|| {
            // Whole figures only: the least important ones at the end are dropped, not cut.
            let mut room = usize::from(width);
            let spans = compact(ctx, &n)
                .spans
                .into_iter()
                .take_while(|s| {
                    let fits = s.width() <= room;
                    room = room.saturating_sub(s.width());
                    fits
                })
                .collect::<Vec<_>>();
            Line::from(spans)
        })
}

fn full<'a>(ctx: &Ctx<'a>, n: &Totals, all: bool) -> Line<'a> {
    let t = ctx.theme;
    let mut spans = vec![Span::styled(" rigwatch ", t.header)];
    if ctx.app.demo {
        spans.push(Span::styled(" DEMO: replayed captures ", t.demo));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled(
        format!("{} boxes {} up", n.hosts, n.up),
        t.text,
    ));
    if n.up < n.hosts {
        spans.push(Span::styled(
            format!(" {} down", n.hosts - n.up),
            t.link_down,
        ));
    }
    spans.push(Span::styled(
        format!(" · {} GPUs {} busy {} idle", n.gpus, n.busy, n.idle),
        t.text,
    ));
    if n.zombie > 0 {
        spans.push(Span::styled(format!(" {} zombie", n.zombie), t.crit));
    }
    if n.no_gpu > 0 {
        spans.push(Span::styled(
            format!(" · {} without GPU", n.no_gpu),
            t.stale,
        ));
    }
    spans.push(need(ctx, n, " · "));
    if let Some((burn, spent, idle_spent)) = n.money {
        let spent = if all {
            format!(", spent {spent:.2} ({idle_spent:.2} idle)")
        } else {
            String::new()
        };
        spans.push(Span::styled(format!(" · {burn:.2}/h{spent}"), t.billing));
        if let Some(hours) = n.runway_hours {
            spans.push(runway(ctx, hours, format!(" · balance {hours:.1} h")));
        }
    }
    let clock = if all {
        format!(" · {}", ctx.now.format("%H:%M:%S UTC"))
    } else {
        String::new()
    };
    spans.push(Span::styled(format!(" · {}{clock}", n.data), t.stale));
    Line::from(spans)
}

/// The figures that matter most first, so a terminal narrower still cuts the least: how many
/// need you, the data's age, what is down, zombies, the burn, the GPUs.
fn compact<'a>(ctx: &Ctx<'a>, n: &Totals) -> Line<'a> {
    let t = ctx.theme;
    let mut spans = vec![if ctx.app.demo {
        Span::styled(" DEMO ", t.demo)
    } else {
        Span::styled(" rigwatch ", t.header)
    }];
    spans.push(need(ctx, n, " "));
    spans.push(Span::styled(format!(" · {}", n.data), t.stale));
    spans.push(Span::styled(format!(" · {}/{} up", n.up, n.hosts), t.text));
    if n.up < n.hosts {
        spans.push(Span::styled(format!(" {}↓", n.hosts - n.up), t.link_down));
    }
    if n.zombie > 0 {
        spans.push(Span::styled(format!(" · {} zombie", n.zombie), t.crit));
    }
    if let Some((burn, _, _)) = n.money {
        spans.push(Span::styled(format!(" · {burn:.2}/h"), t.billing));
        if let Some(hours) = n.runway_hours {
            spans.push(runway(ctx, hours, format!(" {hours:.0}h left")));
        }
    }
    spans.push(Span::styled(
        format!(" · {}/{} GPU busy", n.busy, n.gpus),
        t.text,
    ));
    Line::from(spans)
}

fn need<'a>(ctx: &Ctx<'a>, n: &Totals, before: &str) -> Span<'a> {
    let t = ctx.theme;
    Span::styled(
        format!("{before}{} need you", n.need),
        if n.need > 0 { t.warn } else { t.ok },
    )
}

fn runway<'a>(ctx: &Ctx<'a>, hours: f64, text: String) -> Span<'a> {
    let t = ctx.theme;
    Span::styled(text, if hours < 6.0 { t.crit } else { t.billing })
}
