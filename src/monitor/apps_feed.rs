//! Who holds VRAM, from the box's long-lived `nvidia-smi --query-compute-apps ... -lms` loop
//! (`probe::loops`): a real nvidia-smi costs tens of milliseconds of CPU at every start (it loads
//! and initialises the driver library), so asking it afresh every slow cycle was the costliest
//! thing the probe did. The loop prints a header and one row per process each period; a batch
//! ends at the next header or when the loop goes quiet. The latest batch goes into each probe
//! reading, so everything downstream sees the same `HostSample` as before.

use std::time::Duration;

use tokio::time::Instant;

use super::commands::NOT_FOUND;
use crate::probe::sample::{Cut, HostSample, SectionError};
use crate::probe::{GpuProcess, parse_apps_csv};

/// A batch is complete once no line has come for this long (nvidia-smi prints it at once).
const QUIET: Duration = Duration::from_millis(300);
/// One batch is held at most this big (about 2 000 rows): a box that prints rows without end,
/// or 100 000 per batch, costs rigwatch this much, not all its memory.
const MAX_BATCH: usize = 256 * 1024;

/// What the compute-apps loop last said, and the batch it is printing now.
#[derive(Debug, Default)]
pub struct AppsFeed {
    processes: Option<Vec<GpuProcess>>,
    missing: bool,
    error: Option<String>,
    /// The batch was cut at its bound: how, in words.
    cut: Option<String>,
    batch: Batch,
    last_line: Option<Instant>,
}

impl AppsFeed {
    /// Puts what the loop said into a probe reading.
    pub fn apply(&self, sample: &mut HostSample) {
        if self.missing {
            sample.nvidia_smi_missing = true;
        } else if let Some(processes) = &self.processes {
            sample.gpu_processes = Some(processes.clone());
        }
        if let Some(why) = &self.cut {
            sample.cut.push(Cut {
                section: "apps".into(),
                why: why.clone(),
            });
        }
        if let Some(message) = &self.error {
            sample.errors.push(SectionError {
                section: "apps".into(),
                message: message.clone(),
            });
        }
    }

    /// One line the loop printed, at `now`.
    pub fn line(&mut self, line: &str, now: Instant) {
        if line.trim_start().starts_with("pid") {
            self.close();
        }
        self.batch.push(line);
        self.last_line = Some(now);
    }

    /// When the batch being printed is complete for want of more lines, if one is.
    pub fn quiet_at(&self) -> Option<Instant> {
        self.last_line
            .filter(|_| !self.batch.text.is_empty())
            .map(|at| at + QUIET)
    }

    /// The loop's nvidia-smi ended with `status`; the box starts it again itself.
    pub fn ended(&mut self, status: Option<u32>) {
        if status == Some(NOT_FOUND) {
            *self = AppsFeed {
                missing: true,
                ..AppsFeed::default()
            };
            return;
        }
        let text = self.batch.text.clone();
        self.close();
        if status != Some(0) {
            self.error = Some(batch_error(&text, status));
        }
    }

    /// Publishes a complete batch (a header and its rows); text that is no batch is an error,
    /// and a batch cut at its bound is shown as far as it was kept and said to be cut.
    pub fn close(&mut self) {
        let Batch { text, dropped } = std::mem::take(&mut self.batch);
        self.last_line = None;
        if text.trim().is_empty() {
            return;
        }
        match parse_apps_csv(&text) {
            Ok(processes) => {
                self.cut = (dropped > 0).then(|| {
                    format!(
                        "showing {} of {} processes: the box listed more than rigwatch holds \
                         ({} KiB a batch)",
                        processes.len(),
                        processes.len() + dropped,
                        MAX_BATCH / 1024
                    )
                });
                self.processes = Some(processes);
                self.missing = false;
                self.error = None;
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }
}

/// The rows of one batch, bounded: past [`MAX_BATCH`] rows are counted, not kept.
#[derive(Debug, Default)]
struct Batch {
    text: String,
    dropped: usize,
}

impl Batch {
    fn push(&mut self, line: &str) {
        if self.text.len() + line.len() < MAX_BATCH {
            self.text.push_str(line);
            self.text.push('\n');
        } else {
            self.dropped += 1;
        }
    }
}

fn batch_error(text: &str, status: Option<u32>) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output");
    format!(
        "nvidia-smi --query-compute-apps ended (exit {}): {}",
        status.map_or("unknown".into(), |s| s.to_string()),
        crate::sanitize::line(first, 200)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/h100/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).expect("capture");
        // The capture's first line is the command, its last the exit status.
        let lines: Vec<&str> = text.lines().collect();
        lines[1..lines.len() - 1].join("\n") + "\n"
    }

    /// The feed after the loop printed `text` and went quiet.
    fn fed(feed: &mut AppsFeed, text: &str) -> HostSample {
        for line in text.lines() {
            feed.line(line, Instant::now());
        }
        assert!(feed.quiet_at().is_some(), "a batch is open");
        feed.close();
        let mut sample = HostSample::default();
        feed.apply(&mut sample);
        sample
    }

    #[test]
    fn a_batch_reaches_the_reading_and_an_idle_batch_empties_it() {
        let mut feed = AppsFeed::default();
        let held = fed(&mut feed, &capture("apps_load.txt"))
            .gpu_processes
            .expect("processes");
        assert_eq!((held.len(), held[0].pid), (1, 467));
        let sample = fed(&mut feed, &capture("apps_idle.txt"));
        assert_eq!(sample.gpu_processes, Some(Vec::new()));
        let sample = fed(&mut feed, "pid, used_gpu_memory [MiB]\nnot a row\n");
        assert_eq!(sample.errors.len(), 1, "{sample:?}");
        assert_eq!(
            sample.gpu_processes,
            Some(Vec::new()),
            "the last good batch stands"
        );
    }

    /// No nvidia-smi is said as such, not as an error; one installed later is read again.
    #[test]
    fn a_box_without_nvidia_smi_says_so_until_one_prints() {
        let mut feed = AppsFeed::default();
        feed.ended(Some(NOT_FOUND));
        let mut sample = HostSample::default();
        feed.apply(&mut sample);
        assert!(
            sample.nvidia_smi_missing && sample.errors.is_empty(),
            "{sample:?}"
        );
        let sample = fed(&mut feed, &capture("apps_load.txt"));
        assert!(!sample.nvidia_smi_missing && sample.gpu_processes.is_some());
    }

    /// A flood of 100 000 rows in one batch is held to its bound, shown as far as it was kept,
    /// and said to be cut with how many there were.
    #[test]
    fn a_flood_of_rows_is_bounded_and_said_to_be_cut() {
        let header = capture("apps_load.txt");
        let (head, row) = header.split_once('\n').expect("header and a row");
        let row = row.lines().next().expect("a row");
        let mut text = format!("{head}\n");
        for _ in 0..100_000 {
            text.push_str(row);
            text.push('\n');
        }
        let mut feed = AppsFeed::default();
        let sample = fed(&mut feed, &text);
        let shown = sample.gpu_processes.as_ref().map_or(0, Vec::len);
        assert!(shown > 1000 && shown < 100_000, "{shown}");
        let said = &sample.cut[0].why;
        assert!(
            said.contains(&format!("showing {shown} of 100000 processes")),
            "{said}"
        );
    }
}
