//! A `[[kaggle]]` member read through the `kaggle` CLI: one `kernels status` per kernel (at
//! most [`AT_ONCE`] at a time: a public, rate-limited API), one `kernels list --mine` for when
//! each latest version ran, one `quota` for the account's GPU hours and, where the member says
//! its notebooks are meant for a GPU, each kernel's metadata (`kernels pull -m`, into a private
//! folder that is removed) for the accelerator its commits inherit. Live, each member is a
//! task that sends a reading per period.

use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;

use crate::cluster::ClusterReading;
use crate::cluster::kaggle::{KaggleRead, KernelRead};
use crate::config::KaggleConfig;
use crate::probe::kaggle::{
    Accelerator, KernelStatus, parse_list, parse_metadata, parse_quota, parse_status,
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

/// One kernel's status and, where the member says its notebooks are meant for a GPU, the
/// accelerator its notebook is set to.
async fn kernel_read(
    member: &KaggleConfig,
    kernel: &str,
    timeout: Duration,
) -> (String, Result<KernelStatus, String>, Option<Accelerator>) {
    let accelerator = async {
        match member.gpu {
            Some(true) => accelerator(member, kernel, timeout).await,
            _ => None,
        }
    };
    let (status, accelerator) = tokio::join!(status(member, kernel, timeout), accelerator);
    (kernel.to_string(), status, accelerator)
}

/// One read of `member`, within `timeout` in all.
pub async fn read_kaggle(member: &KaggleConfig, timeout: Duration) -> ClusterReading {
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
        KaggleRead {
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
                })
                .collect(),
            quota,
        }
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
            }],
            quota: Ok(None),
        },
    };
    crate::cluster::kaggle::reading(member, read, Utc::now())
}
