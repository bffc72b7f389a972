//! nvidia-smi output read by its own header: rigwatch asks for `--format=csv,nounits` with the
//! header on, so each column is mapped by the name the driver printed, whatever order or subset
//! of fields a driver (or an older query) produced. Lines before any header use the fields asked.

use super::apps::{APPS_QUERY_FIELDS, GpuProcess, parse_compute_apps};
use super::error::ParseError;
use super::gpu::{GPU_QUERY_FIELDS, GpuSample, parse_gpu_query};

pub fn parse_gpu_csv(text: &str) -> Result<Vec<GpuSample>, ParseError> {
    by_header(
        text,
        &["index", "timestamp"],
        GPU_QUERY_FIELDS,
        parse_gpu_query,
    )
}

pub fn parse_apps_csv(text: &str) -> Result<Vec<GpuProcess>, ParseError> {
    by_header(text, &["pid"], APPS_QUERY_FIELDS, parse_compute_apps)
}

fn header_fields(line: &str, first_names: &[&str]) -> Option<Vec<String>> {
    let cells: Vec<String> = line
        .split(',')
        .map(|c| {
            c.split(" [")
                .next()
                .unwrap_or(c)
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    first_names
        .contains(&cells.first()?.as_str())
        .then_some(cells)
}

fn by_header<T>(
    text: &str,
    first_names: &[&str],
    defaults: &[&str],
    parse: impl Fn(&[&str], &str) -> Result<Vec<T>, ParseError>,
) -> Result<Vec<T>, ParseError> {
    let mut out = Vec::new();
    let mut fields: Vec<String> = defaults.iter().map(|f| f.to_string()).collect();
    let mut run = String::new();
    let mut run_start = 1;
    let mut flush = |fields: &[String], run: &mut String, start: usize| -> Result<(), ParseError> {
        if run.trim().is_empty() {
            run.clear();
            return Ok(());
        }
        let names: Vec<&str> = fields.iter().map(String::as_str).collect();
        let parsed = parse(&names, run).map_err(|mut e| {
            e.line += start - 1;
            e
        })?;
        out.extend(parsed);
        run.clear();
        Ok(())
    };
    for (index, line) in text.lines().enumerate() {
        if let Some(header) = header_fields(line, first_names) {
            flush(&fields, &mut run, run_start)?;
            fields = header;
            run_start = index + 2;
            continue;
        }
        if run.is_empty() {
            run_start = index + 1;
        }
        run.push_str(line);
        run.push('\n');
    }
    flush(&fields, &mut run, run_start)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_the_header_and_errors_keep_absolute_lines() {
        let text = "index, utilization.gpu [%], memory.used [MiB]\n0, 7, 100\n1, 9, 200\n\
                    index, clocks.current.sm [MHz]\n0, 1980\n";
        let gpus = parse_gpu_csv(text).expect("parses");
        assert_eq!(gpus.len(), 3);
        assert_eq!(
            (gpus[1].util_gpu_pct, gpus[1].mem_used_mib),
            (Some(9), Some(200))
        );
        assert_eq!(
            (gpus[2].sm_clock_mhz, gpus[2].util_gpu_pct),
            (Some(1980), None)
        );
        let err = parse_gpu_csv("index, utilization.gpu\n0, 1\n0, x\n").expect_err("bad");
        assert_eq!(err.line, 3);
    }

    #[test]
    fn no_header_uses_the_fields_asked_for() {
        let apps = parse_apps_csv("585, python3, 29130, GPU-1\n").expect("parses");
        assert_eq!(apps[0].used_mib, Some(29130));
    }
}
