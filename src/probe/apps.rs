//! `nvidia-smi --query-compute-apps=...`: the processes holding VRAM.
//!
//! This is what exposes a zombie: VRAM held by a pid while utilization sits at 0 %. Parsed by
//! the caller's field list, like the GPU query, since the captures ask for `gpu_uuid` in some
//! lists and not in others.

use super::ParseError;
use super::text::{self, csv_cells, field_key, is_header, lines, number, quoted};
use serde::Serialize;

const PROBE: &str = "nvidia-smi --query-compute-apps";

/// The dashboard's query, in this order; `gpu_uuid` ties each process to a GPU on multi-GPU boxes.
pub const APPS_QUERY_FIELDS: &[&str] = &["pid", "process_name", "used_memory", "gpu_uuid"];

/// Query names and the names nvidia-smi's header prints for them (nvsmi_help_apps.txt).
const ALIASES: &[(&str, &str)] = &[("name", "process_name"), ("used_memory", "used_gpu_memory")];

/// One process with a compute context on a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuProcess {
    pub pid: u32,
    /// `None` when nvidia-smi cannot see it (`[Not Found]` from inside some containers).
    pub name: Option<String>,
    /// `None` for `[N/A]` (MIG, WDDM), never 0.
    pub used_mib: Option<u64>,
    pub gpu_uuid: Option<String>,
}

/// Parses every process row of `text`, queried with `fields` (in query order). `pid` must be
/// among them: a process the dashboard cannot name by pid is one it cannot point at.
pub fn parse_compute_apps(fields: &[&str], text: &str) -> Result<Vec<GpuProcess>, ParseError> {
    let keys: Vec<String> = fields.iter().map(|f| field_key(f, ALIASES)).collect();
    let at = |key: &str| keys.iter().position(|k| k == key);
    let (pid_at, name_at) = (at("pid"), at("process_name"));
    let (mem_at, uuid_at) = (at("used_gpu_memory"), at("gpu_uuid"));
    let rows = lines(PROBE, text)?;
    let Some(pid_at) = pid_at else {
        return match rows.first() {
            None => Ok(Vec::new()),
            Some((line, _)) => Err(ParseError::new(
                PROBE,
                *line,
                "pid is not in the field list",
            )),
        };
    };
    let mut out = Vec::new();
    for (line, row) in rows {
        // A process name may hold commas; nvidia-smi does not quote it.
        let cells = csv_cells(row, fields.len(), name_at).map_err(|got| {
            ParseError::new(
                PROBE,
                line,
                format!("expected {} fields, got {got}", fields.len()),
            )
        })?;
        if is_header(&cells, fields, ALIASES) {
            continue;
        }
        let cell = |i: Option<usize>| i.and_then(|i| cells.get(i)).copied().unwrap_or("");
        let pid = number::<u32>(PROBE, line, "pid", cell(Some(pid_at)))?.ok_or_else(|| {
            ParseError::new(
                PROBE,
                line,
                format!("pid: got {}", quoted(cell(Some(pid_at)))),
            )
        })?;
        out.push(GpuProcess {
            pid,
            name: name_at.and_then(|i| text::text(cell(Some(i)))),
            used_mib: number(PROBE, line, "used_memory", cell(mem_at))?,
            gpu_uuid: uuid_at.and_then(|i| text::text(cell(Some(i)))),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_in_names_and_missing_memory_handwritten() {
        let text = "12, /opt/a, b/python, [N/A], GPU-x\n13, [Not Found], 10 MiB, GPU-y\n";
        let apps = parse_compute_apps(APPS_QUERY_FIELDS, text).expect("parses");
        assert_eq!(apps[0].name.as_deref(), Some("/opt/a, b/python"));
        assert_eq!(apps[0].used_mib, None);
        assert_eq!(apps[1].name, None);
        assert_eq!(apps[1].used_mib, Some(10));
        assert_eq!(apps[1].gpu_uuid.as_deref(), Some("GPU-y"));
    }

    #[test]
    fn bad_pid_names_the_line_handwritten() {
        let err = parse_compute_apps(APPS_QUERY_FIELDS, "1, a, 2, g\nx, a, 2, g").err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("nvidia-smi --query-compute-apps line 2: pid: expected a number, got \"x\"")
        );
    }

    #[test]
    fn pid_is_required_in_the_field_list_handwritten() {
        assert!(parse_compute_apps(&["used_memory"], "").is_ok());
        assert!(parse_compute_apps(&["used_memory"], "10").is_err());
    }
}
