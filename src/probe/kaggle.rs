//! The official `kaggle` CLI's output (PyPI `kaggle`, 2.x; the 1.x forms where they differ),
//! read from the package's own source (`kaggle/api/kaggle_api_extended.py`, abbreviated `ext.py`
//! below, with kagglesdk's enum), never from memory:
//! - `kaggle kernels status OWNER/SLUG` prints `OWNER/SLUG has status "KernelWorkerStatus.RUNNING"`
//!   (ext.py:7675/7678; 1.x printed the bare word, `"running"`), then, when the server gave one,
//!   `Failure message: "…"` (ext.py:7676).
//! - `kaggle kernels list --mine --csv` prints an optional `Next Page Token = …` line, then
//!   `ref,title,author,lastRunTime,totalVotes` with CRLF line ends (Python's csv writer,
//!   ext.py:6736, 9153); `lastRunTime` is UTC without a zone, `YYYY-MM-DD HH:MM:SS[.ffffff]`, or
//!   `None`.
//! - `kaggle quota --csv` prints `resource,used,remaining,total,refreshAt` with hours as `12.50h`
//!   and `refreshAt` as RFC 3339 (ext.py:6747-6795); `No quota information available` when none.
//! - `kaggle kernels pull … -m` writes `kernel-metadata.json` with `enable_gpu`, `enable_tpu`
//!   and the free text `machine_shape` (ext.py:7443-7463); `kernels init` writes the booleans
//!   as strings, so both forms are read.
//!
//! Any line may be preceded by the CLI's own `Warning: …` (an outdated CLI, a key file readable
//! by others): such lines are skipped wherever they appear.

use chrono::{DateTime, NaiveDateTime, Utc};

use super::error::ParseError;

const STATUS: &str = "kaggle kernels status";
const LIST: &str = "kaggle kernels list --csv";
const QUOTA: &str = "kaggle quota --csv";
const FILES: &str = "kaggle kernels files --csv";
const METADATA: &str = "kernel-metadata.json";
/// The most lines a list or quota read takes (a page is at most 100 kernels).
const MAX_LINES: usize = 2_000;

/// A kernel's latest version as `kernels status` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelStatus {
    /// The enum's name upper-cased (`RUNNING`, `CANCEL_ACKNOWLEDGED`); a word rigwatch does not
    /// know is kept as printed (sanitized by the caller).
    pub word: String,
    /// The server's failure message, when it gave one.
    pub failure: Option<String>,
}

fn is_noise(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with("Warning:") || line.starts_with("Next Page Token =")
}

/// `camelCase` or `snake` or `UPPER_SNAKE` to `UPPER_SNAKE` (1.x printed `cancelAcknowledged`).
fn upper_snake(word: &str) -> String {
    let camel = word.chars().any(|c| c.is_ascii_lowercase());
    let mut out = String::with_capacity(word.len() + 4);
    for (i, c) in word.chars().enumerate() {
        if camel && i > 0 && c.is_ascii_uppercase() {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// `kernels status` of `kernel`: its state word and failure message.
pub fn parse_status(kernel: &str, text: &str) -> Result<KernelStatus, ParseError> {
    let marker = " has status \"";
    let mut status = None;
    let mut failure: Option<String> = None;
    for (n, line) in text.lines().enumerate().take(MAX_LINES) {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix("Failure message: \"") {
            failure = Some(rest.strip_suffix('"').unwrap_or(rest).to_string());
            continue;
        }
        if let Some(at) = line.find(marker) {
            let named = &line[..at];
            if named != kernel {
                return Err(ParseError::new(
                    STATUS,
                    n + 1,
                    format!("status of {named:?}, not of {kernel:?}"),
                ));
            }
            let rest = &line[at + marker.len()..];
            let Some(value) = rest.strip_suffix('"') else {
                return Err(ParseError::new(STATUS, n + 1, "status not closed by '\"'"));
            };
            let word = value.strip_prefix("KernelWorkerStatus.").unwrap_or(value);
            if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(ParseError::new(
                    STATUS,
                    n + 1,
                    format!("status {value:?} is not a state name"),
                ));
            }
            status = Some(upper_snake(word));
        } else if failure.is_some() && !is_noise(line) {
            // The message is not escaped: a newline in it continues here.
            if let Some(f) = failure.as_mut() {
                f.push(' ');
                f.push_str(line.strip_suffix('"').unwrap_or(line));
            }
        } else if !is_noise(line) {
            return Err(ParseError::new(
                STATUS,
                n + 1,
                format!("expected `{kernel} has status \"…\"`"),
            ));
        }
    }
    match status {
        Some(word) => Ok(KernelStatus {
            word,
            failure: failure.filter(|f| !f.trim().is_empty()),
        }),
        None => Err(ParseError::new(
            STATUS,
            text.lines().count().max(1),
            format!("no `{kernel} has status` line"),
        )),
    }
}

/// `lastRunTime` as the CLI prints it: UTC without a zone, with or without microseconds.
fn last_run(text: &str) -> Option<DateTime<Utc>> {
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        .map(|t| t.and_utc())
}

/// The CSV table the CLI printed (its warnings and page token left out, CRLF read as LF; line
/// numbers in errors count the table's own lines), or None where it printed `empty`, its words
/// for no rows.
fn csv_table(text: &str, empty: &str) -> Option<String> {
    let body: String = text
        .lines()
        .take(MAX_LINES)
        .filter(|l| !is_noise(l))
        .map(|l| format!("{}\n", l.trim_end_matches('\r')))
        .collect();
    (body.trim() != empty).then_some(body)
}

/// Each kernel's ref and when its latest version last ran.
pub type LastRuns = Vec<(String, Option<DateTime<Utc>>)>;

/// `kernels list --csv`: each kernel's ref and when its latest version last ran (None when the
/// CLI printed `None`). "Not found" (no kernel) is an empty list.
pub fn parse_list(text: &str) -> Result<LastRuns, ParseError> {
    let Some(body) = csv_table(text, "Not found") else {
        return Ok(Vec::new());
    };
    let mut reader = csv::ReaderBuilder::new().from_reader(body.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| ParseError::new(LIST, 1, e.to_string()))?
        .clone();
    let column = |name: &str| header.iter().position(|h| h == name);
    let (Some(r), Some(t)) = (column("ref"), column("lastRunTime")) else {
        return Err(ParseError::new(
            LIST,
            1,
            format!(
                "expected the columns ref and lastRunTime, got {:?}",
                header.iter().collect::<Vec<_>>().join(",")
            ),
        ));
    };
    let mut out = Vec::new();
    for (n, record) in reader.records().enumerate() {
        let record = record.map_err(|e| ParseError::new(LIST, n + 2, e.to_string()))?;
        let (Some(reference), Some(time)) = (record.get(r), record.get(t)) else {
            return Err(ParseError::new(LIST, n + 2, "a record without ref"));
        };
        let when = match time {
            "None" | "" => None,
            text => Some(last_run(text).ok_or_else(|| {
                ParseError::new(LIST, n + 2, format!("lastRunTime {text:?} is not a time"))
            })?),
        };
        out.push((reference.to_string(), when));
    }
    Ok(out)
}

/// `kernels files OWNER/SLUG --csv --page-size N`: how many output files the latest version
/// kept, up to N (`name,size,creationDate` rows; "No files found" where the API gave none, a
/// header alone where it gave an empty list: ext.py:7076-7089).
pub fn parse_files(text: &str) -> Result<usize, ParseError> {
    let Some(body) = csv_table(text, "No files found") else {
        return Ok(0);
    };
    let mut reader = csv::ReaderBuilder::new().from_reader(body.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| ParseError::new(FILES, 1, e.to_string()))?;
    if header.get(0) != Some("name") {
        return Err(ParseError::new(
            FILES,
            1,
            format!(
                "expected the columns name,size,creationDate, got {:?}",
                header.iter().collect::<Vec<_>>().join(",")
            ),
        ));
    }
    let mut count = 0;
    for (n, record) in reader.records().enumerate() {
        record.map_err(|e| ParseError::new(FILES, n + 2, e.to_string()))?;
        count += 1;
    }
    Ok(count)
}

/// The account's weekly GPU quota, in hours.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuQuota {
    pub used_hours: f64,
    pub remaining_hours: f64,
    pub total_hours: f64,
    pub refresh_at: Option<DateTime<Utc>>,
    /// Not the account's figure: rigwatch's own count of the GPU runs it saw in the last seven
    /// days, so the hours used are at least this (runs it never saw count too).
    pub lower_bound: bool,
}

fn hours(text: &str) -> Option<f64> {
    text.trim()
        .strip_suffix('h')
        .and_then(|h| h.parse::<f64>().ok())
        .filter(|h| h.is_finite() && *h >= 0.0)
}

/// `kaggle quota --csv`: the GPU row; None when the account reports no quota.
pub fn parse_quota(text: &str) -> Result<Option<GpuQuota>, ParseError> {
    let Some(body) = csv_table(text, "No quota information available") else {
        return Ok(None);
    };
    let mut reader = csv::ReaderBuilder::new().from_reader(body.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| ParseError::new(QUOTA, 1, e.to_string()))?
        .clone();
    let want = ["resource", "used", "remaining", "total", "refreshAt"];
    if header.iter().take(5).ne(want) {
        return Err(ParseError::new(
            QUOTA,
            1,
            format!("expected the columns {}", want.join(",")),
        ));
    }
    for (n, record) in reader.records().enumerate() {
        let record = record.map_err(|e| ParseError::new(QUOTA, n + 2, e.to_string()))?;
        if record.get(0) != Some("GPU") {
            continue;
        }
        let field = |i: usize| {
            record.get(i).and_then(hours).ok_or_else(|| {
                ParseError::new(
                    QUOTA,
                    n + 2,
                    format!("{} {:?} is not hours", want[i], record.get(i).unwrap_or("")),
                )
            })
        };
        return Ok(Some(GpuQuota {
            used_hours: field(1)?,
            remaining_hours: field(2)?,
            total_hours: field(3)?,
            refresh_at: record
                .get(4)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc)),
            lower_bound: false,
        }));
    }
    Ok(None)
}

/// What a kernel's metadata says it runs on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Accelerator {
    pub gpu: bool,
    pub tpu: bool,
    /// `machine_shape` as written (`NvidiaTeslaT4`), empty when unset.
    pub machine: String,
}

/// `kernel-metadata.json`: the accelerator the notebook is set to (and so every commit of it).
pub fn parse_metadata(text: &str) -> Result<Accelerator, ParseError> {
    let json: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| ParseError::new(METADATA, e.line(), format!("{e} (column {})", e.column())))?;
    let flag = |key: &str| match &json[key] {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::String(s) => s.eq_ignore_ascii_case("true"),
        _ => false,
    };
    let machine = json["machine_shape"].as_str().unwrap_or("").to_string();
    let gpu = flag("enable_gpu") || machine.starts_with("Nvidia") || machine.starts_with("Gpu");
    let tpu = flag("enable_tpu") || machine.starts_with("Tpu");
    Ok(Accelerator { gpu, tpu, machine })
}

#[cfg(test)]
#[path = "kaggle_tests.rs"]
mod tests;
