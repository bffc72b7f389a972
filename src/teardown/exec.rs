//! Running the destroy command: once, locally, with a timeout, its output kept for the audit.

use std::time::Duration;

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
