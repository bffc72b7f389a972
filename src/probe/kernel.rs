//! Kernel log lines (`dmesg`, `journalctl -k`) that explain a dead run: NVIDIA Xid errors and
//! OOM kills. Every other line is skipped; the log is mostly about other things.

use super::ParseError;
use super::text::{lines, quoted};
use serde::Serialize;

const PROBE: &str = "kernel log";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KernelEvent {
    /// `NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., GPU has fallen off the bus.`
    Xid {
        /// What the line carried before `NVRM:` (`[ 1234.5]` or `Nov 22 14:41:24 host kernel:`).
        stamp: String,
        pci: String,
        xid: u32,
        pid: Option<u32>,
        process: Option<String>,
        /// The driver's text after the code, pid and name.
        message: String,
    },
    /// `Out of memory: Killed process 1234 (python) total-vm:...`, also cgroup OOM kills.
    OomKill {
        stamp: String,
        pid: u32,
        process: String,
        /// Killed by a memory cgroup limit (a container's), not by the whole box running out.
        cgroup: bool,
        anon_rss_kib: Option<u64>,
    },
}

pub fn parse_kernel_log(text: &str) -> Result<Vec<KernelEvent>, ParseError> {
    let mut out = Vec::new();
    for (line, row) in lines(PROBE, text)? {
        if let Some((stamp, rest)) = row.split_once("NVRM: Xid (") {
            out.push(xid(stamp, rest).ok_or_else(|| {
                ParseError::new(PROBE, line, format!("unreadable Xid line {}", quoted(row)))
            })?);
        // Older kernels first print "Kill process ... or sacrifice child"; only the
        // "Killed process" line means it happened.
        } else if let Some((stamp, rest)) = row.split_once("Killed process ") {
            out.push(oom(row, stamp, rest).ok_or_else(|| {
                ParseError::new(PROBE, line, format!("unreadable OOM line {}", quoted(row)))
            })?);
        }
    }
    Ok(out)
}

fn xid(stamp: &str, rest: &str) -> Option<KernelEvent> {
    let (pci, rest) = rest.split_once("):")?;
    let (code, mut message) = rest.split_once(',').unwrap_or((rest, ""));
    let mut pid = None;
    let mut process = None;
    // Drivers since ~R525 put `pid=..., name=...,` before the text; older ones do not.
    loop {
        let m = message.trim_start();
        if let Some(p) = m.strip_prefix("pid=") {
            let (value, tail) = p.split_once(',').unwrap_or((p, ""));
            pid = value.trim_matches('\'').parse().ok();
            message = tail;
        } else if let Some(n) = m.strip_prefix("name=") {
            let (value, tail) = n.split_once(',').unwrap_or((n, ""));
            process = Some(value.trim().to_owned()).filter(|v| v != "<unknown>");
            message = tail;
        } else {
            break;
        }
    }
    Some(KernelEvent::Xid {
        stamp: stamp.trim().to_owned(),
        pci: pci.trim_start_matches("PCI:").to_owned(),
        xid: code.trim().parse().ok()?,
        pid,
        process,
        message: crate::sanitize::mask_secrets(message.trim()),
    })
}

fn oom(row: &str, stamp: &str, rest: &str) -> Option<KernelEvent> {
    let (pid, rest) = rest.split_once(" (")?;
    // comm may itself hold ") ", so the name ends at the `)` before the stats, or the last one.
    let end = rest.find(") total-vm:").or_else(|| rest.rfind(')'))?;
    let process = rest.get(..end)?;
    let anon_rss_kib = rest
        .split_once("anon-rss:")
        .and_then(|(_, t)| t.split_once("kB"))
        .and_then(|(n, _)| n.trim().parse().ok());
    let stamp = stamp
        .split_once("Out of memory:")
        .or_else(|| stamp.split_once("Memory cgroup out of memory:"))
        .map_or(stamp, |(s, _)| s);
    Some(KernelEvent::OomKill {
        stamp: stamp.trim().trim_end_matches(':').trim().to_owned(),
        pid: pid.trim().parse().ok()?,
        process: process.to_owned(),
        cgroup: row.contains("Memory cgroup out of memory"),
        anon_rss_kib,
    })
}
