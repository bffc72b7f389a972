//! Running the destroy command: once, locally, in its own process group, with a timeout; its
//! output kept, secrets masked, for the record.

use std::time::Duration;

use tokio::process::Command;

use crate::process::{Ended, Input};

/// The words recorded when the platform has no API: the person did it, not rigwatch.
pub const BY_HAND: &str =
    "the user confirmed destroying it themselves at the provider; rigwatch ran no command";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub exit_status: Option<i32>,
    /// stdout then stderr, capped, sanitized for the terminal, secrets masked.
    pub output: String,
    /// How it failed; None when it exited 0.
    pub failed: Option<String>,
}

const OUTPUT_CAP: usize = 64 * 1024;

/// Runs `command` once; `holding`, the target's lock, is its stdin, so the target stays held
/// for as long as the command (or a child that keeps its stdin) runs, even if rigwatch is
/// killed meanwhile.
pub async fn run_destroy(command: &str, timeout: Duration, holding: Option<std::fs::File>) -> Ran {
    tracing::warn!("teardown runs: {}", crate::sanitize::words(command, 500));
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(command);
    let input = holding.map_or(Input::Closed, Input::Holding);
    let done = match crate::process::run_with(sh, input, timeout, OUTPUT_CAP).await {
        Ok(done) => done,
        Err(e) => {
            return Ran {
                exit_status: None,
                output: String::new(),
                failed: Some(format!("the destroy command could not start: {e}")),
            };
        }
    };
    let mut text = String::from_utf8_lossy(&done.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&done.stderr));
    let output: Vec<String> = text
        .lines()
        .map(|l| crate::sanitize::words(l, 500))
        .collect();
    let failed = match &done.ended {
        Ended::TimedOut(after) => Some(format!(
            "timed out after {}s; its process group was ended; it may or may not have taken \
             effect: check the provider",
            after.as_secs()
        )),
        Ended::Exited(status) if status.success() => None,
        Ended::Exited(status) => Some(match status.code() {
            Some(code) => format!("the destroy command exited {code}"),
            None => "the destroy command was ended by a signal".to_string(),
        }),
    };
    Ran {
        exit_status: done.code(),
        output: output.join("\n"),
        failed,
    }
}

/// Runs the destroy command once on the host through its session (a cluster job's `scancel` on
/// the login node), with the same timeout, output cap and masking as a local one.
pub async fn run_on_host(
    session: &crate::transport::Session,
    command: &str,
    timeout: Duration,
) -> Ran {
    tracing::warn!(
        "teardown runs on the host: {}",
        crate::sanitize::words(command, 500)
    );
    let limits = crate::transport::ExecLimits {
        timeout,
        max_output: OUTPUT_CAP,
    };
    // Bounded on the host too: a hung command never outlives its timeout there.
    match session
        .exec(&crate::cluster::bounded_to_finish(command, timeout), limits)
        .await
    {
        Ok(out) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            let output: Vec<String> = text
                .lines()
                .map(|l| crate::sanitize::words(l, 500))
                .collect();
            Ran {
                exit_status: out.exit_status.and_then(|c| i32::try_from(c).ok()),
                output: output.join("\n"),
                failed: match out.exit_status {
                    Some(0) => None,
                    Some(code) => Some(format!("the command exited {code} on the host")),
                    None => Some("the command ended without an exit status on the host".into()),
                },
            }
        }
        Err(e) => Ran {
            exit_status: None,
            output: String::new(),
            failed: Some(format!(
                "the command on the host did not finish ({}); it may or may not have taken \
                 effect: check the queue",
                crate::sanitize::line(&e.to_string(), 300)
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn output_and_exit_are_kept_and_a_hang_times_out() {
        let ran = run_destroy(
            "echo destroying --api-key sk-abcdef0123456789; echo oops >&2; exit 3",
            Duration::from_secs(5),
            None,
        )
        .await;
        assert_eq!(ran.exit_status, Some(3));
        assert_eq!(ran.output, "destroying --api-key ****\noops");
        assert_eq!(ran.failed.as_deref(), Some("the destroy command exited 3"));
        let hung = run_destroy("sleep 5", Duration::from_millis(200), None).await;
        assert_eq!(hung.exit_status, None);
        let why = hung.failed.unwrap_or_default();
        assert!(why.contains("its process group was ended"), "{why}");
    }
}
