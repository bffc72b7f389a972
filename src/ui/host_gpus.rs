//! A host's GPUs in its detail: for one or two, a line each with SM clock, power and VRAM as
//! sparklines against their limits and the processes holding VRAM; from three on, one row per
//! GPU (nvitop's table), so eight fit a screen.

use ratatui::text::{Line, Span};

use super::Ctx;
use super::host_detail::heading;
use super::widgets::{known, series, sparkline};
use crate::fleet::HostState;
use crate::sanitize::line as clean;

const SPARK_WIDTH: usize = 40;

pub(super) fn gpu_lines<'a>(h: &HostState, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
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
