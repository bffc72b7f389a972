//! Where the pull engine runs its remote commands: an SSH session to a box, or a Job's pod
//! through `kubectl exec POD -c CONTAINER -- sh -c 'CMD'`. The listing, the hashing, the copies
//! over exec and the teardown guard's currentness look are the same code for both.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::process::Command;

use super::bytes::BytesEnd;
use super::error::TransportError;
use super::exec::{ExecLimits, ExecOutput};
use super::kubectl::{KubectlError, arguments, checked_name, kubectl};
use super::session::Session;
use super::shell::{Attempt, Clock, Helper};
use crate::config::KubeConfig;

/// Runs a shell command where the results are.
pub trait BoxExec: Sync {
    /// One command, its whole output within `limits`.
    fn exec(
        &self,
        command: &str,
        limits: ExecLimits,
    ) -> impl Future<Output = Result<ExecOutput, TransportError>> + Send;
    /// One command whose stdout is handed to `sink` as it arrives (false stops it); it ends if
    /// nothing arrives for `idle`.
    fn exec_bytes(
        &self,
        command: &str,
        idle: Duration,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> impl Future<Output = Result<BytesEnd, TransportError>> + Send;
}

impl BoxExec for Session {
    fn exec(
        &self,
        command: &str,
        limits: ExecLimits,
    ) -> impl Future<Output = Result<ExecOutput, TransportError>> + Send {
        Session::exec(self, command, limits)
    }

    fn exec_bytes(
        &self,
        command: &str,
        idle: Duration,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> impl Future<Output = Result<BytesEnd, TransportError>> + Send {
        Session::exec_bytes(self, command, idle, sink)
    }
}

/// A box's commands for one pull or check, asked of the connection's helper shell (see
/// `shell`: sshd starts the login shell once per connection, not once per command or pull). A
/// command goes to a channel of its own only where the helper could not be started or had
/// ended before the command began.
pub struct OneShell<'a> {
    session: &'a Session,
}

/// Stderr a streamed command keeps for its message.
const STDERR_KEPT: usize = 4096;

impl<'a> OneShell<'a> {
    pub fn new(session: &'a Session) -> OneShell<'a> {
        OneShell { session }
    }

    async fn helper(&self) -> Option<Arc<Helper>> {
        self.session.helper().await
    }

    /// A failure the link explains is said as the link's.
    fn failed(&self, e: TransportError) -> TransportError {
        match (e, self.session.lost_reason()) {
            (TransportError::Disconnected(_), Some(reason)) => TransportError::Disconnected(reason),
            (e, _) => e,
        }
    }
}

impl BoxExec for OneShell<'_> {
    async fn exec(&self, command: &str, limits: ExecLimits) -> Result<ExecOutput, TransportError> {
        if let Some(helper) = self.helper().await {
            let (mut stdout, mut cut) = (Vec::new(), false);
            let mut keep = |data: &[u8]| {
                super::exec::keep(&mut stdout, data, limits.max_output, &mut cut);
                true
            };
            let clock = Clock::Total(limits.timeout);
            match helper
                .run(command, clock, &mut keep, limits.max_output)
                .await
            {
                Ok(ran) => {
                    return Ok(ExecOutput {
                        stdout,
                        truncated: cut || ran.stderr_cut,
                        stderr: ran.stderr,
                        exit_status: ran.status,
                    });
                }
                Err(Attempt::Failed(e)) => return Err(self.failed(e)),
                Err(Attempt::Gone) => {}
            }
        }
        self.session.exec(command, limits).await
    }

    async fn exec_bytes(
        &self,
        command: &str,
        idle: Duration,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> Result<BytesEnd, TransportError> {
        if let Some(helper) = self.helper().await {
            match helper
                .run(command, Clock::Idle(idle), sink, STDERR_KEPT)
                .await
            {
                Ok(ran) => {
                    return Ok(BytesEnd {
                        exit_status: ran.status,
                        stderr: ran.stderr,
                        stopped: ran.stopped,
                    });
                }
                Err(Attempt::Failed(e)) => return Err(self.failed(e)),
                Err(Attempt::Gone) => {}
            }
        }
        self.session.exec_bytes(command, idle, sink).await
    }
}

/// A Job's pod: its commands run in `container` through the real kubectl.
#[derive(Debug, Clone)]
pub struct KubectlBox {
    pub cluster: KubeConfig,
    pub pod: String,
    pub container: String,
}

/// kubectl exits 1 for its own failures (no such pod, no `pods/exec` right, a dropped link) as
/// well as for a command that exits 1: the command's own status is printed last on stderr,
/// after this word, so a missing one is kubectl's failure, never a command's answer.
const EXIT_WORD: &str = "rigwatch-exit";
/// How much stderr a streamed command keeps (`tail`'s complaint and the status line).
const STREAM_STDERR: usize = 64 * 1024;

impl KubectlBox {
    /// Job `job`'s newest Running pod and its first (main) container: `kubectl exec` reaches
    /// only a running container, so a Job with none is an error that says so.
    pub async fn of_job(
        cluster: &KubeConfig,
        job: &str,
        timeout: Duration,
    ) -> Result<KubectlBox, KubectlError> {
        let job = checked_name(cluster, job)?;
        let selector = format!("--selector=job-name={job}");
        let out = kubectl(cluster, &["get", "pods", &selector, "-o", "json"], timeout).await?;
        let bad = |why: &str| KubectlError::Failed {
            cluster: cluster.name.clone(),
            command: format!("kubectl get pods {selector}"),
            exit: "exit 0".into(),
            stderr: why.into(),
        };
        let doc: serde_json::Value =
            serde_json::from_str(&out).map_err(|_| bad("printed no JSON"))?;
        let running = doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["status"]["phase"].as_str() == Some("Running"))
            .max_by_key(|p| p["metadata"]["creationTimestamp"].as_str().unwrap_or(""));
        let Some(pod) = running else {
            return Err(KubectlError::NoRunningPod {
                cluster: cluster.name.clone(),
                job: job.to_string(),
            });
        };
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let container = pod["spec"]["containers"][0]["name"]
            .as_str()
            .unwrap_or_default();
        Ok(KubectlBox {
            pod: checked_name(cluster, name)?.to_string(),
            container: checked_name(cluster, container)?.to_string(),
            cluster: cluster.clone(),
        })
    }

    /// The whole kubectl command line: the command is one argument of `sh -c`, run by an outer
    /// `sh` that prints its status after [`EXIT_WORD`].
    fn command(&self, command: &str) -> Command {
        let wrapper =
            format!("sh -c \"$1\"; s=$?; printf '\\n{EXIT_WORD} %s\\n' \"$s\" >&2; exit \"$s\"");
        let rest = [
            "exec",
            self.pod.as_str(),
            "-c",
            self.container.as_str(),
            "--",
            "sh",
            "-c",
            wrapper.as_str(),
            "sh",
            command,
        ];
        let mut cmd = Command::new("kubectl");
        cmd.args(arguments(&self.cluster, &rest));
        cmd
    }

    fn failed(&self, why: String) -> TransportError {
        TransportError::Kubectl(format!(
            "{}: kubectl exec in pod {}: {}",
            self.cluster.name,
            self.pod,
            crate::sanitize::line(&why, 300)
        ))
    }
}

/// The command's own status taken off the end of `stderr`; None when kubectl never printed it.
/// Bytes, not text: the command's own stderr may name files that are not UTF-8.
fn take_status(stderr: &mut Vec<u8>) -> Option<u32> {
    let body = stderr.strip_suffix(b"\n")?;
    let word = format!("\n{EXIT_WORD} ");
    let at = body
        .windows(word.len())
        .rposition(|w| w == word.as_bytes())?;
    let code = std::str::from_utf8(&body[at + word.len()..])
        .ok()?
        .parse()
        .ok()?;
    stderr.truncate(at);
    Some(code)
}

fn kubectls_words(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    crate::sanitize::mask_secrets(text.trim())
}

impl BoxExec for KubectlBox {
    async fn exec(&self, command: &str, limits: ExecLimits) -> Result<ExecOutput, TransportError> {
        let done = crate::process::run(
            self.command(command),
            None,
            limits.timeout,
            limits.max_output,
        )
        .await
        .map_err(|e| self.failed(format!("could not start kubectl: {e}")))?;
        if let crate::process::Ended::TimedOut(after) = done.ended {
            return Err(TransportError::Timeout {
                stage: "kubectl exec",
                after,
            });
        }
        let mut stderr = done.stderr;
        let status = take_status(&mut stderr);
        if status.is_none() && !done.over_cap {
            return Err(self.failed(kubectls_words(&stderr)));
        }
        Ok(ExecOutput {
            stdout: done.stdout,
            stderr,
            exit_status: status,
            truncated: done.over_cap,
        })
    }

    async fn exec_bytes(
        &self,
        command: &str,
        idle: Duration,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> Result<BytesEnd, TransportError> {
        let done = crate::process::stream(self.command(command), idle, STREAM_STDERR, sink)
            .await
            .map_err(|e| self.failed(format!("could not start kubectl: {e}")))?;
        if done.stalled {
            return Err(TransportError::Timeout {
                stage: "waiting for the command's output",
                after: idle,
            });
        }
        let mut stderr = done.stderr;
        let status = take_status(&mut stderr);
        if status.is_none() && !done.stopped {
            return Err(self.failed(kubectls_words(&stderr)));
        }
        Ok(BytesEnd {
            exit_status: status,
            stderr,
            stopped: done.stopped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_status_comes_off_the_end_of_its_stderr_and_only_there() {
        let mut err = b"find: x: Permission denied\n\nrigwatch-exit 1\n".to_vec();
        assert_eq!(take_status(&mut err), Some(1));
        assert_eq!(err, b"find: x: Permission denied\n");
        let mut empty = b"\nrigwatch-exit 0\n".to_vec();
        assert_eq!(take_status(&mut empty), Some(0));
        assert!(empty.is_empty());
        // kubectl's own failure: no status line, so no status.
        let mut own = b"Error from server (NotFound): pods \"p\" not found\n".to_vec();
        assert_eq!(take_status(&mut own), None);
        let mut forged = b"rigwatch-exit 0 and more\n".to_vec();
        assert_eq!(take_status(&mut forged), None);
        let mut bytes = b"find: '/r/\xff': Permission denied\n\nrigwatch-exit 1\n".to_vec();
        assert_eq!(take_status(&mut bytes), Some(1));
        assert_eq!(bytes, b"find: '/r/\xff': Permission denied\n");
    }
}
