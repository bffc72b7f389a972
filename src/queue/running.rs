//! Which cell of a queue is running, from what the probe sees: a process command line
//! (`pgrep -af` / `ps -o args`, an optional leading pid is harmless) and the newest cell log.
//!
//! Heuristics, in order; the first that names exactly one cell wins:
//! 1. **Command line, by cfg path**: an argument equal to a cell's `cfg_path`, or a path ending
//!    in `/<cfg_path>` (absolute vs relative), after stripping quotes and a leading `./`.
//!    `--config=configs/a.yaml` and `key=value` arguments are split at the last `=`.
//! 2. **Command line, by name**: an argument whose basename-without-extension equals a cell
//!    name (`/root/proj/configs/abl/lr3.yaml`, Hydra's `--config-name lr3`). Arguments that are
//!    scripts, queues or logs (`*.py`, `*.sh`, `*.bash`, `*.txt`, `*.log`, `*.out`) never match,
//!    so `python train.py` does not select a cell named `train`.
//! 3. **Newest log**: the log's basename without extension equals a cell name (`{name}.log`, the
//!    per-cell log `run_queue.sh` writes).
//!
//! When a step matches two or more different cells (colliding names, repeated lines) it names
//! none and the next step is tried; `None` means "cannot tell", never "nothing runs".
//! `bash run_queue.sh queue.txt 4` itself names no cell (its `4` is where the queue *started*);
//! [`queue_invocation`] reads the queue file and start index from such a command line.

use std::collections::BTreeSet;

use serde::Serialize;

use super::parse::{Queue, cell_name};

const NEVER_CONFIG: &[&str] = &["py", "sh", "bash", "txt", "log", "out"];

/// Index of the running cell; see the module docs for the heuristics.
pub fn running_cell(
    queue: &Queue,
    cmdline: Option<&str>,
    newest_log: Option<&str>,
) -> Option<usize> {
    if let Some(cmd) = cmdline {
        let args = arguments(cmd);
        let by_path = unique(queue, |c| {
            args.iter().any(|a| {
                let cfg = c.cfg_path.strip_prefix("./").unwrap_or(&c.cfg_path);
                *a == cfg || a.strip_suffix(cfg).is_some_and(|head| head.ends_with('/'))
            })
        });
        if by_path.is_some() {
            return by_path;
        }
        let by_name = unique(queue, |c| {
            args.iter()
                .any(|a| !c.name.is_empty() && !is_never_config(a) && cell_name(a) == c.name)
        });
        if by_name.is_some() {
            return by_name;
        }
    }
    let log = newest_log?;
    let stem = cell_name(log.trim());
    unique(queue, |c| !c.name.is_empty() && c.name == stem)
}

/// `run_queue.sh <queue_file> [start_index]` as found in a command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueInvocation {
    pub queue_file: String,
    pub start_index: Option<usize>,
}

/// Find a `run_queue*.sh` invocation (versioned names like `run_queue.v2.sh` included) and read
/// its queue file and start index (absent or non-numeric → `None`, the script's default 0).
pub fn queue_invocation(cmdline: &str) -> Option<QueueInvocation> {
    let words: Vec<&str> = cmdline.split_whitespace().map(unquote).collect();
    let at = words.iter().position(|w| {
        let base = w.rsplit('/').next().unwrap_or(w);
        base.starts_with("run_queue") && base.ends_with(".sh")
    })?;
    let queue_file = (*words.get(at + 1)?).to_owned();
    let start_index = words.get(at + 2).and_then(|w| w.parse::<usize>().ok());
    Some(QueueInvocation {
        queue_file,
        start_index,
    })
}

fn unique(queue: &Queue, pred: impl Fn(&super::parse::Cell) -> bool) -> Option<usize> {
    let hits: BTreeSet<usize> = queue
        .cells
        .iter()
        .filter(|c| pred(c))
        .map(|c| c.index)
        .collect();
    match hits.len() {
        1 => hits.first().copied(),
        _ => None,
    }
}

/// Arguments of a command line, unquoted, with `key=value` reduced to `value` and `./` dropped.
fn arguments(cmd: &str) -> Vec<&str> {
    cmd.split_whitespace()
        .map(unquote)
        .map(|w| w.rsplit('=').next().unwrap_or(w))
        .map(|w| w.strip_prefix("./").unwrap_or(w))
        .filter(|w| !w.is_empty())
        .collect()
}

fn unquote(w: &str) -> &str {
    w.trim_matches(|c| c == '\'' || c == '"')
}

fn is_never_config(arg: &str) -> bool {
    let base = arg.rsplit('/').next().unwrap_or(arg);
    match base.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => NEVER_CONFIG.contains(&ext),
        _ => false,
    }
}
