//! The box's GPU loop (`nvidia-smi --query-gpu ... -lms`, `probe::loops`), line by line: rows
//! batched per sampling instant into readings, its availability said when it starts printing and
//! when it ends, and a field the driver rejects sent back up, to ask again with the legacy list.

use chrono::{DateTime, Utc};

use super::commands::NOT_FOUND;
use super::readers::GpuBatcher;
use crate::probe::parse_query_failure;
use crate::readings::{GpuAvailability, GpuReading, Observation};

/// The driver rejected one of the fields asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRejected;

pub struct GpuFeed {
    fields: &'static [&'static str],
    batcher: GpuBatcher,
    /// Readings came since nvidia-smi (re)started, and `Present` was said.
    announced: bool,
    /// The last line that was no reading, for the word on why the loop ended.
    tail: String,
}

impl GpuFeed {
    pub fn new(fields: &'static [&'static str]) -> Self {
        GpuFeed {
            fields,
            batcher: GpuBatcher::new(fields),
            announced: false,
            tail: String::new(),
        }
    }

    /// One line nvidia-smi printed: what it says, in order.
    pub fn line(
        &mut self,
        host: &str,
        line: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<Observation>, FieldRejected> {
        if parse_query_failure(line).is_some() {
            return Err(FieldRejected);
        }
        let mut out = Vec::new();
        match self.batcher.push(line) {
            Ok(Some(gpus)) => {
                if !self.announced {
                    out.push(Observation::GpuAvailability(GpuAvailability::Present));
                    self.announced = true;
                }
                out.push(Observation::Gpu(GpuReading { at: now, gpus }));
            }
            Ok(None) => {}
            Err(e) => {
                self.tail = line.to_string();
                out.push(Observation::ProbeError(format!("{host}: GPU stream: {e}")));
            }
        }
        Ok(out)
    }

    /// nvidia-smi ended with `status`: what that says of the GPUs. The box starts it again.
    pub fn ended(&mut self, status: Option<u32>) -> GpuAvailability {
        let tail = std::mem::take(&mut self.tail);
        *self = GpuFeed::new(self.fields);
        match status {
            Some(NOT_FOUND) => GpuAvailability::NoNvidiaSmi,
            status => GpuAvailability::Failing(format!(
                "nvidia-smi stream ended (exit {}){}",
                status.map_or("unknown".into(), |s| s.to_string()),
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {}", crate::sanitize::line(&tail, 160))
                }
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY};

    fn body(name: &str) -> Vec<String> {
        let path = format!("{}/tests/fixtures/h100/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).expect("capture");
        let lines: Vec<&str> = text.lines().collect();
        lines[1..lines.len() - 1]
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn a_rejected_field_is_sent_back_up() {
        let mut feed = GpuFeed::new(GPU_QUERY_FIELDS);
        let rejected = body("q_bogus.txt")
            .iter()
            .any(|l| feed.line("b", l, Utc::now()) == Err(FieldRejected));
        assert!(rejected);
    }

    /// Present is said once per start of nvidia-smi; its end says why, with its last odd line.
    #[test]
    fn present_once_per_start_and_the_end_says_why() {
        let mut feed = GpuFeed::new(GPU_QUERY_FIELDS_LEGACY);
        let mut said = Vec::new();
        for _ in 0..2 {
            for line in ["index, name", "0, H100", "0, H100", "0, H100"] {
                said.extend(feed.line("b", line, Utc::now()).expect("no rejection"));
            }
            assert!(feed.line("b", "Unable to determine", Utc::now()).is_ok());
            let ended = feed.ended(Some(15));
            assert!(
                matches!(&ended, GpuAvailability::Failing(w) if w.contains("exit 15): Unable")),
                "{ended:?}"
            );
        }
        let present = said
            .iter()
            .filter(|o| matches!(o, Observation::GpuAvailability(GpuAvailability::Present)))
            .count();
        assert_eq!(present, 2, "{said:?}");
        assert_eq!(feed.ended(Some(NOT_FOUND)), GpuAvailability::NoNvidiaSmi);
    }
}
