//! The real `kaggle` CLI, run for a `[[kaggle]]` member: an argument list (never a shell), in
//! its own process group with a timeout that ends the whole group and a cap on what it prints
//! (the crate's `process`). The CLI, not a client of our own, speaks to Kaggle: it already
//! finds the user's credentials (`KAGGLE_API_TOKEN`, `~/.kaggle/access_token`, `kaggle.json`,
//! `KAGGLE_USERNAME`/`KAGGLE_KEY`, an OAuth login), which rigwatch never reads or stores.
//!
//! What the CLI says is read from both streams: 2.x prints most errors on stderr but its
//! "Authentication required" help on stdout (`cli.py:89`), 1.x printed errors on stdout. A
//! credential's value never reaches a message: the ones in the environment are masked by value,
//! others by the shared masker.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

use crate::config::KaggleConfig;

/// The most a CLI call may print: a page of 100 kernels, an output listing, a status.
pub const MAX_KAGGLE_BYTES: usize = 4 * 1024 * 1024;

/// What a person does when the CLI has no credentials (the CLI's own help, in one line).
pub const SIGN_IN: &str = "the kaggle CLI found no credentials: run `kaggle auth login`, or set \
     KAGGLE_API_TOKEN, or put kaggle.json in ~/.kaggle (rigwatch never reads them)";

/// Why a kaggle command gave no answer; each names the member and the command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KaggleError {
    #[error("{member}: {command}: could not start the kaggle CLI: {why}")]
    Start {
        member: String,
        command: String,
        why: String,
    },
    #[error(
        "{member}: {command}: no answer within {:.1}s; the CLI was ended",
        after.as_secs_f64()
    )]
    TimedOut {
        member: String,
        command: String,
        after: Duration,
    },
    #[error("{member}: {command}: {SIGN_IN}")]
    NotSignedIn { member: String, command: String },
    #[error("{member}: {command}: {exit}: {words}")]
    Failed {
        member: String,
        command: String,
        exit: String,
        words: String,
    },
    #[error("{member}: {command}: printed over {cap} bytes")]
    TooBig {
        member: String,
        command: String,
        cap: usize,
    },
}

/// The environment's credential values, masked by value wherever they would show.
fn mask_credentials(text: &str) -> String {
    let mut out = crate::sanitize::mask_secrets(text);
    for var in ["KAGGLE_KEY", "KAGGLE_API_TOKEN"] {
        if let Ok(value) = std::env::var(var)
            && value.len() >= 4
        {
            out = out.replace(&value, crate::sanitize::MASK);
        }
    }
    out
}

/// The CLI's own words, one line: its warnings and `--debug` hint left out, credentials masked.
pub fn words(text: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| !l.starts_with("Warning:"))
        .filter(|l| !l.starts_with("If this is unexpected") && !l.contains("please report it at"))
        .collect();
    crate::sanitize::joined(&mask_credentials(&kept.join("\n")), 400)
}

fn not_signed_in(stdout: &str, stderr: &str) -> bool {
    [stdout, stderr].iter().any(|t| {
        t.contains("Authentication required to call the Kaggle API")
            || t.contains("Could not find kaggle.json")
    })
}

/// Runs the member's CLI with `args`; its stdout when it exits 0.
pub async fn kaggle(
    member: &KaggleConfig,
    args: &[&str],
    timeout: Duration,
) -> Result<String, KaggleError> {
    let command = crate::sanitize::line(&format!("kaggle {}", args.join(" ")), 200);
    let mut cmd = Command::new(&member.program);
    cmd.args(args);
    let name = member.name.clone();
    let done = crate::process::run(cmd, None, timeout, MAX_KAGGLE_BYTES)
        .await
        .map_err(|e| KaggleError::Start {
            member: name.clone(),
            command: command.clone(),
            why: e.to_string(),
        })?;
    if let crate::process::Ended::TimedOut(after) = done.ended {
        return Err(KaggleError::TimedOut {
            member: name,
            command,
            after,
        });
    }
    if done.over_cap {
        return Err(KaggleError::TooBig {
            member: name,
            command,
            cap: MAX_KAGGLE_BYTES,
        });
    }
    let stdout = String::from_utf8_lossy(&done.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&done.stderr);
    if not_signed_in(&stdout, &stderr) {
        return Err(KaggleError::NotSignedIn {
            member: name,
            command,
        });
    }
    match done.code() {
        Some(0) => Ok(stdout),
        code => Err(KaggleError::Failed {
            member: name,
            command,
            exit: code.map_or_else(|| "ended by a signal".into(), |c| format!("exit {c}")),
            words: if stderr.trim().is_empty() {
                words(&stdout)
            } else {
                words(&stderr)
            },
        }),
    }
}

/// `kaggle --version`, as printed ("Kaggle CLI 2.2.5"), for an error about output rigwatch
/// cannot read; what went wrong when it cannot be had.
pub async fn version(member: &KaggleConfig, timeout: Duration) -> String {
    match kaggle(member, &["--version"], timeout).await {
        Ok(text) => crate::sanitize::line(text.trim(), 80),
        Err(e) => format!("version not read: {e}"),
    }
}

/// `kaggle kernels output KERNEL -p DIR`: every output file of the kernel's latest version
/// (and its log, `<slug>.log`) downloaded into `dir`.
pub async fn output(
    member: &KaggleConfig,
    kernel: &str,
    dir: &Path,
    timeout: Duration,
) -> Result<String, KaggleError> {
    let dir = dir.to_string_lossy();
    kaggle(member, &["kernels", "output", kernel, "-p", &dir], timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clis_words_lose_its_warnings_its_hint_and_any_key() {
        let stderr = "Warning: Your Kaggle API key is readable by other users on this system!\n\
                      KeyError: 'PAUSED'\n\n\
                      If this is unexpected, you can re-run with `kaggle --debug [command]` to see the full\n\
                      traceback. If you think this is a bug, please report it at https://github.com/Kaggle/kaggle-cli/issues\n\
                      token=sk-abcdefghijklmnop1234\n";
        assert_eq!(words(stderr), "KeyError: 'PAUSED'; token=****");
    }

    #[test]
    fn either_forms_help_means_not_signed_in() {
        assert!(not_signed_in(
            "Authentication required to call the Kaggle API.\n\nFirst, you will need…",
            ""
        ));
        assert!(not_signed_in(
            "",
            "OSError: Could not find kaggle.json. Make sure it's located in /root/.kaggle."
        ));
        assert!(!not_signed_in("404 Client Error: Not Found", ""));
    }
}
