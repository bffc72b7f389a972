//! One cycle of the periodic probe, parsed: everything rigwatch knows about a box at one moment
//! apart from the GPU stream. A section that failed is recorded as that section's error; the
//! rest of the sample stands.

use chrono::{DateTime, TimeZone, Utc};
use serde::Serialize;

use super::error::ParseError;
use super::frame::RawCycle;
use super::script::{LOG_TAIL_BYTES, QUEUE_FILE_CAP_BYTES, QUEUE_FILE_OVER_CAP};
use super::{
    GpuProcess, KernelEvent, LoadAvg, MemInfo, Mount, ProcessLine, SlurmJob, TmuxSession, Uptime,
    merge_df, parse_apps_csv, parse_boot_id, parse_cpus_online, parse_df_bytes, parse_df_inodes,
    parse_df_output, parse_kernel_log, parse_loadavg, parse_meminfo, parse_pgrep, parse_squeue,
    parse_tmux_ls, parse_uptime,
};
use crate::queue::{FinalListing, parse_final_listing};

/// Exit status sh gives a command it cannot find.
const NOT_FOUND: i32 = 127;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileStat {
    /// The file's path where the probe chose it (the newest checkpoint); None for the log.
    pub path: Option<String>,
    pub size_bytes: u64,
    pub modified: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TmuxPane {
    pub session: String,
    pub pid: u32,
    pub dead: bool,
    pub command: String,
    /// Whether the pane's process has children; None where the kernel does not say.
    pub has_children: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SectionError {
    pub section: String,
    pub message: String,
}

/// A section the box printed more of than rigwatch holds: what was kept is its beginning, so a
/// judgement that needs the whole section cannot be made from it (signals::unjudged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cut {
    pub section: String,
    /// How it was cut, in words ("cut at 64 KiB").
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct HostSample {
    /// None when nvidia-smi is not installed: a box without GPUs, not a box with zero of them.
    pub gpu_processes: Option<Vec<GpuProcess>>,
    pub nvidia_smi_missing: bool,
    pub mounts: Vec<Mount>,
    pub uptime: Option<Uptime>,
    pub load: Option<LoadAvg>,
    pub memory: Option<MemInfo>,
    /// CPUs online (`/sys/devices/system/cpu/online`): the scale of `load`.
    pub cpus: Option<u32>,
    pub boot_id: Option<String>,
    /// None when tmux is not installed.
    pub tmux_sessions: Option<Vec<TmuxSession>>,
    /// The panes of the run's session (named exactly); empty when it does not exist.
    pub tmux_panes: Vec<TmuxPane>,
    /// tmux is not installed, so the run's session cannot be looked for.
    pub tmux_missing: bool,
    pub run_processes: Vec<ProcessLine>,
    pub log: Option<FileStat>,
    pub log_tail: Vec<String>,
    pub checkpoint: Option<FileStat>,
    pub kernel_events: Vec<KernelEvent>,
    /// None when the host has no queue configured (or the queue sections have not run yet).
    pub queue: Option<QueueSample>,
    /// The Slurm job the box runs, on hosts whose profile has a walltime.
    pub slurm_job: Option<SlurmJob>,
    pub errors: Vec<SectionError>,
    pub cut: Vec<Cut>,
}

impl HostSample {
    pub fn from_cycle(cycle: &RawCycle) -> HostSample {
        let mut s = HostSample::default();
        let mut errors: Vec<SectionError> = Vec::new();
        let mut note = |section: &str, e: ParseError| {
            errors.push(SectionError {
                section: section.into(),
                message: e.to_string(),
            })
        };
        for section in &cycle.sections {
            if section.truncated {
                // A cut section is never taken as the whole: the judgements that need it say
                // they could not judge, beside whatever its beginning shows.
                s.cut.push(Cut {
                    section: section.name.clone(),
                    why: format!(
                        "cut at {} KiB (the box printed more)",
                        super::script::SECTION_CAP_BYTES / 1024
                    ),
                });
            }
            let body = section.body.as_str();
            let status = section.status;
            let missing_tool = status == Some(NOT_FOUND);
            match section.name.as_str() {
                "apps" if missing_tool => s.nvidia_smi_missing = true,
                "apps" => match parse_apps_csv(body) {
                    Ok(apps) if status == Some(0) => s.gpu_processes = Some(apps),
                    Ok(_) => note("apps", failed("nvidia-smi", status, body)),
                    Err(e) => note("apps", e),
                },
                "df" | "dfi" => {}
                "uptime" => parsed(&mut s.uptime, parse_uptime(body), "uptime", &mut note),
                "loadavg" => parsed(&mut s.load, parse_loadavg(body), "loadavg", &mut note),
                "meminfo" => parsed(&mut s.memory, parse_meminfo(body), "meminfo", &mut note),
                "cpus" => parsed(&mut s.cpus, parse_cpus_online(body), "cpus", &mut note),
                "bootid" => parsed(&mut s.boot_id, parse_boot_id(body), "bootid", &mut note),
                "tmux" if missing_tool => {}
                "tmux" => parsed(&mut s.tmux_sessions, parse_tmux_ls(body), "tmux", &mut note),
                "panes" if missing_tool => s.tmux_missing = true,
                "panes" => s.tmux_panes = parse_panes(body),
                "kids" => {
                    for (pid, has) in parse_children(body) {
                        let pane = s.tmux_panes.iter_mut().find(|p| p.pid == pid);
                        if let Some(pane) = pane {
                            pane.has_children = Some(has);
                        }
                    }
                }
                // pgrep exits 1 when nothing matches: an empty list, not an error.
                "run" => match parse_pgrep(body) {
                    Ok(procs) => s.run_processes = procs,
                    Err(e) => note("run", e),
                },
                "log" if status == Some(0) => {
                    let mut lines = body.lines();
                    s.log = lines.next().and_then(|l| file_stat(l, false));
                    let cut = s
                        .log
                        .as_ref()
                        .is_some_and(|l| l.size_bytes > LOG_TAIL_BYTES as u64);
                    s.log_tail = log_tail(lines, cut);
                }
                "log" => note("log", failed("stat/tail", status, body)),
                "ckpt" if status == Some(0) => {
                    s.checkpoint = body.lines().next().and_then(|l| file_stat(l, true));
                }
                "ckpt" => note("ckpt", failed("ls/stat", status, body)),
                "qfile" | "qfinal" | "qproc" | "qlog" => {
                    let q = s.queue.get_or_insert_with(QueueSample::default);
                    if let Err(e) = q.read_section(&section.name, status, body) {
                        note(&section.name, e);
                    }
                }
                "slurm" if status == Some(0) => parsed(
                    &mut s.slurm_job,
                    parse_squeue(body, None).and_then(|j| {
                        j.ok_or_else(|| {
                            ParseError::new(
                                "squeue",
                                1,
                                "no job listed: it ended, or set instance_id to its id",
                            )
                        })
                    }),
                    "slurm",
                    &mut note,
                ),
                "slurm" => note("slurm", failed("squeue", status, body)),
                "kernel" => match parse_kernel_log(body) {
                    Ok(events) => s.kernel_events = events,
                    Err(e) => note("kernel", e),
                },
                _ => {}
            }
        }
        s.mounts = mounts(cycle, &mut note);
        s.errors = errors;
        s
    }
}

fn parsed<T>(
    slot: &mut Option<T>,
    result: Result<T, ParseError>,
    section: &str,
    note: &mut impl FnMut(&str, ParseError),
) {
    match result {
        Ok(value) => *slot = Some(value),
        Err(e) => note(section, e),
    }
}

fn failed(what: &str, status: Option<i32>, body: &str) -> ParseError {
    let first = body
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output");
    let status = status.map_or_else(|| "cut off".to_string(), |s| format!("exit {s}"));
    ParseError::new(
        "probe",
        1,
        format!(
            "{what} failed ({status}): {}",
            crate::sanitize::line(first, 200)
        ),
    )
}

/// Both dimensions from one `df --output` where the box's df has it, else `-PB1` and `-Pi`.
fn mounts(cycle: &RawCycle, note: &mut impl FnMut(&str, ParseError)) -> Vec<crate::probe::Mount> {
    if let Some(df) = cycle.section("df").filter(|s| s.body.contains("IUse%")) {
        return parse_df_output(&df.body).unwrap_or_else(|e| {
            note("df", e);
            Vec::new()
        });
    }
    let bytes = match cycle.section("df").map(|s| parse_df_bytes(&s.body)) {
        Some(Ok(b)) => b,
        Some(Err(e)) => {
            note("df", e);
            Vec::new()
        }
        None => Vec::new(),
    };
    let inodes = match cycle.section("dfi").map(|s| parse_df_inodes(&s.body)) {
        Some(Ok(i)) => i,
        Some(Err(e)) => {
            note("dfi", e);
            Vec::new()
        }
        None => Vec::new(),
    };
    merge_df(bytes, inodes)
}

/// The queue sections of one slow cycle: the queue file's text (parsed by the consumer, who
/// knows its path), the `final_dir` listing, the `run_queue*.sh` processes and the newest cell
/// log with its tail.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct QueueSample {
    /// None when the file could not be read (the error is in the sample's errors).
    pub text: Option<String>,
    pub listing: FinalListing,
    pub processes: Vec<ProcessLine>,
    pub cell_log: Option<FileStat>,
    pub cell_log_tail: Vec<String>,
}

impl QueueSample {
    fn read_section(
        &mut self,
        name: &str,
        status: Option<i32>,
        body: &str,
    ) -> Result<(), ParseError> {
        match name {
            "qfile" if status == Some(0) => self.text = Some(body.to_string()),
            "qfile" if status == Some(QUEUE_FILE_OVER_CAP) => {
                return Err(ParseError::new(
                    "queue file",
                    1,
                    format!(
                        "{} bytes, over the {} KiB rigwatch reads: reading part of it would drop \
                         its last cells from the roster, so none are shown; split the queue",
                        crate::sanitize::line(body.trim(), 20),
                        QUEUE_FILE_CAP_BYTES / 1024
                    ),
                ));
            }
            "qfile" => return Err(failed("stat/head", status, body)),
            "qfinal" if status == Some(0) => self.listing = parse_final_listing(body),
            "qfinal" => return Err(failed("find/stat", status, body)),
            "qproc" => self.processes = parse_pgrep(body)?,
            "qlog" if status == Some(0) => {
                let mut lines = body.lines();
                self.cell_log = lines.next().and_then(|l| file_stat(l, true));
                let cut = self
                    .cell_log
                    .as_ref()
                    .is_some_and(|l| l.size_bytes > LOG_TAIL_BYTES as u64);
                self.cell_log_tail = log_tail(lines, cut);
            }
            _ => return Err(failed("ls/stat/tail", status, body)),
        }
        Ok(())
    }
}

/// Lines kept from the log's last bytes.
pub const LOG_TAIL_LINES: usize = 20;

/// The log as a terminal would show it: a progress bar rewritten with `\r` shows its last
/// state; when `tail -c` cut into the file, its first line is a fragment and is dropped —
/// unless a `\r` in it ends the fragment (its last segment is whole: tqdm's bar with no
/// newline yet), or it is all there is (the end of one long line beats an empty pane). A key or
/// token a training script echoes (`WANDB_API_KEY=…`) is masked before any view sees the line.
fn log_tail<'a>(lines: impl Iterator<Item = &'a str>, cut: bool) -> Vec<String> {
    let lines: Vec<&str> = lines.collect();
    let fragment = cut
        && lines.len() > 1
        && lines
            .first()
            .is_some_and(|l| !l.trim_end_matches('\r').contains('\r'));
    let mut shown: Vec<String> = lines
        .iter()
        .skip(usize::from(fragment))
        .map(|l| {
            let last = l.trim_end_matches('\r').rsplit('\r').next().unwrap_or("");
            crate::sanitize::mask_secrets(last)
        })
        .collect();
    while shown.last().is_some_and(|l| l.is_empty()) {
        shown.pop();
    }
    let skip = shown.len().saturating_sub(LOG_TAIL_LINES);
    shown.split_off(skip)
}

/// `SIZE EPOCH` (log) or `SIZE EPOCH PATH` (checkpoint), as `stat -c` prints them.
fn file_stat(line: &str, with_path: bool) -> Option<FileStat> {
    let mut parts = line.splitn(3, ' ');
    let size_bytes = parts.next()?.parse().ok()?;
    let epoch: i64 = parts.next()?.parse().ok()?;
    let path = if with_path {
        Some(parts.next()?.to_string())
    } else {
        None
    };
    let modified = Utc.timestamp_opt(epoch, 0).single()?;
    Some(FileStat {
        path,
        size_bytes,
        modified,
    })
}

/// The `kids` section: `<pid> <1|0>`, whether that pane process has children.
fn parse_children(text: &str) -> impl Iterator<Item = (u32, bool)> + '_ {
    text.lines().filter_map(|line| {
        let (pid, has) = line.split_once(' ')?;
        Some((pid.parse().ok()?, has == "1"))
    })
}

/// `tmux list-panes -s -t =RUN -F '#{session_name} #{pane_pid} #{pane_dead} #{pane_current_command}'`;
/// tmux's own complaints (no server, no such session) are no pane.
pub fn parse_panes(text: &str) -> Vec<TmuxPane> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            Some(TmuxPane {
                session: parts.next()?.to_string(),
                pid: parts.next()?.parse().ok()?,
                dead: parts.next()? == "1",
                command: parts.collect::<Vec<_>>().join(" "),
                has_children: None,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "sample_tests.rs"]
mod tests;
