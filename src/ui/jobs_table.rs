//! The clusters' jobs under the boxes: one row per job, coloured by how loudly it needs the
//! person (a failure, the last ten minutes of walltime), with its state and why in words, its
//! nodes and GPUs, time run, walltime left and restarts. A cluster whose queue could not be
//! read says so on its own row, and its jobs stay as last read.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Ctx;
use super::app::Pane;
use super::widgets::fit;
use crate::cluster::{ClusterReading, JobRow};
use crate::sanitize::line as clean;

/// Rows the pane wants: every job and cluster error, and its border.
pub fn height(clusters: &[ClusterReading]) -> u16 {
    let rows: usize = clusters
        .iter()
        .map(|c| c.jobs.len() + usize::from(c.error.is_some()))
        .sum();
    u16::try_from(rows.max(1) + 2).unwrap_or(u16::MAX)
}

/// `1h02m`, `3d04h`: short enough for a column.
fn span(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
    match (d, h) {
        (0, 0) => format!("{m}m"),
        (0, _) => format!("{h}h{m:02}m"),
        _ => format!("{d}d{h:02}h"),
    }
}

/// A job in a line: who (cluster/id and name) and what (state and why) first, then the
/// figures; nodes and time run only where the terminal is wide, so the state never drops.
fn row_text(cluster: &str, job: &JobRow, width: usize) -> String {
    let left = job
        .walltime
        .as_ref()
        .and_then(|c| c.remaining_secs)
        .map(|s| format!("{} left", span(s.max(0) as u64)))
        .unwrap_or_default();
    let restarts = match (job.restarts, job.restart_limit) {
        (Some(n), Some(limit)) => format!("↻{n}/{limit}"),
        (Some(0), None) | (None, _) => String::new(),
        (Some(n), None) => format!("↻{n}"),
    };
    let gpus = job.gpus.map(|n| format!("{n}g")).unwrap_or_default();
    // A Kaggle kernel's id is `owner/slug` and its name the slug: the owner beside the cluster.
    let id = job
        .id
        .strip_suffix(&job.name)
        .and_then(|owner| owner.strip_suffix('/'))
        .unwrap_or(&job.id);
    let who = format!(
        " {:<16} {:<16} ",
        fit(&format!("{}/{}", clean(cluster, 40), clean(id, 80)), 16),
        fit(&clean(&job.name, 80), 16)
    );
    let mut figures = format!(" {left:>9} {gpus:>4} {restarts:>6}");
    if width >= 120 {
        let nodes = match (&job.node_list, job.nodes) {
            (Some(list), _) => list.clone(),
            (None, Some(1)) => "1 node".to_string(),
            (None, Some(n)) => format!("{n} nodes"),
            (None, None) => String::new(),
        };
        let run = job.elapsed_secs.map(span).unwrap_or_default();
        figures = format!(" {:<14} {run:>6}{figures}", fit(&clean(&nodes, 80), 14));
    }
    let mut what = job.summary();
    if let Some(gpus) = job.gpu_words() {
        what.push_str(" · ");
        what.push_str(&gpus);
    }
    if let Some(danger) = job.dangers.first() {
        what.push_str(" · ");
        what.push_str(danger);
    }
    let room = width.saturating_sub(who.chars().count() + figures.chars().count());
    let what = fit(&clean(&what, 400), room);
    format!("{who}{what:<room$}{figures}")
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let t = ctx.theme;
    let width = usize::from(area.width.saturating_sub(2));
    let focused = ctx.app.pane == Pane::Jobs;
    let shown = ctx.app.visible_jobs(ctx.state);
    let cursor = ctx.app.job_index(&shown);
    let mut lines = Vec::new();
    // A cluster's error line comes before its jobs; the cursor's line is counted as drawn.
    let mut cursor_line = 0;
    for cluster in &ctx.state.clusters {
        if let Some(error) = &cluster.error {
            lines.push(Line::styled(
                fit(&format!(" {}; jobs as last read", clean(error, 300)), width),
                t.warn,
            ));
        }
        for (index, (_, job)) in shown
            .iter()
            .enumerate()
            .filter(|(_, (c, _))| c.name == cluster.name)
        {
            let style = t.severity(Some(job.severity()));
            let here = focused && index == cursor;
            let mut text = row_text(&cluster.name, job, width);
            if here {
                text.replace_range(..1, "›");
                cursor_line = lines.len();
            }
            lines.push(Line::styled(
                text,
                if here {
                    style.patch(t.selection)
                } else {
                    style
                },
            ));
        }
    }
    // The cursor's row stays on screen.
    let rows = usize::from(area.height.saturating_sub(2));
    let skip = if focused {
        super::widgets::window_start(cursor_line, lines.len(), rows)
    } else {
        0
    };
    let mut lines: Vec<Line> = lines.into_iter().skip(skip).collect();
    if shown.is_empty() {
        lines.push(Line::styled(
            if ctx.app.job_filter.is_empty() {
                " no watched job in any queue yet".to_string()
            } else {
                format!(
                    " no job matches /{} (Esc clears it)",
                    clean(&ctx.app.job_filter, 40)
                )
            },
            t.stale,
        ));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(
            " Jobs · {}{} · cluster/job  name  state  (nodes  run)  walltime  GPUs  restarts ",
            shown.len(),
            super::widgets::filter_mark(&ctx.app.job_filter)
        ))
        .border_style(if focused { t.accent } else { t.border });
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_short() {
        assert_eq!(span(59), "0m");
        assert_eq!(span(3720), "1h02m");
        assert_eq!(span(3 * 86_400 + 4 * 3600), "3d04h");
    }
}
