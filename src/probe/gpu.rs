//! `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`: one row per GPU per sample.
//!
//! The caller passes the field list it asked for and the parser maps cells by name, so one
//! parser serves the dashboard's query, the legacy-driver fallback and every capture's ad-hoc
//! list. Fields it has no slot for are accepted and ignored.

use super::text::{self, csv_cells, field_key, float, is_header, lines, number, quoted};
use super::{ClockEventReason, ClockEventReasons, ParseError};
use chrono::NaiveDateTime;
use serde::Serialize;

const PROBE: &str = "nvidia-smi --query-gpu";

/// The dashboard's query, in this order.
pub const GPU_QUERY_FIELDS: &[&str] = &[
    "index",
    "uuid",
    "name",
    "pstate",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "clocks.sm",
    "clocks.max.sm",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks_event_reasons.active",
];

/// For drivers older than the `clocks_event_reasons` rename (R535), which only know the
/// `throttle` spelling. Driver 580 still accepts this one too (q_idle_csv.txt asks for it).
pub const GPU_QUERY_FIELDS_LEGACY: &[&str] = &[
    "index",
    "uuid",
    "name",
    "pstate",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "clocks.sm",
    "clocks.max.sm",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks_throttle_reasons.active",
];

/// Short query names and the long names nvidia-smi prints in its header for them.
const ALIASES: &[(&str, &str)] = &[
    ("clocks.sm", "clocks.current.sm"),
    ("clocks.mem", "clocks.current.memory"),
    ("clocks.gr", "clocks.current.graphics"),
    ("clocks.video", "clocks.current.video"),
    ("clocks.max.mem", "clocks.max.memory"),
    ("clocks.max.gr", "clocks.max.graphics"),
    ("clocks.applications.gr", "clocks.applications.graphics"),
    ("clocks.applications.mem", "clocks.applications.memory"),
    (
        "clocks.default_applications.gr",
        "clocks.default_applications.graphics",
    ),
    (
        "clocks.default_applications.mem",
        "clocks.default_applications.memory",
    ),
    ("gpu_name", "name"),
    ("gpu_uuid", "uuid"),
    ("gpu_serial", "serial"),
    ("gpu_bus_id", "pci.bus_id"),
];

/// One GPU at one moment. Every value is optional: a field not queried, `[N/A]` and
/// `[Not Supported]` are all `None`, never a made-up 0.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct GpuSample {
    /// The box's local time as nvidia-smi printed it (no zone).
    pub timestamp: Option<NaiveDateTime>,
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub pstate: Option<String>,
    pub util_gpu_pct: Option<u32>,
    pub util_mem_pct: Option<u32>,
    pub mem_used_mib: Option<u64>,
    pub mem_total_mib: Option<u64>,
    pub sm_clock_mhz: Option<u32>,
    pub sm_clock_max_mhz: Option<u32>,
    pub power_draw_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temp_gpu_c: Option<u32>,
    pub event_reasons: Option<ClockEventReasons>,
}

#[derive(Clone, Copy)]
enum Field {
    Timestamp,
    Index,
    Uuid,
    Name,
    Pstate,
    UtilGpu,
    UtilMem,
    MemUsed,
    MemTotal,
    SmClock,
    SmClockMax,
    PowerDraw,
    PowerLimit,
    TempGpu,
    Reasons,
    Reason(ClockEventReason),
    Other,
}

fn field(name: &str) -> Field {
    let key = field_key(name, ALIASES);
    match key.as_str() {
        "timestamp" => Field::Timestamp,
        "index" => Field::Index,
        "uuid" => Field::Uuid,
        "name" => Field::Name,
        "pstate" => Field::Pstate,
        "utilization.gpu" => Field::UtilGpu,
        "utilization.memory" => Field::UtilMem,
        "memory.used" => Field::MemUsed,
        "memory.total" => Field::MemTotal,
        "clocks.current.sm" => Field::SmClock,
        "clocks.max.sm" => Field::SmClockMax,
        "power.draw" => Field::PowerDraw,
        "power.limit" => Field::PowerLimit,
        "temperature.gpu" => Field::TempGpu,
        "clocks_event_reasons.active" => Field::Reasons,
        _ => key
            .strip_prefix("clocks_event_reasons.")
            .and_then(ClockEventReason::from_field_suffix)
            .map_or(Field::Other, Field::Reason),
    }
}

/// Parses every GPU row in `text`, queried with `fields` (in query order). A header line
/// (`--format=csv` without `noheader`) is recognised and skipped wherever it appears.
pub fn parse_gpu_query(fields: &[&str], text: &str) -> Result<Vec<GpuSample>, ParseError> {
    let kinds: Vec<Field> = fields.iter().map(|f| field(f)).collect();
    let mut out = Vec::new();
    for (line, row) in lines(PROBE, text)? {
        // No comma folding here (unlike process names): GPU names hold none, and folding would
        // let a field list one short of the query shift every later value silently.
        let cells = csv_cells(row, fields.len(), None).map_err(|got| {
            let reason = match parse_query_failure(row) {
                Some(bad) => format!("nvidia-smi refused field {}", quoted(&bad)),
                None => format!("expected {} fields, got {got}", fields.len()),
            };
            ParseError::new(PROBE, line, reason)
        })?;
        if is_header(&cells, fields, ALIASES) {
            continue;
        }
        out.push(sample(line, fields, &kinds, &cells)?);
    }
    Ok(out)
}

fn sample(
    line: usize,
    names: &[&str],
    kinds: &[Field],
    cells: &[&str],
) -> Result<GpuSample, ParseError> {
    let mut s = GpuSample::default();
    let mut per_reason: Option<u64> = None;
    for ((name, kind), v) in names.iter().zip(kinds).zip(cells) {
        let num = |v: &str| number::<u32>(PROBE, line, name, v);
        let big = |v: &str| number::<u64>(PROBE, line, name, v);
        let real = |v: &str| float(PROBE, line, name, v);
        match kind {
            Field::Timestamp => s.timestamp = timestamp(line, v)?,
            Field::Index => s.index = num(v)?,
            Field::Uuid => s.uuid = text::text(v),
            Field::Name => s.name = text::text(v),
            Field::Pstate => s.pstate = text::text(v),
            Field::UtilGpu => s.util_gpu_pct = num(v)?,
            Field::UtilMem => s.util_mem_pct = num(v)?,
            Field::MemUsed => s.mem_used_mib = big(v)?,
            Field::MemTotal => s.mem_total_mib = big(v)?,
            Field::SmClock => s.sm_clock_mhz = num(v)?,
            Field::SmClockMax => s.sm_clock_max_mhz = num(v)?,
            Field::PowerDraw => s.power_draw_w = real(v)?,
            Field::PowerLimit => s.power_limit_w = real(v)?,
            Field::TempGpu => s.temp_gpu_c = num(v)?,
            Field::Reasons if text::is_missing(v) => s.event_reasons = None,
            Field::Reasons => {
                s.event_reasons = Some(ClockEventReasons::from_hex(v).ok_or_else(|| {
                    let why = format!("{name}: expected a hex mask like 0x4, got {}", quoted(v));
                    ParseError::new(PROBE, line, why)
                })?);
            }
            Field::Reason(_) if text::is_missing(v) => {}
            Field::Reason(r) => {
                let bits = per_reason.get_or_insert(0);
                match *v {
                    "Active" => *bits |= r.bit(),
                    "Not Active" => {}
                    _ => {
                        let why =
                            format!("{name}: expected Active or Not Active, got {}", quoted(v));
                        return Err(ParseError::new(PROBE, line, why));
                    }
                }
            }
            Field::Other => {}
        }
    }
    // Per-reason columns only stand in for the mask when the mask itself was not asked for.
    if s.event_reasons.is_none() && !kinds.iter().any(|k| matches!(k, Field::Reasons)) {
        s.event_reasons = per_reason.map(|mask| ClockEventReasons { mask });
    }
    Ok(s)
}

fn timestamp(line: usize, v: &str) -> Result<Option<NaiveDateTime>, ParseError> {
    if text::is_missing(v) {
        return Ok(None);
    }
    NaiveDateTime::parse_from_str(v, "%Y/%m/%d %H:%M:%S%.f")
        .map(Some)
        .map_err(|_| {
            let why = format!(
                "timestamp: expected YYYY/MM/DD HH:MM:SS.mmm, got {}",
                quoted(v)
            );
            ParseError::new(PROBE, line, why)
        })
}

/// The field nvidia-smi refused (`Field "bogus.field" is not a valid field to query.`, exit 2),
/// so the caller can retry with [`GPU_QUERY_FIELDS_LEGACY`].
pub fn parse_query_failure(text: &str) -> Option<String> {
    text.lines().take(text::MAX_LINES).find_map(|l| {
        l.trim()
            .strip_prefix("Field \"")?
            .strip_suffix("\" is not a valid field to query.")
            .map(str::to_owned)
    })
}
