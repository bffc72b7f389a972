//! A `[[kaggle]]` member read through the `kaggle` CLI: one `kernels status` per kernel (at
//! most [`AT_ONCE`] at a time: a public, rate-limited API), one `kernels list --mine` for when
//! each latest version ran, one `quota` for the account's GPU hours and, where the member says
//! its notebooks are meant for a GPU, each kernel's metadata (`kernels pull -m`, into a private
//! folder that is removed) for the accelerator its commits inherit, and, once per complete
//! version, `kernels files` to see whether it kept any output. Live, each member is a task
//! that sends a reading per period.

use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;

use crate::cluster::ClusterReading;
use crate::cluster::kaggle::{KaggleRead, KernelRead};
use crate::cluster::kaggle_seen::SeenRuns;
use crate::config::KaggleConfig;
use crate::probe::kaggle::{
    Accelerator, KernelStatus, parse_files, parse_list, parse_metadata, parse_quota, parse_status,
};
use crate::transport::kaggle::{kaggle, version};

/// CLI calls in flight at once for one member.
const AT_ONCE: usize = 4;

/// A parse error of the CLI's output, with the CLI's version: a CLI whose output rigwatch
/// cannot read is named, so the fix (upgrade, or report) is plain.
async fn unreadable(member: &KaggleConfig, e: impl std::fmt::Display, timeout: Duration) -> String {
    format!(
        "{}: {e} ({}; rigwatch reads kaggle 1.6 to 2.x)",
        member.name,
        version(member, timeout).await
    )
}

async fn status(
    member: &KaggleConfig,
    kernel: &str,
    timeout: Duration,
) -> Result<KernelStatus, String> {
    let text = kaggle(member, &["kernels", "status", kernel], timeout)
        .await
        .map_err(|e| e.to_string())?;
    match parse_status(kernel, &text) {
        Ok(s) => Ok(s),
        Err(e) => Err(unreadable(member, e, timeout).await),
    }
}

/// The accelerator `kernel`'s notebook is set to; None when it could not be read (the danger
/// is then not judged, never guessed).
async fn accelerator(
    member: &KaggleConfig,
    kernel: &str,
    timeout: Duration,
) -> Option<Accelerator> {
    let dir = tempfile::tempdir().ok()?;
    let path = dir.path().to_string_lossy().into_owned();
    kaggle(
        member,
        &["kernels", "pull", kernel, "-p", &path, "-m"],
        timeout,
    )
    .await
    .ok()?;
    let text = std::fs::read_to_string(dir.path().join("kernel-metadata.json")).ok()?;
    parse_metadata(&text).ok()
}

/// One kernel's status and, where the member says its notebooks are meant for a GPU and the
/// version has not ended, the accelerator its notebook is set to: a second CLI call only where
/// it can change what is judged (an ended commit has no CPU danger, no clock, no run to count).
async fn kernel_read(
    member: &KaggleConfig,
    kernel: &str,
    timeout: Duration,
) -> (String, Result<KernelStatus, String>, Option<Accelerator>) {
    let status = status(member, kernel, timeout).await;
    let live = status
        .as_ref()
        .is_ok_and(|s| crate::cluster::kaggle::is_live(&s.word));
    let accelerator = match (member.gpu, live) {
        (Some(true), true) => accelerator(member, kernel, timeout).await,
        _ => None,
    };
    (kernel.to_string(), status, accelerator)
}

/// Each complete version's count of output files (up to one), by kernel and when it ran: a
/// version's output does not change once it is complete, so it is asked for once.
type OutputsSeen = std::collections::HashMap<(String, chrono::DateTime<Utc>), usize>;
static OUTPUTS_SEEN: std::sync::LazyLock<std::sync::Mutex<OutputsSeen>> =
    std::sync::LazyLock::new(Default::default);

/// Fills in `outputs` for each COMPLETE kernel of `read`: from what was seen before, else one
/// `kernels files` call (None where it fails: 1.x has no such command, and nothing is guessed).
async fn outputs(member: &KaggleConfig, read: &mut KaggleRead, timeout: Duration) {
    for k in &mut read.kernels {
        let complete = k.status.as_ref().is_ok_and(|s| s.word == "COMPLETE");
        let Some(ran) = k.last_run.filter(|_| complete) else {
            continue;
        };
        let key = (k.kernel.clone(), ran);
        let seen = OUTPUTS_SEEN.lock().ok().and_then(|s| s.get(&key).copied());
        k.outputs = match seen {
            Some(n) => Some(n),
            None => {
                let args = ["kernels", "files", &k.kernel, "--csv", "--page-size", "1"];
                let text = kaggle(member, &args, timeout).await.ok();
                let n = text.and_then(|t| parse_files(&t).ok());
                if let (Some(n), Ok(mut s)) = (n, OUTPUTS_SEEN.lock()) {
                    s.insert(key, n);
                }
                n
            }
        };
    }
}

/// Where the GPU runs seen are remembered between runs of rigwatch.
fn runs_seen_path() -> Option<std::path::PathBuf> {
    crate::config::paths::state_dir().map(|d| d.join("kaggle-runs.json"))
}

/// Whether a read may write down the GPU runs it saw: the dashboard's and `watch`'s may; a
/// one-shot `status` or `check` reads what they wrote and writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remember {
    Runs,
    Nothing,
}

/// `read` with its GPU runs counted (and remembered, where `remember` says) and, where the
/// account reports no quota, rigwatch's own count of the runs it saw as a lower bound in its
/// place, said to be one.
fn with_runs_seen(
    mut read: KaggleRead,
    now: chrono::DateTime<Utc>,
    remember: Remember,
) -> KaggleRead {
    let Some(path) = runs_seen_path() else {
        return read;
    };
    let mut seen: SeenRuns = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    seen.record(&read.kernels, now);
    if remember == Remember::Runs
        && let Ok(bytes) = serde_json::to_vec(&seen)
    {
        // Losing it costs only the lower bound's accuracy: the next read says what it can.
        let _ = crate::config::paths::save_private(&path, &bytes);
    }
    let why = match &read.quota {
        Ok(Some(_)) => return read,
        Ok(None) => "not reported by the account".to_string(),
        Err(e) => format!("not read ({e})"),
    };
    read.quota_note = Some(format!(
        "{why}: rigwatch's own count of the GPU runs it saw, a lower bound of the hours used"
    ));
    read.quota = Ok(Some(seen.lower_bound(now)));
    read
}

/// One read of `member`, within `timeout` in all.
pub async fn read_kaggle(
    member: &KaggleConfig,
    timeout: Duration,
    remember: Remember,
) -> ClusterReading {
    let read = async {
        let list = async {
            let args = [
                "kernels",
                "list",
                "--mine",
                "--csv",
                "--page-size",
                "100",
                "--sort-by",
                "dateRun",
            ];
            match kaggle(member, &args, timeout).await {
                Ok(text) => parse_list(&text).unwrap_or_default(),
                // The times only feed the clocks: without them a row still says its state.
                Err(_) => Vec::new(),
            }
        };
        let quota = async {
            match kaggle(member, &["quota", "--csv"], timeout).await {
                Ok(text) => match parse_quota(&text) {
                    Ok(q) => Ok(q),
                    Err(e) => Err(unreadable(member, e, timeout).await),
                },
                Err(e) => Err(e.to_string()),
            }
        };
        let reads: Vec<_> = member
            .kernels
            .iter()
            .map(|kernel| Box::pin(kernel_read(member, kernel, timeout)))
            .collect();
        let statuses = futures::stream::iter(reads)
            .buffered(AT_ONCE)
            .collect::<Vec<_>>();
        let (list, quota, statuses) = tokio::join!(list, quota, statuses);
        let mut read = KaggleRead {
            kernels: statuses
                .into_iter()
                .map(|(kernel, status, accelerator)| KernelRead {
                    last_run: list
                        .iter()
                        .find(|(r, _)| *r == kernel)
                        .and_then(|(_, t)| *t),
                    kernel,
                    status,
                    accelerator,
                    outputs: None,
                })
                .collect(),
            quota,
            quota_note: None,
        };
        outputs(member, &mut read, timeout).await;
        read
    };
    let read = match tokio::time::timeout(timeout, read).await {
        Ok(read) => read,
        Err(_) => KaggleRead {
            kernels: vec![KernelRead {
                kernel: member.kernels.first().cloned().unwrap_or_default(),
                status: Err(format!(
                    "{}: kaggle: no answer within {:.1}s",
                    member.name,
                    timeout.as_secs_f64()
                )),
                last_run: None,
                accelerator: None,
                outputs: None,
            }],
            quota: Ok(None),
            quota_note: None,
        },
    };
    let now = Utc::now();
    let read = with_runs_seen(read, now, remember);
    crate::cluster::kaggle::reading(member, read, now)
}
