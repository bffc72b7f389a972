//! A host's danger clocks in its detail, each with its urgency, time left and how sure it is;
//! what the box has cost so far and bills now; and what the provider's own CLI says of it.

use ratatui::text::Line;

use super::Ctx;
use super::host_detail::heading;
use super::widgets::age;
use crate::fleet::HostState;
use crate::sanitize::line as clean;

pub(super) fn clock_lines<'a>(h: &HostState, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let mut out = vec![heading("Danger clocks and cost", ctx)];
    if h.clocks.is_empty() {
        out.push(Line::styled("  none running", t.stale));
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
        out.push(Line::styled(
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
        out.push(Line::styled(
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
        out.push(provider_line(report, ctx));
    }
    out
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
