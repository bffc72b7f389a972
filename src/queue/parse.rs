//! Queue files: one cell per line, `<cfg_path> <task> [epochs]`, the format `run_queue.sh` reads
//! with `while IFS=' ' read -r cfg task epochs`.
//!
//! - Blank lines and lines whose first non-blank character is `#` are not cells, but they still
//!   count as lines: [`Cell::line`] is the 1-based line in the file.
//! - [`Cell::index`] is the 0-based position among cell lines (what "cell 7/12" counts).
//! - `start_index` k (the second argument of `run_queue.sh`) skips the first k **raw lines**, as
//!   the seeds describe ("skips the first k lines"; "to drop a cell, comment it, don't delete, so
//!   indices stay stable" only holds if a commented line still counts). So a cell runs under
//!   `start_index` k iff `cell.line > k`, and [`Cell::start_index`] (`line - 1`) is the k that
//!   resumes exactly at that cell. In a file without blank or comment lines the two numbers agree.
//! - A line with a cfg path is always a cell, even when another field is bad, because the script
//!   will still iterate over it: dropping it would shift every later index. Its problems are
//!   recorded in [`Queue::problems`] (lenient parse) or returned as the error (strict parse).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// One queue line that `run_queue.sh` will run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// 1-based line number in the queue file (blank and comment lines count).
    pub line: usize,
    /// 0-based position among cell lines.
    pub index: usize,
    pub cfg_path: String,
    /// Empty when the line had no task field (reported as a problem).
    pub task: String,
    /// `None` when omitted (the wrapper's default applies) or unparsable (reported).
    pub epochs: Option<u32>,
    /// Basename of `cfg_path` without its last extension: the isolation key for outputs.
    pub name: String,
}

impl Cell {
    /// The `start_index` that makes `run_queue.sh` begin at this cell: the raw lines before it.
    pub fn start_index(&self) -> usize {
        self.line.saturating_sub(1)
    }

    /// Whether `run_queue.sh <file> <start_index>` skips this cell.
    pub fn skipped_by(&self, start_index: usize) -> bool {
        self.line <= start_index
    }
}

/// A parsed queue file. `problems` is empty for a clean file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queue {
    /// Where the text came from (as given to the parser), used in messages and `--json`.
    pub file: String,
    pub cells: Vec<Cell>,
    /// Everything wrong with the file, in line order; the cells above still hold every line.
    pub problems: Vec<QueueError>,
}

impl Queue {
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn cell(&self, index: usize) -> Option<&Cell> {
        self.cells.get(index)
    }

    /// Index of the first cell `run_queue.sh <file> <start_index>` runs, if any.
    pub fn first_cell_from(&self, start_index: usize) -> Option<usize> {
        self.cells.iter().position(|c| !c.skipped_by(start_index))
    }

    /// Names that two or more lines of this file share.
    pub fn colliding_names(&self) -> BTreeSet<&str> {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for c in self.cells.iter().filter(|c| !c.name.is_empty()) {
            *seen.entry(c.name.as_str()).or_default() += 1;
        }
        seen.into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(name, _)| name)
            .collect()
    }
}

/// What is wrong with one queue line, pinned to `file:line:col` (1-based, columns in characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QueueError {
    #[error("{file}:{line}:{col}: epochs `{value}` is not a whole number of epochs (1 or more)")]
    BadEpochs {
        file: String,
        line: usize,
        col: usize,
        value: String,
    },
    #[error("{file}:{line}:{col}: missing task field (expected `<cfg_path> <task> [epochs]`)")]
    MissingTask {
        file: String,
        line: usize,
        col: usize,
    },
    #[error(
        "{file}:{line}:{col}: unexpected extra field `{value}` (run_queue.sh would pass it on as part of epochs)"
    )]
    ExtraField {
        file: String,
        line: usize,
        col: usize,
        value: String,
    },
    #[error("{file}:{line}:{col}: cfg path `{value}` has no file name to name the cell by")]
    NoName {
        file: String,
        line: usize,
        col: usize,
        value: String,
    },
    #[error(
        "{file}:{line}:{col}: cell name `{name}` is also used on line {first_line}: both lines would write the same output directory"
    )]
    Collision {
        file: String,
        line: usize,
        col: usize,
        name: String,
        first_line: usize,
    },
}

impl QueueError {
    /// The 1-based line the problem is on (for a collision, the later of the two lines).
    pub fn line(&self) -> usize {
        match self {
            QueueError::BadEpochs { line, .. }
            | QueueError::MissingTask { line, .. }
            | QueueError::ExtraField { line, .. }
            | QueueError::NoName { line, .. }
            | QueueError::Collision { line, .. } => *line,
        }
    }
}

/// Strict parse, for `check` and anything that must refuse a bad file: the first problem (in
/// line order) is the error. Use [`parse_queue_lenient`] where the UI should still show the rest.
pub fn parse_queue(text: &str, source: &str) -> Result<Queue, QueueError> {
    let queue = parse_queue_lenient(text, source);
    match queue.problems.first() {
        Some(first) => Err(first.clone()),
        None => Ok(queue),
    }
}

/// Lenient parse: never fails. Every line with a cfg path becomes a cell (so indices match what
/// `run_queue.sh` iterates over) and every problem is listed in [`Queue::problems`].
pub fn parse_queue_lenient(text: &str, source: &str) -> Queue {
    let mut cells = Vec::new();
    let mut problems = Vec::new();
    let mut first_line_of: BTreeMap<String, usize> = BTreeMap::new();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let fields = fields(raw);
        let Some(&(cfg_col, cfg_path)) = fields.first() else {
            continue;
        };
        if cfg_path.starts_with('#') {
            continue;
        }
        let at = |col: usize| (source.to_owned(), line, col);
        let task = match fields.get(1) {
            Some(&(_, task)) => task.to_owned(),
            None => {
                let (file, line, col) = at(raw.chars().count() + 1);
                problems.push(QueueError::MissingTask { file, line, col });
                String::new()
            }
        };
        let epochs = fields
            .get(2)
            .and_then(|&(col, value)| match value.parse::<u32>() {
                Ok(n) if n > 0 && value.bytes().all(|b| b.is_ascii_digit()) => Some(n),
                _ => {
                    let (file, line, col) = at(col);
                    let value = value.to_owned();
                    problems.push(QueueError::BadEpochs {
                        file,
                        line,
                        col,
                        value,
                    });
                    None
                }
            });
        if let Some(&(col, value)) = fields.get(3) {
            let (file, line, col) = at(col);
            let value = value.to_owned();
            problems.push(QueueError::ExtraField {
                file,
                line,
                col,
                value,
            });
        }
        let name = cell_name(cfg_path).to_owned();
        if name.is_empty() {
            let (file, line, col) = at(cfg_col);
            let value = cfg_path.to_owned();
            problems.push(QueueError::NoName {
                file,
                line,
                col,
                value,
            });
        } else if let Some(&first_line) = first_line_of.get(&name) {
            let (file, line, col) = at(cfg_col);
            let name = name.clone();
            problems.push(QueueError::Collision {
                file,
                line,
                col,
                name,
                first_line,
            });
        } else {
            first_line_of.insert(name.clone(), line);
        }
        cells.push(Cell {
            line,
            index: cells.len(),
            cfg_path: cfg_path.to_owned(),
            task,
            epochs,
            name,
        });
    }
    Queue {
        file: source.to_owned(),
        cells,
        problems,
    }
}

/// The cell name for a cfg path: basename without its last extension
/// (`configs/abl/lr3.yaml` → `lr3`, `a/b.c.yaml` → `b.c`, `configs/` → ``).
pub fn cell_name(cfg_path: &str) -> &str {
    let base = cfg_path.rsplit('/').next().unwrap_or(cfg_path);
    match base.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => base,
    }
}

/// Whitespace-separated fields with their 1-based character column.
fn fields(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    for (col0, (byte, ch)) in line.char_indices().enumerate() {
        if ch.is_whitespace() {
            if let Some((b, col)) = start.take() {
                out.push((col, &line[b..byte]));
            }
        } else if start.is_none() {
            start = Some((byte, col0 + 1));
        }
    }
    if let Some((b, col)) = start {
        out.push((col, &line[b..]));
    }
    out
}
