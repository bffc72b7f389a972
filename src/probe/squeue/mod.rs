//! A Slurm cluster's jobs, read from `squeue -O` text: the one command for all of a user's
//! jobs, and its parser (text in, typed rows or a located error out).
//!
//! Why text and this shape: `squeue --json` changes its schema every release, `-O Field`
//! without a size cuts values at 20 characters, and `-O Field:<sep>` prints the whole value and
//! then `<sep>`. Job names may hold anything, `|`, commas, control bytes and newlines included
//! (checked on 22.05), so the separator carries a per-call nonce: no job name written before
//! the call can contain it. A record is [`FIELDS`] values each ended by the separator, then a
//! newline; a name's own newline therefore never splits a record.

mod words;

#[cfg(test)]
mod tests;

use std::time::Duration;

use chrono::NaiveDateTime;
use serde::Serialize;

use super::error::ParseError;
use super::slurm::parse_slurm_duration;
pub use words::{ExitCode, JobState, SlurmTime, reason_words};

const PROBE: &str = "squeue -O";

/// The most jobs one read takes; a queue past it is an error, never a silent cut.
const MAX_JOBS: usize = 20_000;

/// The `-O` fields, in the order the parser reads them. `tres-per-node` is asked for as well
/// as `tres-alloc`: without slurmdbd, `tres-alloc` never lists `gres/gpu` (checked on 22.05).
pub const FIELDS: [&str; 16] = [
    "JobID",
    "Name",
    "State",
    "Reason",
    "TimeUsed",
    "TimeLeft",
    "TimeLimit",
    "NumNodes",
    "NodeList",
    "tres-alloc",
    "tres-per-node",
    "RestartCnt",
    "Requeue",
    "exit_code",
    "StartTime",
    "SubmitTime",
];

/// Timestamps in this format whatever the user's shell sets (`relative` is a common choice).
const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";

/// The separator for one call: hex and `~` only, so it needs no quoting in `-O`, where `,`
/// splits fields, `:` starts a size and a leading digit would be read as one.
pub fn separator(nonce: &str) -> String {
    format!("~rw{nonce}~")
}

/// Whose jobs and where. `user` and `partition` must already be checked as plain names
/// (config does); they are quoted here all the same.
pub struct SqueueQuery<'a> {
    pub user: Option<&'a str>,
    pub partition: Option<&'a str>,
}

/// The command line: every job of the user in every state the controller still holds
/// (`-t all`), no header. Jobs are never named with `-j`: a purged id makes squeue fail for the
/// whole list, so the caller picks its jobs from the rows.
pub fn squeue_command(query: &SqueueQuery<'_>, sep: &str) -> String {
    let format: Vec<String> = FIELDS.iter().map(|f| format!("{f}:{sep}")).collect();
    let who = match query.user {
        Some(user) => format!("-u '{user}'"),
        None => "--me".to_string(),
    };
    let partition = query
        .partition
        .map(|p| format!(" -p '{p}'"))
        .unwrap_or_default();
    format!(
        "SLURM_TIME_FORMAT={TIME_FORMAT} squeue {who}{partition} -h -t all -O '{}'",
        format.join(",")
    )
}

/// One job as squeue printed it, every text sanitized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SqueueRow {
    pub id: String,
    pub name: String,
    pub state: JobState,
    /// Slurm's reason code as printed (None for `None`).
    pub reason: Option<String>,
    /// The reason in plain words where rigwatch knows the code, else the code as printed.
    pub reason_words: Option<String>,
    pub elapsed: SlurmTime,
    /// Only meaningful while the job runs: squeue prints leftovers for ended jobs.
    pub left: SlurmTime,
    pub limit: SlurmTime,
    pub nodes: Option<u32>,
    pub node_list: Option<String>,
    /// GPUs allocated (or asked for, while pending), all nodes together.
    pub gpus: Option<u32>,
    pub restarts: Option<u32>,
    pub requeue: Option<bool>,
    pub exit: Option<ExitCode>,
    /// The cluster's local time, as SLURM_TIME_FORMAT printed it.
    pub start: Option<NaiveDateTime>,
    pub submit: Option<NaiveDateTime>,
}

impl SqueueRow {
    /// Time left, only while the job runs.
    pub fn time_left(&self) -> Option<Duration> {
        match (&self.state, &self.left) {
            (JobState::Running | JobState::Completing, SlurmTime::Known(d)) => Some(*d),
            _ => None,
        }
    }
}

/// Every record of `text`, printed with separator `sep`. Errors name the output line the record
/// starts on and the field.
pub fn parse_squeue_rows(text: &str, sep: &str) -> Result<Vec<SqueueRow>, ParseError> {
    let mut rows = Vec::new();
    let mut rest = text;
    let mut line = 1;
    loop {
        let skipped = rest.len() - rest.trim_start_matches(['\n', '\r']).len();
        line += rest.get(..skipped).map_or(0, |s| s.matches('\n').count());
        rest = rest.get(skipped..).unwrap_or_default();
        if rest.trim().is_empty() {
            return Ok(rows);
        }
        if rows.len() >= MAX_JOBS {
            return Err(ParseError::new(
                PROBE,
                line,
                format!("more than {MAX_JOBS} jobs"),
            ));
        }
        let start = line;
        let mut values = [""; FIELDS.len()];
        for (i, value) in values.iter_mut().enumerate() {
            let Some(end) = rest.find(sep) else {
                return Err(ParseError::new(
                    PROBE,
                    start,
                    format!(
                        "record ends after {i} of {} fields ({} missing): {}",
                        FIELDS.len(),
                        FIELDS[i],
                        crate::sanitize::line(rest, 80)
                    ),
                ));
            };
            *value = rest.get(..end).unwrap_or_default();
            line += value.matches('\n').count();
            rest = rest.get(end + sep.len()..).unwrap_or_default();
        }
        if !(rest.is_empty() || rest.starts_with(['\n', '\r'])) {
            return Err(ParseError::new(
                PROBE,
                line,
                format!(
                    "text after the last field: {}",
                    crate::sanitize::line(rest, 80)
                ),
            ));
        }
        rows.push(row(&values).map_err(|(field, why)| {
            ParseError::new(PROBE, start, format!("{}: {why}", FIELDS[field]))
        })?);
    }
}

/// One record's values; Err is (field index, why).
fn row(v: &[&str; FIELDS.len()]) -> Result<SqueueRow, (usize, String)> {
    let text = |i: usize, max: usize| crate::sanitize::line(v[i].trim(), max);
    let id = text(0, 40);
    if id.is_empty() {
        return Err((0, "empty job id".into()));
    }
    let number = |i: usize| -> Result<Option<u32>, (usize, String)> {
        match v[i].trim() {
            "" | "N/A" => Ok(None),
            n => n
                .parse()
                .map(Some)
                .map_err(|_| (i, format!("not a count: {}", crate::sanitize::line(n, 40)))),
        }
    };
    let time = |i: usize| -> Result<SlurmTime, (usize, String)> {
        SlurmTime::parse(v[i]).ok_or((
            i,
            format!("not a duration: {}", crate::sanitize::line(v[i], 40)),
        ))
    };
    let stamp = |i: usize| -> Result<Option<NaiveDateTime>, (usize, String)> {
        match v[i].trim() {
            "" | "N/A" | "Unknown" | "None" => Ok(None),
            t => NaiveDateTime::parse_from_str(t, TIME_FORMAT)
                .map(Some)
                .map_err(|_| (i, format!("not a time: {}", crate::sanitize::line(t, 40)))),
        }
    };
    let nodes = number(7)?;
    let gpus = gpus_of(v[9], v[10], nodes);
    let reason = Some(text(3, 200)).filter(|r| !r.is_empty() && r != "None");
    Ok(SqueueRow {
        id,
        name: text(1, 120),
        state: JobState::parse(v[2]),
        reason_words: reason
            .as_deref()
            .map(|r| reason_words(r).map_or_else(|| r.to_string(), str::to_string)),
        reason,
        elapsed: time(4)?,
        left: time(5)?,
        limit: time(6)?,
        nodes,
        node_list: Some(text(8, 200)).filter(|n| !n.is_empty() && n != "(null)"),
        gpus,
        restarts: number(11)?,
        requeue: match v[12].trim() {
            "1" | "yes" | "YES" | "true" => Some(true),
            "0" | "no" | "NO" | "false" => Some(false),
            _ => None,
        },
        exit: ExitCode::parse(v[13]),
        start: stamp(14)?,
        submit: stamp(15)?,
    })
}

/// GPUs from `tres-alloc` (`gres/gpu=2`, or typed `gres/gpu:a100=2` summed), else from
/// `tres-per-node` (`gres:gpu:a100:2`, `gres/gpu:2`, `gres/gpu=2`) times the nodes. Some(0)
/// when TRES was printed and names no GPU; None when neither says anything.
fn gpus_of(alloc: &str, per_node: &str, nodes: Option<u32>) -> Option<u32> {
    let mut untyped = None;
    let mut typed: Option<u32> = None;
    for part in alloc.trim().split(',') {
        let Some((key, count)) = part.split_once('=') else {
            continue;
        };
        let Ok(count) = count.trim().parse::<u32>() else {
            continue;
        };
        match key.trim() {
            "gres/gpu" => untyped = Some(count),
            k if k.starts_with("gres/gpu:") => {
                typed = Some(typed.unwrap_or(0).saturating_add(count));
            }
            _ => {}
        }
    }
    if let Some(n) = untyped.or(typed) {
        return Some(n);
    }
    let per_node: Option<u32> = per_node
        .trim()
        .split(',')
        .filter_map(|part| {
            let rest = part.strip_prefix("gres:").or(part.strip_prefix("gres/"))?;
            let rest = rest.strip_prefix("gpu")?;
            if !(rest.starts_with([':', '=']) || rest.is_empty()) {
                return None;
            }
            rest.rsplit([':', '=']).next()?.parse::<u32>().ok()
        })
        .reduce(u32::saturating_add);
    match per_node {
        Some(n) => Some(n.saturating_mul(nodes.unwrap_or(1))),
        None if alloc.contains('=') => Some(0),
        None => None,
    }
}
