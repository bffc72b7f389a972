//! The durable final copies: what the remote probe prints for `final_dir`, and when a cell counts
//! as done.
//!
//! The probe prints one line per file exactly two levels below `final_dir`
//! (`find "$final_dir" -mindepth 2 -maxdepth 2 -type f -printf '%s\t%T@\t%P\n'`):
//! `<size_bytes>\t<mtime_epoch_secs>\t<name>/<file>`. A fractional mtime (`%T@`) is truncated to
//! whole seconds. Lines that do not fit are counted in [`FinalListing::garbage_lines`], never
//! fatal; blank lines are ignored.
//!
//! **Done rule** ([`DoneRule::default`]): a cell is done only when `final_dir/<name>/` holds
//! - a non-empty checkpoint: a file matching `*.pth`, `*.pt`, `*.ckpt` or `*.safetensors`
//!   (`best.pth` is the usual one), AND
//! - a non-empty metrics file: `metrics*.json`, `metrics*.jsonl` or `metrics*.csv`.
//!
//! Patterns are globs (`*` any run of characters, `?` one character) matched case-sensitively
//! against the file name. A zero-byte file never counts (a sync killed mid-write). An empty
//! pattern list means that requirement is waived, but the directory must still hold at least one
//! non-empty file. What a log says is never consulted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One file in `final_dir/<name>/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalFile {
    /// The file name inside the cell's directory (`best.pth`).
    pub file: String,
    pub size_bytes: u64,
    pub mtime_epoch_secs: i64,
}

/// `final_dir` as the probe saw it: cell name → its files, in the order printed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FinalListing {
    pub cells: BTreeMap<String, Vec<FinalFile>>,
    /// Non-blank lines that were not `<size>\t<mtime>\t<name>/<file>`.
    pub garbage_lines: usize,
}

impl FinalListing {
    /// The files listed for one cell; empty when its directory was not listed.
    pub fn files(&self, name: &str) -> &[FinalFile] {
        self.cells.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Parse the probe's listing of `final_dir`. Never fails; see the module docs for the format.
pub fn parse_final_listing(text: &str) -> FinalListing {
    let mut listing = FinalListing::default();
    for raw in text.lines() {
        if raw.trim().is_empty() {
            continue;
        }
        match parse_line(raw) {
            Some((name, file)) => listing.cells.entry(name).or_default().push(file),
            None => listing.garbage_lines += 1,
        }
    }
    listing
}

fn parse_line(raw: &str) -> Option<(String, FinalFile)> {
    let mut parts = raw.splitn(3, '\t');
    let size_bytes = parts.next()?.trim().parse::<u64>().ok()?;
    let mtime_epoch_secs = parse_mtime(parts.next()?.trim())?;
    let path = parts.next()?;
    let path = path.strip_prefix("./").unwrap_or(path);
    let (name, file) = path.split_once('/')?;
    if name.is_empty() || file.is_empty() || file.contains('/') {
        return None;
    }
    let file = FinalFile {
        file: file.to_owned(),
        size_bytes,
        mtime_epoch_secs,
    };
    Some((name.to_owned(), file))
}

/// `1700000000` or `1700000000.1234567890` (find's `%T@`); truncated to whole seconds.
fn parse_mtime(s: &str) -> Option<i64> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    whole.parse::<i64>().ok()
}

/// Which files make a cell's durable copy complete. See the module docs for the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoneRule {
    /// At least one non-empty file must match one of these (empty list: waived).
    pub checkpoint: Vec<String>,
    /// At least one non-empty file must match one of these (empty list: waived).
    pub metrics: Vec<String>,
}

impl Default for DoneRule {
    fn default() -> Self {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        DoneRule {
            checkpoint: owned(&["*.pth", "*.pt", "*.ckpt", "*.safetensors"]),
            metrics: owned(&["metrics*.json", "metrics*.jsonl", "metrics*.csv"]),
        }
    }
}

/// Why a cell is or is not done, for the roster's detail line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum DoneCheck {
    Done,
    /// `final_dir/<name>/` was not listed at all.
    NoDirectory,
    /// The directory exists but a requirement is unmet; `zero_byte` names matching empty files.
    Incomplete {
        has_checkpoint: bool,
        has_metrics: bool,
        zero_byte: Vec<String>,
    },
}

/// Check one cell's durable copy against `rule`.
pub fn check_cell(listing: &FinalListing, name: &str, rule: &DoneRule) -> DoneCheck {
    let Some(files) = listing.cells.get(name) else {
        return DoneCheck::NoDirectory;
    };
    let matches_any = |pats: &[String], f: &FinalFile| pats.iter().any(|p| glob_match(p, &f.file));
    let satisfied = |pats: &[String]| {
        pats.is_empty()
            || files
                .iter()
                .any(|f| f.size_bytes > 0 && matches_any(pats, f))
    };
    let has_checkpoint = satisfied(&rule.checkpoint);
    let has_metrics = satisfied(&rule.metrics);
    let any_content = files.iter().any(|f| f.size_bytes > 0);
    if has_checkpoint && has_metrics && any_content {
        return DoneCheck::Done;
    }
    let zero_byte = files
        .iter()
        .filter(|f| f.size_bytes == 0)
        .filter(|f| matches_any(&rule.checkpoint, f) || matches_any(&rule.metrics, f))
        .map(|f| f.file.clone())
        .collect();
    DoneCheck::Incomplete {
        has_checkpoint,
        has_metrics,
        zero_byte,
    }
}

/// Whether `final_dir/<name>/` holds a complete durable copy under `expect`.
pub fn is_cell_done(listing: &FinalListing, name: &str, expect: &DoneRule) -> bool {
    check_cell(listing, name, expect) == DoneCheck::Done
}

pub use crate::glob::matches as glob_match;
