//! Shared line and field handling, so every parser caps input and reports lines the same way.

use super::ParseError;
use std::str::FromStr;

/// A line longer than this is refused rather than scanned further: no real probe prints one,
/// and a runaway remote process must not make the dashboard chew on megabytes per poll.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Beyond this many lines a probe's output is refused; the largest real one (a kernel log
/// tail) is a few thousand.
pub const MAX_LINES: usize = 100_000;

/// The non-blank lines of `text` with their 1-based numbers, trimmed (CR included, since some
/// transports hand back CRLF). Errors on an over-long line or too many lines.
pub(crate) fn lines<'a>(
    probe: &'static str,
    text: &'a str,
) -> Result<Vec<(usize, &'a str)>, ParseError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        if number > MAX_LINES {
            return Err(ParseError::new(
                probe,
                number,
                format!("more than {MAX_LINES} lines; output refused"),
            ));
        }
        if raw.len() > MAX_LINE_BYTES {
            return Err(ParseError::new(
                probe,
                number,
                format!(
                    "line is {} bytes, over the {MAX_LINE_BYTES}-byte cap",
                    raw.len()
                ),
            ));
        }
        let line = raw.trim();
        if !line.is_empty() {
            out.push((number, line));
        }
    }
    Ok(out)
}

/// A remote value quoted for an error message: escaped (no terminal control reaches the
/// screen through an error) and cut short.
pub(crate) fn quoted(value: &str) -> String {
    const MAX_CHARS: usize = 40;
    if value.chars().count() > MAX_CHARS {
        let head: String = value.chars().take(MAX_CHARS).collect();
        format!("{head:?}…")
    } else {
        format!("{value:?}")
    }
}

/// nvidia-smi's ways of saying "no value": `[N/A]`, `[Not Supported]`, `[Unknown Error]`,
/// `[GPU is lost]`, bare `N/A`, or nothing at all.
pub(crate) fn is_missing(value: &str) -> bool {
    let v = value.trim();
    v.is_empty() || v == "N/A" || (v.starts_with('[') && v.ends_with(']'))
}

/// Drops a trailing unit word (`45 %`, `1980 MHz`, `20480 MiB`) that `--format=csv` without
/// `nounits` appends.
pub(crate) fn strip_unit(value: &str) -> &str {
    let v = value.trim();
    match v.rsplit_once(' ') {
        Some((number, unit))
            if !unit.is_empty() && unit.chars().all(|c| c.is_ascii_alphabetic() || c == '%') =>
        {
            number.trim_end()
        }
        _ => v,
    }
}

/// A numeric value: `None` for a missing marker, an error quoting the value if it is not one.
pub(crate) fn number<T: FromStr>(
    probe: &'static str,
    line: usize,
    field: &str,
    value: &str,
) -> Result<Option<T>, ParseError> {
    if is_missing(value) {
        return Ok(None);
    }
    strip_unit(value).parse::<T>().map(Some).map_err(|_| {
        ParseError::new(
            probe,
            line,
            format!("{field}: expected a number, got {}", quoted(value)),
        )
    })
}

/// Like [`number`] for floats, also refusing `NaN` and `inf`, which Rust parses but no probe
/// means.
pub(crate) fn float(
    probe: &'static str,
    line: usize,
    field: &str,
    value: &str,
) -> Result<Option<f64>, ParseError> {
    match number::<f64>(probe, line, field, value)? {
        Some(x) if !x.is_finite() => Err(ParseError::new(
            probe,
            line,
            format!("{field}: expected a finite number, got {}", quoted(value)),
        )),
        other => Ok(other),
    }
}

/// A text value, `None` for a missing marker.
pub(crate) fn text(value: &str) -> Option<String> {
    (!is_missing(value)).then(|| value.trim().to_owned())
}

/// Splits an nvidia-smi CSV row into exactly `want` trimmed cells. nvidia-smi never quotes, so
/// a comma inside a free-text field (a process name) splits it; when `free` names that field,
/// the surplus is folded back into it. Returns the cell count on mismatch.
pub(crate) fn csv_cells(line: &str, want: usize, free: Option<usize>) -> Result<Vec<&str>, usize> {
    let commas: Vec<usize> = line.match_indices(',').map(|(i, _)| i).collect();
    let got = commas.len() + 1;
    let extra = match (got.checked_sub(want), free) {
        (Some(0), _) => 0,
        (Some(n), Some(f)) if f < want => n,
        _ => return Err(got),
    };
    let start = |k: usize| {
        if k == 0 {
            0
        } else {
            commas.get(k - 1).map_or(0, |c| c + 1)
        }
    };
    let end = |k: usize| commas.get(k).copied().unwrap_or(line.len());
    let mut out = Vec::with_capacity(want);
    let mut k = 0;
    for cell in 0..want {
        let last = if Some(cell) == free { k + extra } else { k };
        out.push(line.get(start(k)..end(last)).unwrap_or("").trim());
        k = last + 1;
    }
    Ok(out)
}

/// A `--query-*` field name as nvidia-smi's header prints it: units dropped (`memory.used
/// [MiB]`), legacy `throttle` spelling and short aliases mapped to the long names.
pub(crate) fn field_key(name: &str, aliases: &[(&str, &str)]) -> String {
    let bare = name
        .split(" [")
        .next()
        .unwrap_or(name)
        .trim()
        .to_ascii_lowercase();
    let bare = match bare.strip_prefix("clocks_throttle_reasons.") {
        Some(rest) => format!("clocks_event_reasons.{rest}"),
        None => bare,
    };
    match aliases.iter().find(|(short, _)| *short == bare) {
        Some((_, long)) => (*long).to_owned(),
        None => bare,
    }
}

/// True if `cells` is the header line of a `--format=csv` query over `fields`.
pub(crate) fn is_header(cells: &[&str], fields: &[&str], aliases: &[(&str, &str)]) -> bool {
    cells.len() == fields.len()
        && cells
            .iter()
            .zip(fields)
            .all(|(c, f)| field_key(c, aliases) == field_key(f, aliases))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_fold_commas_into_the_free_field() {
        assert_eq!(csv_cells("1, a, b", 3, None), Ok(vec!["1", "a", "b"]));
        assert_eq!(csv_cells("1, a, b", 2, None), Err(3));
        assert_eq!(
            csv_cells("1, a, b, 7", 3, Some(1)),
            Ok(vec!["1", "a, b", "7"])
        );
        assert_eq!(csv_cells("1, a", 3, Some(1)), Err(2));
    }

    #[test]
    fn units_and_missing_markers() {
        assert_eq!(strip_unit("1980 MHz"), "1980");
        assert_eq!(strip_unit("45 %"), "45");
        assert_eq!(strip_unit("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
        for m in ["[N/A]", "[Not Supported]", "N/A", "", "  "] {
            assert!(is_missing(m), "{m}");
        }
        assert_eq!(number::<u32>("p", 1, "f", "[N/A]"), Ok(None));
        assert!(float("p", 1, "f", "NaN").is_err());
    }

    #[test]
    fn long_lines_are_refused_with_their_number() {
        let text = format!("ok\n{}\n", "x".repeat(MAX_LINE_BYTES + 1));
        let err = lines("p", &text).err().map(|e| e.line);
        assert_eq!(err, Some(2));
    }
}
