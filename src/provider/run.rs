//! Runs a provider's read-only list call on this machine and judges what it printed.
//!
//! Only `Provider::list_argv` is ever run: nothing here can stop, start or destroy a box.

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

use super::{MAX_MESSAGE, Provider, ProviderError, ProviderState, clean};
use crate::process::Ended;

/// Most bytes kept from stdout (and from stderr): thousands of instances fit well inside it, and a
/// CLI gone wrong cannot fill rigwatch's memory.
const OUTPUT_CAP: usize = 4 * 1024 * 1024;

/// Runs `program` (a resolved path, or `Provider::default_program` to search PATH) with the
/// provider's list argv, stdin closed, and parses its JSON. Its process group is ended if it
/// outlives `timeout`.
pub async fn query(
    provider: Provider,
    program: &Path,
    timeout: Duration,
) -> Result<Vec<ProviderState>, ProviderError> {
    let argv = provider.list_argv();
    let command = format!("{} {}", program.display(), argv.join(" "));
    let failed = |command: &str, exit, text: &str| ProviderError::Failed {
        command: command.to_string(),
        exit,
        stderr: cli_said(text),
    };
    let mut cmd = Command::new(program);
    cmd.args(&argv);
    let done = match crate::process::run(cmd, None, timeout, OUTPUT_CAP).await {
        Ok(done) => done,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProviderError::NotInstalled {
                program: program.display().to_string(),
            });
        }
        Err(e) => return Err(failed(&command, None, &e.to_string())),
    };
    let status = match done.ended {
        Ended::Exited(status) => status,
        Ended::TimedOut(after) => return Err(ProviderError::Timeout { command, after }),
    };
    if done.over_cap {
        let text = format!("printed more than {} MiB", OUTPUT_CAP / (1024 * 1024));
        return Err(failed(&command, status.code(), &text));
    }
    let out = String::from_utf8_lossy(&done.stdout);
    let err = String::from_utf8_lossy(&done.stderr);
    let looks_like_json = matches!(out.trim_start().chars().next(), Some('[' | '{'));
    if status.success() && looks_like_json {
        return provider.parse_list(&out, &command);
    }
    // vast.ai exits 0 after an HTTP error, so the text decides, not only the exit code. Markers
    // are looked for only here, never in a good listing (a label may say anything).
    let said = if err.trim().is_empty() { &out } else { &err };
    let lower = format!("{err}\n{out}").to_lowercase();
    if provider
        .not_configured_markers()
        .iter()
        .any(|m| lower.contains(m))
    {
        return Err(ProviderError::NotConfigured {
            command,
            message: cli_said(said),
        });
    }
    let said = if said.trim().is_empty() {
        "(no output)"
    } else {
        said
    };
    Err(failed(&command, status.code(), said))
}

/// What a CLI said, cleaned for the terminal and with any key it echoed masked.
fn cli_said(text: &str) -> String {
    crate::sanitize::mask_secrets(&clean(text, MAX_MESSAGE))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Instant;

    use super::super::InstanceState;
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn shim(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/providers")
            .join(name)
    }

    /// An executable `sh` script in `dir` (the test's own tempdir).
    fn script(dir: &Path, name: &str, body: &str) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n"))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }

    const SECOND: Duration = Duration::from_secs(2);

    #[tokio::test]
    async fn shims_answer_the_read_only_list_call_and_record_it() -> TestResult {
        let dir = tempfile::tempdir()?;
        let log = dir.path().join("argv.log");
        for provider in [Provider::Vastai, Provider::Runpod] {
            let name = provider.default_program();
            // query passes no environment of its own, so a wrapper sets the shim's log.
            let body = format!(
                "RIGWATCH_SHIM_LOG='{}' exec '{}' \"$@\"",
                log.display(),
                shim(name).display()
            );
            let wrapper = script(dir.path(), name, &body)?;
            let states = query(provider, &wrapper, SECOND).await?;
            assert_eq!(states.len(), 2, "{provider:?}");
            assert_eq!(states[0].state, InstanceState::Running);
            assert_eq!(states[1].state, InstanceState::Stopped);
        }
        let recorded = std::fs::read_to_string(&log)?;
        let expected = format!(
            "vastai {}\nrunpodctl {}\n",
            Provider::Vastai.list_argv().join(" "),
            Provider::Runpod.list_argv().join(" ")
        );
        assert_eq!(recorded, expected);
        assert_eq!(
            recorded,
            "vastai show instances --raw\nrunpodctl pod list --all -o json\n"
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_missing_program_is_not_installed() -> TestResult {
        let dir = tempfile::tempdir()?;
        let missing = dir.path().join("vastai");
        match query(Provider::Vastai, &missing, SECOND).await {
            Err(ProviderError::NotInstalled { program }) => {
                assert_eq!(program, missing.display().to_string());
            }
            other => panic!("{other:?}"),
        }
        Ok(())
    }

    #[tokio::test]
    async fn a_hung_cli_is_killed_at_the_timeout() -> TestResult {
        let dir = tempfile::tempdir()?;
        let sleeper = script(dir.path(), "runpodctl", "exec sleep 30")?;
        let started = Instant::now();
        let answer = query(Provider::Runpod, &sleeper, Duration::from_millis(300)).await;
        assert!(
            matches!(answer, Err(ProviderError::Timeout { .. })),
            "{answer:?}"
        );
        assert!(started.elapsed() < SECOND, "{:?}", started.elapsed());
        Ok(())
    }

    #[tokio::test]
    async fn missing_api_keys_read_as_not_configured() -> TestResult {
        let dir = tempfile::tempdir()?;
        let cases = [
            // runpodctl v2: JSON error on stderr, exit 1.
            (
                Provider::Runpod,
                r#"echo '{"error":"api key not configured. get your key"}' >&2; exit 1"#,
            ),
            // vastai --raw: JSON error on stderr, exit 0.
            (
                Provider::Vastai,
                r#"echo '{"error": true, "status_code": 401, "msg": "x"}' >&2"#,
            ),
            // older vastai: the error on stdout, exit 0.
            (
                Provider::Vastai,
                "echo 'Failed with error 401: Please log in or sign up'",
            ),
        ];
        for (n, (provider, body)) in cases.into_iter().enumerate() {
            let cli = script(dir.path(), &format!("cli{n}"), body)?;
            let answer = query(provider, &cli, SECOND).await;
            assert!(
                matches!(answer, Err(ProviderError::NotConfigured { .. })),
                "{answer:?}"
            );
        }
        Ok(())
    }

    #[tokio::test]
    async fn failures_keep_exit_and_clean_stderr() -> TestResult {
        let dir = tempfile::tempdir()?;
        let cli = script(
            dir.path(),
            "cli",
            r"printf 'boom\033[2J\nnext\n' >&2; exit 3",
        )?;
        match query(Provider::Runpod, &cli, SECOND).await {
            Err(ProviderError::Failed { exit, stderr, .. }) => {
                assert_eq!((exit, stderr.as_str()), (Some(3), "boom next"));
            }
            other => panic!("{other:?}"),
        }
        // Text instead of JSON with exit 0 (vast.ai on a server error) is a failure too, and a
        // label that happens to contain a marker does not make a good listing "not configured".
        let text = script(dir.path(), "text", "echo 'Failed with error 500: busy'")?;
        let answer = query(Provider::Vastai, &text, SECOND).await;
        assert!(
            matches!(answer, Err(ProviderError::Failed { exit: Some(0), .. })),
            "{answer:?}"
        );
        let labelled = script(
            dir.path(),
            "ok",
            r#"echo '[{"id": 1, "label": "no api key"}]'"#,
        )?;
        assert_eq!(query(Provider::Vastai, &labelled, SECOND).await?.len(), 1);
        let flood = script(
            dir.path(),
            "flood",
            "head -c 4200000 /dev/zero | tr '\\0' ' '",
        )?;
        match query(Provider::Vastai, &flood, SECOND).await {
            Err(err @ ProviderError::Failed { .. }) => {
                assert!(
                    err.to_string()
                        .ends_with("failed (exit 0): printed more than 4 MiB")
                );
            }
            other => panic!("{other:?}"),
        }
        Ok(())
    }

    #[tokio::test]
    async fn bad_json_names_the_command_and_position() -> TestResult {
        let dir = tempfile::tempdir()?;
        let cli = script(
            dir.path(),
            "vastai",
            r#"printf '[\n {"id": 1},\n {"id": }\n]\n'"#,
        )?;
        match query(Provider::Vastai, &cli, SECOND).await {
            Err(ProviderError::Parse {
                command,
                line,
                column,
                ..
            }) => {
                assert!(
                    command.ends_with("vastai show instances --raw"),
                    "{command}"
                );
                assert_eq!((line, column), (3, 9));
            }
            other => panic!("{other:?}"),
        }
        Ok(())
    }
}
