//! Turning stream lines into readings, shared by the live monitor and the demo replay: the GPU
//! stream's rows batched per sampling instant, the probe loop's frames assembled into samples.

use chrono::{DateTime, Utc};

use crate::probe::frame::{CycleAssembler, RawCycle};
use crate::probe::sample::HostSample;
use crate::probe::{GpuSample, ParseError, parse_gpu_query};
use crate::readings::HostReading;

/// Groups the stream's rows into one reading per sampling instant: nvidia-smi prints every GPU
/// each period, so a batch is complete when it has as many GPUs as the last one, or when an
/// index repeats.
pub struct GpuBatcher {
    fields: Vec<String>,
    current: Vec<GpuSample>,
    expected: usize,
}

impl GpuBatcher {
    pub fn new(fields: &[&str]) -> Self {
        GpuBatcher {
            fields: fields.iter().map(|f| f.to_string()).collect(),
            current: Vec::new(),
            expected: 0,
        }
    }

    /// The rows of an instant not yet closed (the demo replays whole instants at a time).
    pub fn flush(&mut self) -> Vec<GpuSample> {
        std::mem::take(&mut self.current)
    }

    pub fn push(&mut self, line: &str) -> Result<Option<Vec<GpuSample>>, ParseError> {
        let first = line
            .split(',')
            .next()
            .unwrap_or("")
            .split(" [")
            .next()
            .unwrap_or("")
            .trim();
        if first == "index" || first == "timestamp" {
            self.fields = line.split(',').map(|c| c.trim().to_string()).collect();
            return Ok(None);
        }
        if line.trim().is_empty() {
            return Ok(None);
        }
        let names: Vec<&str> = self.fields.iter().map(String::as_str).collect();
        let mut rows = parse_gpu_query(&names, line)?;
        let Some(row) = rows.pop() else {
            return Ok(None);
        };
        let repeats = row.index.is_some() && self.current.iter().any(|g| g.index == row.index);
        let mut done = None;
        if repeats {
            self.expected = self.current.len();
            done = Some(std::mem::take(&mut self.current));
        }
        self.current.push(row);
        if done.is_none() && self.expected > 0 && self.current.len() == self.expected {
            done = Some(std::mem::take(&mut self.current));
        }
        Ok(done)
    }
}

/// The probe loop's lines in, one host reading per cycle out. Slow sections are carried over
/// from the last cycle that ran them.
pub struct ProbeReader {
    assembler: CycleAssembler,
    last: Option<RawCycle>,
}

impl ProbeReader {
    pub fn new(nonce: &str) -> Self {
        ProbeReader {
            assembler: CycleAssembler::new(nonce),
            last: None,
        }
    }

    pub fn push(
        &mut self,
        line: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<HostReading>, ParseError> {
        let Some(mut cycle) = self.assembler.push(line)? else {
            return Ok(None);
        };
        if let Some(earlier) = &self.last {
            cycle.fill_from(earlier);
        }
        let reading = HostReading {
            at: now,
            sample: HostSample::from_cycle(&cycle),
        };
        self.last = Some(cycle);
        Ok(Some(reading))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_close_when_an_index_repeats_then_by_count() {
        let mut b = GpuBatcher::new(&["index", "utilization.gpu"]);
        assert_eq!(b.push("index, utilization.gpu [%]").ok(), Some(None));
        assert!(matches!(b.push("0, 5"), Ok(None)));
        assert!(matches!(b.push("1, 6"), Ok(None)));
        let first = b.push("0, 7").ok().flatten().expect("batch");
        assert_eq!(first.len(), 2);
        let second = b.push("1, 8").ok().flatten().expect("closes by count");
        assert_eq!(
            second.iter().map(|g| g.util_gpu_pct).collect::<Vec<_>>(),
            [Some(7), Some(8)]
        );
    }
}
