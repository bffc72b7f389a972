//! The small /proc and /sys files: uptime, load average, memory, the boot id and the CPUs
//! online.
//!
//! Uptime and boot id together tell a reboot (a box that silently restarted kills the run but
//! keeps billing) from a dropped connection.

use super::ParseError;
use super::text::{float, lines, number, quoted};
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Uptime {
    pub up: Duration,
    /// Summed over all CPUs, so it can exceed `up`.
    pub idle_all_cpus: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    pub runnable: u32,
    pub total_tasks: u32,
    pub last_pid: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemInfo {
    pub total_bytes: u64,
    /// `None` on kernels before 3.14, which lack `MemAvailable`.
    pub available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_free_bytes: Option<u64>,
}

/// The first non-blank line, split into words, or an error naming what was expected.
fn only_line<'a>(
    probe: &'static str,
    text: &'a str,
    want: &str,
) -> Result<(usize, Vec<&'a str>), ParseError> {
    let rows = lines(probe, text)?;
    let (line, row) = rows
        .first()
        .ok_or_else(|| ParseError::new(probe, 1, format!("empty; expected {want}")))?;
    Ok((*line, row.split_whitespace().collect()))
}

/// `/proc/uptime`: `29.85 467.50`.
pub fn parse_uptime(text: &str) -> Result<Uptime, ParseError> {
    const PROBE: &str = "/proc/uptime";
    let (line, words) = only_line(PROBE, text, "two numbers")?;
    let secs = |i: usize, name: &str| -> Result<Duration, ParseError> {
        let w = words.get(i).copied().unwrap_or("");
        float(PROBE, line, name, w)?
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| ParseError::new(PROBE, line, format!("{name}: got {}", quoted(w))))
    };
    Ok(Uptime {
        up: secs(0, "uptime")?,
        idle_all_cpus: secs(1, "idle")?,
    })
}

/// `/proc/loadavg`: `0.00 0.00 0.00 1/207 449`.
pub fn parse_loadavg(text: &str) -> Result<LoadAvg, ParseError> {
    const PROBE: &str = "/proc/loadavg";
    let (line, words) = only_line(PROBE, text, "five fields")?;
    if words.len() != 5 {
        let why = format!("expected 5 fields, got {}", words.len());
        return Err(ParseError::new(PROBE, line, why));
    }
    let w = |i: usize| words.get(i).copied().unwrap_or("");
    let need = |v: Option<f64>, name: &str, raw: &str| {
        v.ok_or_else(|| ParseError::new(PROBE, line, format!("{name}: got {}", quoted(raw))))
    };
    let (running, total) = w(3).split_once('/').unwrap_or((w(3), ""));
    let count = |name: &str, raw: &str| -> Result<u32, ParseError> {
        number::<u32>(PROBE, line, name, raw)?
            .ok_or_else(|| ParseError::new(PROBE, line, format!("{name}: got {}", quoted(raw))))
    };
    Ok(LoadAvg {
        one: need(float(PROBE, line, "load1", w(0))?, "load1", w(0))?,
        five: need(float(PROBE, line, "load5", w(1))?, "load5", w(1))?,
        fifteen: need(float(PROBE, line, "load15", w(2))?, "load15", w(2))?,
        runnable: count("runnable", running)?,
        total_tasks: count("tasks", total)?,
        last_pid: count("last pid", w(4))?,
    })
}

/// `/proc/meminfo` (or its first lines): sizes in kB, which the kernel means as KiB.
pub fn parse_meminfo(text: &str) -> Result<MemInfo, ParseError> {
    const PROBE: &str = "/proc/meminfo";
    let mut total = None;
    let mut mem = MemInfo {
        total_bytes: 0,
        available_bytes: None,
        swap_total_bytes: None,
        swap_free_bytes: None,
    };
    let rows = lines(PROBE, text)?;
    for (line, row) in &rows {
        let Some((key, rest)) = row.split_once(':') else {
            let why = format!("expected `Key: value kB`, got {}", quoted(row));
            return Err(ParseError::new(PROBE, *line, why));
        };
        let slot = match key {
            "MemTotal" => &mut total,
            "MemAvailable" => &mut mem.available_bytes,
            "SwapTotal" => &mut mem.swap_total_bytes,
            "SwapFree" => &mut mem.swap_free_bytes,
            _ => continue,
        };
        let kib = rest.trim().strip_suffix("kB").unwrap_or(rest).trim();
        let bytes = number::<u64>(PROBE, *line, key, kib)?.and_then(|k| k.checked_mul(1024));
        *slot = Some(bytes.ok_or_else(|| {
            ParseError::new(PROBE, *line, format!("{key}: got {}", quoted(rest.trim())))
        })?);
    }
    let last = rows.last().map_or(1, |(l, _)| *l);
    mem.total_bytes = total.ok_or_else(|| ParseError::new(PROBE, last, "no MemTotal line"))?;
    Ok(mem)
}

/// `/sys/devices/system/cpu/online`: the CPUs online as a list of ranges (`0-15`, `0,2-5`), so
/// the load average has a scale. Counted from the whole machine's list, not `nproc`'s affinity
/// mask: `/proc/loadavg` is not namespaced either, so in a container both speak of the host.
pub fn parse_cpus_online(text: &str) -> Result<u32, ParseError> {
    const PROBE: &str = "cpus online";
    let (line, words) = only_line(PROBE, text, "a CPU list like 0-15")?;
    let list = match words.as_slice() {
        [one] => *one,
        _ => {
            let why = format!("expected one CPU list, got {}", quoted(&words.join(" ")));
            return Err(ParseError::new(PROBE, line, why));
        }
    };
    let bad = || {
        ParseError::new(
            PROBE,
            line,
            format!("expected a CPU list, got {}", quoted(list)),
        )
    };
    let mut count = 0u32;
    for part in list.split(',') {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        let cpu = |w: &str| w.parse::<u32>().map_err(|_| bad());
        let (first, last) = (cpu(first)?, cpu(last)?);
        let span = last
            .checked_sub(first)
            .and_then(|d| d.checked_add(1))
            .ok_or_else(bad)?;
        count = count.checked_add(span).ok_or_else(bad)?;
    }
    Ok(count)
}

/// `/proc/sys/kernel/random/boot_id`: a fresh UUID each boot. Returned lowercased.
pub fn parse_boot_id(text: &str) -> Result<String, ParseError> {
    const PROBE: &str = "boot_id";
    let (line, words) = only_line(PROBE, text, "a UUID")?;
    let id = words.first().copied().unwrap_or("");
    let groups: Vec<&str> = id.split('-').collect();
    let shaped = words.len() == 1
        && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    if !shaped {
        let why = format!(
            "expected a UUID like 8-4-4-4-12 hex digits, got {}",
            quoted(id)
        );
        return Err(ParseError::new(PROBE, line, why));
    }
    Ok(id.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_id_handwritten() {
        let id = parse_boot_id("5F1A9C0E-3b2d-4e8f-9a61-0c7d2e4b8a13\n");
        assert_eq!(id.as_deref(), Ok("5f1a9c0e-3b2d-4e8f-9a61-0c7d2e4b8a13"));
        assert!(parse_boot_id("5f1a9c0e-3b2d-4e8f-9a61\n").is_err());
        assert!(parse_boot_id("").is_err());
        assert!(parse_boot_id("zzzzzzzz-3b2d-4e8f-9a61-0c7d2e4b8a13").is_err());
    }

    #[test]
    fn cpus_online_counts_every_range_handwritten() {
        assert_eq!(parse_cpus_online("0-15\n"), Ok(16));
        assert_eq!(parse_cpus_online("0\n"), Ok(1));
        assert_eq!(parse_cpus_online("0,2-5,8-9"), Ok(7));
        assert!(parse_cpus_online("").is_err());
        assert!(parse_cpus_online("5-2").is_err());
        assert!(parse_cpus_online("0-4294967295").is_err());
        assert!(parse_cpus_online("0-3 4").is_err());
        assert!(parse_cpus_online("a-b").is_err());
    }

    #[test]
    fn hostile_numbers_are_errors_not_panics_handwritten() {
        assert!(parse_uptime("-1 2").is_err());
        assert!(parse_uptime("1e300 2").is_err());
        assert!(parse_loadavg("1 2 3 4 5").is_err());
        assert!(parse_meminfo("MemTotal: 99999999999999999 kB").is_err());
        assert!(parse_meminfo("MemFree: 1 kB").is_err());
    }
}
