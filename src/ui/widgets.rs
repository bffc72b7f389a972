//! Small text-drawing helpers shared by the views: bars, sparklines, sizes and ages.

use chrono::{DateTime, Utc};

use crate::probe::GpuSample;
use crate::readings::HostHistory;

const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
const SPARKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A horizontal bar `width` cells wide filled to `fraction` (clamped to 0..=1), in eighths.
pub fn bar(fraction: f64, width: usize) -> String {
    let fraction = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let eighths = (fraction * (width * 8) as f64).round() as usize;
    let mut out: String = "█".repeat(eighths / 8);
    if eighths % 8 > 0 {
        out.push(EIGHTHS[eighths % 8 - 1]);
    }
    let used = out.chars().count();
    out.push_str(&"·".repeat(width.saturating_sub(used)));
    out
}

/// A sparkline of the last `width` values, scaled between `floor` and the series' max (or
/// `ceiling` when given, e.g. a clock's max or a power cap).
pub fn sparkline(values: &[f64], width: usize, floor: f64, ceiling: Option<f64>) -> String {
    let tail = &values[values.len().saturating_sub(width)..];
    // Without the limit a bar has no scale: scaled to its own peak, a steady value would look
    // pinned at the maximum. Dots keep the width and say "no scale".
    let Some(top) = ceiling.map(|c| c.max(floor + 1e-9)) else {
        return "·".repeat(tail.len());
    };
    tail.iter()
        .map(|v| {
            let level = ((v - floor) / (top - floor) * 7.0).round().clamp(0.0, 7.0) as usize;
            SPARKS[level]
        })
        .collect()
}

pub fn bytes(n: u64) -> String {
    // Binary units, written as such: the same GiB as `status`, the detail and every message.
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n}B")
    } else if value < 10.0 {
        format!("{value:.1}{}", UNITS[unit])
    } else {
        format!("{value:.0}{}", UNITS[unit])
    }
}

pub fn age(since: DateTime<Utc>, now: DateTime<Utc>) -> String {
    crate::signals::minutes(now - since)
}

/// The newest known value of a GPU field for GPU `position`: fields a driver or a capture
/// leaves out in one sample (max clocks, the power cap) are taken from the last that had them.
pub fn known<T>(
    history: &HostHistory,
    position: usize,
    field: impl Fn(&GpuSample) -> Option<T>,
) -> Option<T> {
    history
        .gpu()
        .rev()
        .take(300)
        .find_map(|r| r.gpus.get(position).and_then(&field))
}

/// A time series of one GPU field, oldest first.
pub fn series(
    history: &HostHistory,
    position: usize,
    field: impl Fn(&GpuSample) -> Option<f64>,
) -> Vec<f64> {
    history
        .gpu()
        .filter_map(|r| r.gpus.get(position).and_then(&field))
        .collect()
}

pub use crate::sanitize::fit;

/// The first item shown when item `cursor` of `len` must stay on a window of `rows`: the window
/// follows the cursor and never runs past the end. Every scrolling pane and the mouse use it, so
/// a click lands on the row that was drawn.
pub fn window_start(cursor: usize, len: usize, rows: usize) -> usize {
    let rows = rows.max(1);
    cursor
        .saturating_sub(rows - 1)
        .min(len.saturating_sub(rows))
}

/// An age in its largest unit (`45s`, `17m`, `5h`, `3d`), for cells too narrow for `1h05m`.
pub fn short_age(since: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (now - since).num_seconds().max(0);
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// How far `lines`, word-wrapped in `area` (inside its border), can scroll before they show
/// nothing: their wrapped rows (as ratatui wraps them) less the rows that fit. Records it in the
/// app for the keys and gives the scroll to draw with, so a view never scrolls into a blank pane.
pub fn clamp_scroll(
    ctx: &super::Ctx<'_>,
    lines: &[ratatui::text::Line<'_>],
    area: ratatui::layout::Rect,
) -> u16 {
    let end = wrapped_rows(lines, area.width.saturating_sub(2))
        .saturating_sub(usize::from(area.height.saturating_sub(2)));
    let end = u16::try_from(end).unwrap_or(u16::MAX);
    ctx.app.scroll_end.set(end);
    ctx.app.detail_scroll.min(end)
}

/// A popup `width` wide, as tall as `lines` wrapped inside its borders (at most `area`'s
/// height), centred in `area`; the rows the lines take, and the lines wrapped under their
/// indent ([`indent_wrapped`]) to draw.
pub fn popup(
    area: ratatui::layout::Rect,
    width: u16,
    lines: Vec<ratatui::text::Line<'_>>,
) -> (
    ratatui::layout::Rect,
    usize,
    Vec<ratatui::text::Line<'static>>,
) {
    let width = width.min(area.width);
    let lines = indent_wrapped(lines, usize::from(width.saturating_sub(2)));
    let rows = wrapped_rows(&lines, width.saturating_sub(2));
    let height = u16::try_from(rows + 2).unwrap_or(u16::MAX).min(area.height);
    (centered(area, width, height), rows, lines)
}

/// A `width` × `height` rectangle (each at most `area`'s) in the middle of `area`.
pub fn centered(area: ratatui::layout::Rect, width: u16, height: u16) -> ratatui::layout::Rect {
    let (width, height) = (width.min(area.width), height.min(area.height));
    ratatui::layout::Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// Rows `lines` take when word-wrapped to `width`.
pub fn wrapped_rows(lines: &[ratatui::text::Line<'_>], width: u16) -> usize {
    ratatui::widgets::Paragraph::new(lines.to_vec())
        .wrap(ratatui::widgets::Wrap { trim: false })
        .line_count(width.max(1))
}

/// Lines wrapped at words to `width`, each span keeping its style, with every continuation
/// indented: under a labelled line's value (a first span of at most half the width, such as
/// "  walltime    "), else two past the line's own indent. ratatui's wrap starts continuations
/// at the border, where they read as a new line of their own.
pub fn indent_wrapped(
    lines: Vec<ratatui::text::Line<'_>>,
    width: usize,
) -> Vec<ratatui::text::Line<'static>> {
    use ratatui::text::{Line, Span};
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        if line.width() <= width || width < 8 {
            let spans: Vec<Span<'static>> = line
                .spans
                .iter()
                .map(|s| Span::styled(s.content.to_string(), s.style))
                .collect();
            out.push(Line::from(spans).style(line.style));
            continue;
        }
        let first = line.spans.first().map_or(0, |s| s.width());
        let indent = if line.spans.len() > 1 && first <= width / 2 {
            first
        } else {
            let text = line.spans.first().map_or("", |s| &*s.content);
            text.chars().take_while(|c| *c == ' ').count() + 2
        };
        let pad = " ".repeat(indent.min(width / 2));
        let mut current: Vec<Span<'static>> = Vec::new();
        let mut used = 0;
        for span in &line.spans {
            let style = span.style.patch(line.style);
            for word in span.content.split_inclusive(' ') {
                let words = word.trim_end().chars().count();
                if used + words > width && used > pad.len() {
                    out.push(trimmed(std::mem::take(&mut current)));
                    current.push(Span::raw(pad.clone()));
                    used = pad.len();
                }
                current.push(Span::styled(word.to_string(), style));
                used += word.chars().count();
            }
        }
        if used > 0 {
            out.push(trimmed(current));
        }
    }
    out
}

/// A wrapped line without the space its last word carried.
fn trimmed(mut spans: Vec<ratatui::text::Span<'static>>) -> ratatui::text::Line<'static> {
    if let Some(last) = spans.last_mut() {
        last.content = last.content.trim_end().to_string().into();
    }
    ratatui::text::Line::from(spans)
}

/// " match /gpu" after a pane's count while its filter is set; nothing when it is not.
pub fn filter_mark(filter: &str) -> String {
    if filter.is_empty() {
        String::new()
    } else {
        format!(" match /{}", crate::sanitize::line(filter, 40))
    }
}

/// A detail view's page: `lines` wrapped under their indent, scrolled as far as the person
/// scrolled (never past the end), in a bordered block titled `title`.
pub fn detail_page<'a>(
    frame: &mut ratatui::Frame,
    area: ratatui::layout::Rect,
    ctx: &super::Ctx<'_>,
    title: String,
    lines: Vec<ratatui::text::Line<'a>>,
) {
    use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
    let lines = indent_wrapped(lines, usize::from(area.width.saturating_sub(2)));
    let scroll = clamp_scroll(ctx, &lines, area);
    let paragraph = Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(title)
                .border_style(ctx.theme.accent),
        )
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
    frame.render_widget(paragraph, area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_keep_their_indent() {
        use ratatui::text::Line;
        let lines = vec![Line::raw(
            "  CRIT will not connect: the server now presents another key; remove the old entry",
        )];
        let wrapped: Vec<String> = indent_wrapped(lines, 40)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert!(wrapped.len() > 1, "{wrapped:?}");
        assert!(
            wrapped.iter().all(|l| l.chars().count() <= 40),
            "{wrapped:?}"
        );
        assert!(
            wrapped[1..]
                .iter()
                .all(|l| l.starts_with("    ") && !l.starts_with("     ")),
            "continuations under the text, two past the indent: {wrapped:?}"
        );
        let text: Vec<&str> = wrapped.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(
            text.join(" "),
            "CRIT will not connect: the server now presents another key; remove the old entry"
        );
    }

    /// A labelled line (label, then value, each its own span) wraps under its value, each word
    /// in its span's style; no continuation starts at the border.
    #[test]
    fn a_labelled_line_wraps_under_its_value() {
        use ratatui::style::{Color, Style};
        use ratatui::text::{Line, Span};
        let value = Style::default().fg(Color::Red);
        let lines = vec![Line::from(vec![
            Span::raw("  walltime    "),
            Span::styled(
                "SOON · commit of alice/train-llama reaches Kaggle's 9 h limit in 28m",
                value,
            ),
        ])];
        let wrapped = indent_wrapped(lines, 40);
        let text: Vec<String> = wrapped.iter().map(|l| l.to_string()).collect();
        assert!(text.len() > 1, "{text:?}");
        assert!(text.iter().all(|l| l.chars().count() <= 40), "{text:?}");
        assert!(
            text[1..].iter().all(|l| l.starts_with(&" ".repeat(14))),
            "{text:?}"
        );
        let styled = wrapped[1]
            .spans
            .iter()
            .find(|s| !s.content.trim().is_empty());
        assert_eq!(styled.map(|s| s.style), Some(value));
    }

    #[test]
    fn text_is_cut_at_a_word_with_an_ellipsis() {
        assert_eq!(fit("for this host to trust it", 22), "for this host to…");
        assert_eq!(fit("down 81 minutes", 12), "down 81…");
        assert_eq!(fit("short", 5), "short");
        assert_eq!(fit("SM clock 1365/1980 MHz", 19), "SM clock 1365/1980…");
        assert_eq!(fit("averyveryverylongword tail", 10), "averyvery…");
        assert_eq!(fit("anything", 0), "");
        let at = DateTime::<Utc>::UNIX_EPOCH;
        assert_eq!(short_age(at, at + chrono::Duration::minutes(81)), "1h");
        assert_eq!(short_age(at, at + chrono::Duration::seconds(59)), "59s");
    }

    #[test]
    fn bars_fill_in_eighths_and_clamp() {
        assert_eq!(bar(0.5, 4), "██··");
        assert_eq!(bar(0.0625, 2), "▏·");
        assert_eq!(bar(0.25, 2), "▌·");
        assert_eq!(bar(7.0, 3), "███");
        assert_eq!(bar(f64::NAN, 2), "··");
    }

    #[test]
    fn sparklines_scale_to_the_ceiling() {
        assert_eq!(sparkline(&[0.0, 50.0, 100.0], 3, 0.0, Some(100.0)), "▁▅█");
        // No maximum reported: a steady 1980 MHz must not draw as "at the limit".
        assert_eq!(sparkline(&[1980.0; 4], 4, 0.0, None), "····");
        assert_eq!(sparkline(&[], 5, 0.0, None), "");
    }

    #[test]
    fn sizes_read_like_df_h() {
        assert_eq!(bytes(512), "512B");
        assert_eq!(bytes(270_553_174_016), "252GiB");
        assert_eq!(bytes(1536), "1.5KiB");
    }
}
