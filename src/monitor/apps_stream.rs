//! Who holds VRAM, from one long-lived `nvidia-smi --query-compute-apps ... -lms` per host: a
//! real nvidia-smi costs tens of milliseconds of CPU at every start (it loads and initialises the
//! driver library), so asking it afresh every slow cycle was the costliest thing the probe did.
//! The loop prints a header and one row per process each period; a batch ends at the next
//! header or when the stream goes quiet. The latest batch is shared with the probe stream, which
//! puts it into each reading, so everything downstream sees the same `HostSample` as before.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::commands::NOT_FOUND;
use crate::probe::sample::{Cut, HostSample, SectionError};
use crate::probe::{APPS_QUERY_FIELDS, GpuProcess, parse_apps_csv};
use crate::readings::{Observation, Update};
use crate::transport::{Session, StreamEvent};

/// A batch is complete once no line has come for this long (nvidia-smi prints it at once).
const QUIET: Duration = Duration::from_millis(300);
const MAX_LINE: usize = 64 * 1024;
/// One batch is held at most this big (about 2 000 rows): a box that prints rows without end,
/// or 100 000 per batch, costs rigwatch this much, not all its memory.
const MAX_BATCH: usize = 256 * 1024;
/// A box without nvidia-smi is asked again this rarely.
const NO_GPU_RECHECK: Duration = Duration::from_secs(300);
const RESTART_AFTER: Duration = Duration::from_secs(2);

/// What the apps stream last saw; `Default` is "nothing yet".
#[derive(Debug, Clone, Default)]
pub struct AppsSeen {
    processes: Option<Vec<GpuProcess>>,
    missing: bool,
    error: Option<String>,
    /// The batch was cut at its bound: how, in words.
    cut: Option<String>,
}

pub type SharedApps = Arc<Mutex<AppsSeen>>;

/// Puts what the apps stream saw into a probe reading.
pub fn apply(seen: &SharedApps, sample: &mut HostSample) {
    let Ok(seen) = seen.lock() else { return };
    if seen.missing {
        sample.nvidia_smi_missing = true;
    } else if let Some(processes) = &seen.processes {
        sample.gpu_processes = Some(processes.clone());
    }
    if let Some(why) = &seen.cut {
        sample.cut.push(Cut {
            section: "apps".into(),
            why: why.clone(),
        });
    }
    if let Some(message) = &seen.error {
        sample.errors.push(SectionError {
            section: "apps".into(),
            message: message.clone(),
        });
    }
}

pub fn command(every: Duration) -> String {
    format!(
        "exec nvidia-smi --query-compute-apps={} --format=csv -lms {}",
        APPS_QUERY_FIELDS.join(","),
        every.as_millis().max(100)
    )
}

fn set(seen: &SharedApps, update: impl FnOnce(&mut AppsSeen)) {
    if let Ok(mut s) = seen.lock() {
        update(&mut s);
    }
}

/// Runs the loop until it ends; returns how long to wait before starting it again.
pub async fn run(
    session: Arc<Session>,
    host: String,
    every: Duration,
    seen: SharedApps,
    tx: mpsc::Sender<Update>,
) -> Duration {
    let mut rx = match session.stream(&command(every), MAX_LINE).await {
        Ok(rx) => rx,
        Err(e) => {
            let why = format!("{host}: compute-apps stream: {e}");
            let _ = tx
                .send(Update {
                    host,
                    observation: Observation::ProbeError(why),
                })
                .await;
            return RESTART_AFTER;
        }
    };
    let mut batch = Batch::default();
    loop {
        let event = match tokio::time::timeout(QUIET, rx.recv()).await {
            Ok(Some(event)) => event,
            Ok(None) => return RESTART_AFTER,
            Err(_) => {
                close(&mut batch, &seen);
                continue;
            }
        };
        match event {
            StreamEvent::Line(line) => {
                if line.trim_start().starts_with("pid") {
                    close(&mut batch, &seen);
                }
                batch.push(&line);
            }
            StreamEvent::Ended {
                link_lost: Some(_), ..
            } => return RESTART_AFTER,
            StreamEvent::Ended { exit_status, .. } => {
                if exit_status == Some(NOT_FOUND) {
                    set(&seen, |s| {
                        *s = AppsSeen {
                            missing: true,
                            ..AppsSeen::default()
                        }
                    });
                    return NO_GPU_RECHECK;
                }
                let text = batch.text.clone();
                close(&mut batch, &seen);
                if exit_status != Some(0) {
                    let first = batch_error(&text, exit_status);
                    set(&seen, |s| s.error = Some(first));
                }
                return RESTART_AFTER;
            }
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

/// Publishes a complete batch (a header and its rows); text that is no batch is an error, and a
/// batch cut at its bound is shown as far as it was kept and said to be cut.
fn close(batch: &mut Batch, seen: &SharedApps) {
    let Batch { text, dropped } = std::mem::take(batch);
    if text.trim().is_empty() {
        return;
    }
    match parse_apps_csv(&text) {
        Ok(processes) => set(seen, |s| {
            let cut = (dropped > 0).then(|| {
                format!(
                    "showing {} of {} processes: the box listed more than rigwatch holds \
                     ({} KiB a batch)",
                    processes.len(),
                    processes.len() + dropped,
                    MAX_BATCH / 1024
                )
            });
            *s = AppsSeen {
                processes: Some(processes),
                cut,
                ..AppsSeen::default()
            }
        }),
        Err(e) => set(seen, |s| s.error = Some(e.to_string())),
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

    #[test]
    fn a_batch_reaches_the_reading_and_an_idle_batch_empties_it() {
        let seen = SharedApps::default();
        let mut batch = of(&capture("apps_load.txt"));
        close(&mut batch, &seen);
        let mut sample = HostSample::default();
        apply(&seen, &mut sample);
        let held = sample.gpu_processes.expect("processes");
        assert_eq!((held.len(), held[0].pid), (1, 467));
        let mut batch = of(&capture("apps_idle.txt"));
        close(&mut batch, &seen);
        let mut sample = HostSample::default();
        apply(&seen, &mut sample);
        assert_eq!(sample.gpu_processes, Some(Vec::new()));
        let mut batch = of("pid, used_gpu_memory [MiB]\nnot a row\n");
        close(&mut batch, &seen);
        let mut sample = HostSample::default();
        apply(&seen, &mut sample);
        assert_eq!(sample.errors.len(), 1, "{sample:?}");
        assert_eq!(
            sample.gpu_processes,
            Some(Vec::new()),
            "the last good batch stands"
        );
    }

    fn of(text: &str) -> Batch {
        let mut batch = Batch::default();
        for line in text.lines() {
            batch.push(line);
        }
        batch
    }

    /// A flood of 100 000 rows in one batch is held to its bound, shown as far as it was kept,
    /// and said to be cut with how many there were.
    #[test]
    fn a_flood_of_rows_is_bounded_and_said_to_be_cut() {
        let header = capture("apps_load.txt");
        let (head, row) = header.split_once('\n').expect("header and a row");
        let row = row.lines().next().expect("a row");
        let mut batch = Batch::default();
        batch.push(head);
        for _ in 0..100_000 {
            batch.push(row);
        }
        assert!(batch.text.len() < MAX_BATCH, "{}", batch.text.len());
        let seen = SharedApps::default();
        close(&mut batch, &seen);
        let mut sample = HostSample::default();
        apply(&seen, &mut sample);
        let shown = sample.gpu_processes.as_ref().map_or(0, Vec::len);
        assert!(shown > 1000 && shown < 100_000, "{shown}");
        let said = &sample.cut[0].why;
        assert!(
            said.contains(&format!("showing {shown} of 100000 processes")),
            "{said}"
        );
    }
}
