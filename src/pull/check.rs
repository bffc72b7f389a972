//! Whether a pulled file loads: the built-in format checks (`verify`, text included) and the
//! user's own `verify` commands. A file nothing can check does not pass: exists is not verified.

use std::path::Path;
use std::time::Duration;

use super::verify::{Verdict, verify_file_named, verify_written_named};
use crate::process::Ended;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub passed: bool,
    /// No check applies to it (no built-in one for its kind, no command of the user's): it
    /// neither loads nor fails to; its record says UNPROVEN.
    pub unchecked: bool,
    /// What proved it, or why it failed.
    pub how: String,
}

const USER_TIMEOUT: Duration = Duration::from_secs(600);

/// The built-in check and every user command for this file (see `VerifyCommands::for_file`).
pub async fn verify(path: &Path, commands: &crate::config::fleet::VerifyCommands) -> Verification {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let commands = commands.for_file(&name);
    verify_with(path, &commands).await
}

/// The built-in check alone of the file at `path` as if it were `named`, for a file no user
/// command applies to: what `verify` says of it there, run where the caller is (a promote's
/// blocking task: a hand-over per file was a many-file pull's largest cost after the disk's).
pub fn verify_builtin_named(path: &Path, named: &Path) -> Verification {
    builtin_alone(builtin(path, named), named)
}

/// What the built-in check alone came to for a file no user command applies to.
fn builtin_alone(proof: Result<Option<String>, String>, named: &Path) -> Verification {
    match proof {
        Err(reason) => Verification {
            passed: false,
            unchecked: false,
            how: reason,
        },
        Ok(proof) => judged(named, proof, None),
    }
}

async fn verify_with(path: &Path, commands: &[&str]) -> Verification {
    let owned = path.to_path_buf();
    let builtin = tokio::task::spawn_blocking(move || builtin(&owned, &owned))
        .await
        .unwrap_or_else(|e| Err(format!("check crashed: {e}")));
    let builtin = match builtin {
        Err(reason) => {
            return Verification {
                passed: false,
                unchecked: false,
                how: reason,
            };
        }
        Ok(proof) => proof,
    };
    for command in commands {
        if let Err(reason) = run_user(command, path).await {
            return Verification {
                passed: false,
                unchecked: false,
                how: reason,
            };
        }
    }
    let ran = match commands.len() {
        0 => None,
        1 => Some("verify command exit 0".to_string()),
        n => Some(format!("{n} verify commands exit 0")),
    };
    judged(path, builtin, ran)
}

/// As `verify_builtin_named`, for a copy just written from `bytes` into a file that has no name
/// yet (`place`): checked on those bytes where its format's check reads it through, else read
/// back through the open file, never looked up by a path (`verify_written_named`).
pub fn verify_builtin_written(
    file: &mut std::fs::File,
    bytes: &[u8],
    named: &Path,
) -> Verification {
    builtin_alone(
        proof(verify_written_named(file, bytes, named), named),
        named,
    )
}

/// What a file's checks came to: the built-in check's proof, if one applied, and what the
/// user's commands ran, if any did (each passed). Neither is no proof: exists is not verified.
fn judged(path: &Path, builtin: Option<String>, ran: Option<String>) -> Verification {
    match (builtin, ran) {
        (Some(proof), None) => Verification {
            passed: true,
            unchecked: false,
            how: proof,
        },
        (Some(proof), Some(ran)) => Verification {
            passed: true,
            unchecked: false,
            how: format!("{proof}; {ran}"),
        },
        (None, Some(ran)) => Verification {
            passed: true,
            unchecked: false,
            how: ran,
        },
        (None, None) => Verification {
            passed: false,
            unchecked: true,
            how: format!(
                "unproven: no built-in check for {:?} files; add a command for them under \
                 [host.pull.verify], e.g. \"*.{}\" = \"mycheck {{file}}\"",
                path.extension().unwrap_or_default(),
                path.extension()
                    .map_or("ext".into(), |e| e.to_string_lossy().into_owned())
            ),
        },
    }
}

/// Ok(Some(proof)) when a built-in check passed, Ok(None) when none applies, Err when it failed.
fn builtin(path: &Path, named: &Path) -> Result<Option<String>, String> {
    proof(verify_file_named(path, named), path)
}

/// A verdict as `builtin` gives it, the file that could not be read named as `path`.
fn proof(verdict: std::io::Result<Verdict>, path: &Path) -> Result<Option<String>, String> {
    match verdict {
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        Ok(Verdict::Loads { detail, .. }) => Ok(Some(detail)),
        Ok(Verdict::Fails { format, reason }) => Err(format!("{}: {reason}", format.name())),
        Ok(Verdict::Unchecked) => Ok(None),
    }
}

/// The user's command with every `{file}` made a reference to the file, never its text: the
/// file is `$1` of the `sh -c` (and `$RIGWATCH_FILE`), and the reference is quoted to fit where
/// `{file}` stands — bare, inside "…", or inside '…' — so a name the box chose (`$(rm -rf ~)`,
/// a quote, a space) is only ever data.
pub fn with_file_argument(command: &str) -> String {
    let mut out = String::with_capacity(command.len() + 8);
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut rest = command;
    while let Some(c) = rest.chars().next() {
        if !escaped && rest.starts_with("{file}") {
            out.push_str(match (single, double) {
                (true, _) => "'\"$1\"'",
                (false, true) => "$1",
                (false, false) => "\"$1\"",
            });
            rest = &rest["{file}".len()..];
            continue;
        }
        match c {
            '\\' if !single && !escaped => escaped = true,
            '\'' if !double && !escaped => {
                single = !single;
                escaped = false;
            }
            '"' if !single && !escaped => {
                double = !double;
                escaped = false;
            }
            _ => escaped = false,
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

async fn run_user(command: &str, path: &Path) -> Result<(), String> {
    let line = with_file_argument(command);
    let mut sh = tokio::process::Command::new("sh");
    sh.arg("-c")
        .arg(&line)
        .arg("sh")
        .arg(path)
        .env("RIGWATCH_FILE", path);
    // Its own process group: at the timeout the command's children end with it.
    let done = crate::process::run(sh, None, USER_TIMEOUT, USER_OUTPUT_CAP)
        .await
        .map_err(|e| format!("verify command could not start ({e}): {line}"))?;
    match done.ended {
        Ended::TimedOut(_) => Err(format!(
            "verify command timed out after 10 min; its process group was ended: {line}"
        )),
        Ended::Exited(status) if status.success() => Ok(()),
        Ended::Exited(status) => {
            let stderr = String::from_utf8_lossy(&done.stderr);
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            Err(format!(
                "verify command failed ({status}): {}",
                crate::sanitize::line(last.unwrap_or("no output"), 200)
            ))
        }
    }
}

/// Enough of a verify command's output for its last words; the rest is drained.
const USER_OUTPUT_CAP: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn text_passes_binary_junk_and_unknown_kinds_do_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let csv = dir.path().join("m.csv");
        std::fs::write(&csv, "step,loss\n1,0.5\n").expect("write");
        let v = verify_with(&csv, &[]).await;
        assert!(v.passed, "{v:?}");
        assert_eq!(v.how, "csv: 2 rows of 2 fields, 16 B");
        let bad = dir.path().join("m.log");
        std::fs::write(&bad, b"ok\n\xff\xfe").expect("write");
        let v = verify_with(&bad, &[]).await;
        assert!(!v.passed);
        assert!(v.how.contains("byte 3"), "{v:?}");
        let bin = dir.path().join("w.bin");
        std::fs::write(&bin, b"\x00\x01").expect("write");
        let v = verify_with(&bin, &[]).await;
        assert!(!v.passed);
        assert!(v.unchecked && v.how.contains("no built-in check"), "{v:?}");
    }

    #[tokio::test]
    async fn a_file_name_never_becomes_shell_text_wherever_file_stands() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A name a box could choose: command substitution, quotes and a space. Were any of it
        // run as shell text, `$(true)` would vanish and the file would not be found.
        let file = dir.path().join("x$(true)y\"'b c.bin");
        std::fs::write(&file, b"\x00\x01").expect("write");
        for command in [
            "test -s {file}",
            "test -s \"{file}\"",
            "test -s '{file}'",
            "sh -c 'test -s \"$1\"' - {file}",
        ] {
            let v = verify_with(&file, &[command]).await;
            assert!(v.passed, "{command} did not get the file's own name: {v:?}");
        }
        assert_eq!(
            with_file_argument("a \\{file} '{file}'"),
            "a \\{file} ''\"$1\"''"
        );
    }

    #[tokio::test]
    async fn the_user_command_decides_with_its_exit_status() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("it's.bin");
        std::fs::write(&bin, b"\x00\x01").expect("write");
        let v = verify_with(&bin, &["test -s {file}"]).await;
        assert!(v.passed, "{v:?}");
        let v = verify_with(&bin, &["echo nope >&2; test ! -e {file}"]).await;
        assert!(!v.passed);
        assert!(v.how.contains("nope"), "{v:?}");
    }

    /// A command runs only on the files its pattern names: `torch.load` on checkpoints must not
    /// fail every JSON and log beside them; a file several patterns name must pass them all.
    #[tokio::test]
    async fn each_pattern_runs_on_its_files_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ckpt = dir.path().join("pytorch_model.bin");
        std::fs::write(&ckpt, b"\x00\x01").expect("write");
        let json = dir.path().join("metrics.json");
        std::fs::write(&json, b"{\"loss\": 0.5}").expect("write");
        let commands = crate::config::fleet::VerifyCommands {
            by_pattern: vec![
                ("*.bin".into(), "test -s {file}".into()),
                ("*.json".into(), "false {file}".into()),
                ("pytorch_*".into(), "test -s {file}".into()),
            ],
            every_file: None,
        };
        let v = verify(&ckpt, &commands).await;
        assert!(v.passed && v.how == "2 verify commands exit 0", "{v:?}");
        let v = verify(&json, &commands).await;
        assert!(!v.passed, "its own pattern's command failed: {v:?}");
        let only_bins = crate::config::fleet::VerifyCommands {
            by_pattern: vec![("*.bin".into(), "false {file}".into())],
            every_file: None,
        };
        let v = verify(&json, &only_bins).await;
        assert!(
            v.passed && v.how.starts_with("json"),
            "no command for it ran: {v:?}"
        );
    }
}
