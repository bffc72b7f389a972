//! Running the destroy command: once, locally, with a timeout, its output kept for the audit.

use std::time::Duration;

use chrono::Utc;

use super::plan::Method;
use crate::config::HostConfig;
use crate::ledger::TeardownRecord;

const DESTROY_TIMEOUT: Duration = Duration::from_secs(120);

/// The words recorded when the platform has no API: the person did it, not rigwatch.
pub const BY_HAND: &str =
    "the user confirmed destroying it themselves at the provider; rigwatch ran no command";

/// What the guard's Fire means: run the plan's command once (or, on a platform whose profile
/// says destruction is by hand, record the person's word), and the audit entry for it; the bool
/// says whether the command succeeded. A blocked plan is never carried out and never recorded:
/// Err says why.
pub async fn carry_out(
    host: &HostConfig,
    method: &Method,
    pull_id: i64,
) -> Result<(TeardownRecord, bool), String> {
    let (command, ran) = match method {
        Method::Blocked { why } => return Err(why.clone()),
        Method::Command { command } => (
            Some(command.clone()),
            Some(run_destroy(command, DESTROY_TIMEOUT).await),
        ),
        Method::Manual { .. } => (None, None),
    };
    let ok = ran.as_ref().is_none_or(Ran::succeeded);
    let record = TeardownRecord {
        at: Utc::now(),
        host: host.name.clone(),
        instance_id: host.instance_id.clone(),
        command,
        exit_status: ran.as_ref().and_then(|r| r.exit_status),
        output: ran.map_or_else(|| BY_HAND.to_string(), |r| r.output),
        pull_id,
    };
    Ok((record, ok))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub exit_status: Option<i32>,
    /// stdout then stderr, capped, sanitized for the terminal.
    pub output: String,
}

impl Ran {
    pub fn succeeded(&self) -> bool {
        self.exit_status == Some(0)
    }
}

const OUTPUT_CAP: usize = 64 * 1024;

pub async fn run_destroy(command: &str, timeout: Duration) -> Ran {
    tracing::warn!("teardown runs: {}", crate::sanitize::line(command, 500));
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(timeout, child).await {
        Err(_) => Ran {
            exit_status: None,
            output: format!(
                "timed out after {}s; it may or may not have taken effect: check the provider",
                timeout.as_secs()
            ),
        },
        Ok(Err(e)) => Ran {
            exit_status: None,
            output: format!("could not start: {e}"),
        },
        Ok(Ok(out)) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            let clean: Vec<String> = text
                .lines()
                .map(|l| crate::sanitize::line(l, 500))
                .collect();
            let mut output = clean.join("\n");
            output.truncate(
                (0..=OUTPUT_CAP.min(output.len()))
                    .rev()
                    .find(|i| output.is_char_boundary(*i))
                    .unwrap_or(0),
            );
            Ran {
                exit_status: out.status.code(),
                output,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn output_and_exit_are_kept_and_a_hang_times_out() {
        let ran = run_destroy(
            "echo destroying; echo oops >&2; exit 3",
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(ran.exit_status, Some(3));
        assert_eq!(ran.output, "destroying\noops");
        let hung = run_destroy("sleep 5", Duration::from_millis(200)).await;
        assert_eq!(hung.exit_status, None);
        assert!(hung.output.contains("timed out"), "{hung:?}");
    }
}
