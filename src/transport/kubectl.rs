//! The real `kubectl`, run for a `[[kubernetes]]` namespace: always an argument list (never a
//! shell), `--context`, `--kubeconfig` when set and `--namespace` first, in its own process
//! group with a timeout that ends the whole group and a cap on what it prints (the crate's
//! `process`). kubectl, not a client of our own, speaks to the API server: it already follows
//! the user's kubeconfig (exec credential plugins, OIDC, proxies) and its version dispatch.
//!
//! Also the teardown primitive: [`delete_job`] deletes a Job with its pods (propagation
//! Background: a bare DELETE of a batch/v1 Job orphans its pods, which keep running and keep
//! their GPUs), and [`pods_left`] observes afterwards how many of its pods still exist.

use std::time::Duration;

use tokio::process::Command;

use crate::config::KubeConfig;

/// The most a list may print: a namespace's thousands of pods fit.
pub const MAX_KUBECTL_BYTES: usize = 32 * 1024 * 1024;

/// Why a kubectl command gave no answer; each names the cluster and the command, and carries
/// kubectl's own words (sanitized, one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubectlError {
    #[error("{cluster}: {command}: could not start kubectl: {why}")]
    Start {
        cluster: String,
        command: String,
        why: String,
    },
    #[error(
        "{cluster}: {command}: no answer within {:.1}s; kubectl was ended",
        after.as_secs_f64()
    )]
    TimedOut {
        cluster: String,
        command: String,
        after: Duration,
    },
    #[error("{cluster}: {command}: {exit}: {stderr}")]
    Failed {
        cluster: String,
        command: String,
        /// "exit 1", or the signal that ended it.
        exit: String,
        stderr: String,
    },
    #[error("{cluster}: {command}: printed over {cap} bytes")]
    TooBig {
        cluster: String,
        command: String,
        cap: usize,
    },
    #[error("{cluster}: {name:?} is not a Kubernetes name")]
    BadName { cluster: String, name: String },
    #[error("{cluster}: no running pod of Job {job}: its files can only be read while a pod runs")]
    NoRunningPod { cluster: String, job: String },
}

/// kubectl's words, one line: newlines become "; ", controls and secrets go.
fn one_line(text: &[u8]) -> String {
    crate::sanitize::joined(&String::from_utf8_lossy(text), 400)
}

/// The arguments that pick the cluster and namespace, then `rest`. Each value is one
/// argument in `--flag=value` form, so none can be read as another flag.
pub fn arguments(cluster: &KubeConfig, rest: &[&str]) -> Vec<String> {
    let mut args = vec![format!("--context={}", cluster.context)];
    if let Some(path) = &cluster.kubeconfig {
        args.push(format!("--kubeconfig={}", path.display()));
    }
    args.push(format!("--namespace={}", cluster.namespace));
    args.extend(rest.iter().map(|a| a.to_string()));
    args
}

/// Runs `kubectl` with `rest` after the cluster's arguments; its stdout when it exits 0.
pub async fn kubectl(
    cluster: &KubeConfig,
    rest: &[&str],
    timeout: Duration,
) -> Result<String, KubectlError> {
    let command = crate::sanitize::line(&format!("kubectl {}", rest.join(" ")), 200);
    let mut cmd = Command::new("kubectl");
    cmd.args(arguments(cluster, rest));
    let cluster = cluster.name.clone();
    let done = crate::process::run(cmd, None, timeout, MAX_KUBECTL_BYTES)
        .await
        .map_err(|e| KubectlError::Start {
            cluster: cluster.clone(),
            command: command.clone(),
            why: e.to_string(),
        })?;
    if let crate::process::Ended::TimedOut(after) = done.ended {
        return Err(KubectlError::TimedOut {
            cluster,
            command,
            after,
        });
    }
    if done.over_cap {
        return Err(KubectlError::TooBig {
            cluster,
            command,
            cap: MAX_KUBECTL_BYTES,
        });
    }
    match done.code() {
        Some(0) => Ok(String::from_utf8_lossy(&done.stdout).into_owned()),
        code => Err(KubectlError::Failed {
            cluster,
            command,
            exit: code.map_or_else(|| "ended by a signal".into(), |c| format!("exit {c}")),
            stderr: one_line(&done.stderr),
        }),
    }
}

/// `kubectl get jobs -l SELECTOR -o json`: the watched Jobs.
pub async fn get_jobs(cluster: &KubeConfig, timeout: Duration) -> Result<String, KubectlError> {
    let selector = format!("--selector={}", cluster.selector);
    kubectl(cluster, &["get", "jobs", &selector, "-o", "json"], timeout).await
}

/// `kubectl get pods -l SELECTOR -o json`: their pods (the selector matches the Jobs' pod
/// template labels too).
pub async fn get_pods(cluster: &KubeConfig, timeout: Duration) -> Result<String, KubectlError> {
    let selector = format!("--selector={}", cluster.selector);
    kubectl(cluster, &["get", "pods", &selector, "-o", "json"], timeout).await
}

/// A Job's or pod's name is a DNS-1123 subdomain (a container's, a label: a subset): checked
/// before it reaches a command line, where a leading '-' would read as a flag.
pub(super) fn checked_name<'a>(
    cluster: &KubeConfig,
    job: &'a str,
) -> Result<&'a str, KubectlError> {
    let fine = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if job.len() <= 253
        && job.chars().all(fine)
        && ends(job.chars().next())
        && ends(job.chars().last())
    {
        Ok(job)
    } else {
        Err(KubectlError::BadName {
            cluster: cluster.name.clone(),
            name: crate::sanitize::line(job, 80),
        })
    }
}

/// Deletes Job `job` and its pods: `kubectl delete job NAME --cascade=background --wait=false`,
/// whose DELETE carries `propagationPolicy: Background` (the server default for a batch/v1 Job
/// orphans its pods: they keep running and keep their GPUs). Returns once the API server
/// accepted it; the pods end after. Exit 0 proves nothing: observe with [`pods_left`].
pub async fn delete_job(
    cluster: &KubeConfig,
    job: &str,
    timeout: Duration,
) -> Result<(), KubectlError> {
    let job = checked_name(cluster, job)?;
    kubectl(cluster, &delete_rest(job), timeout)
        .await
        .map(|_| ())
}

/// What follows the cluster's arguments in a Job's delete.
fn delete_rest(job: &str) -> [&str; 5] {
    ["delete", "job", job, "--cascade=background", "--wait=false"]
}

/// The delete [`delete_job`] runs, as the teardown shows and records it: the very arguments
/// kubectl gets (`--kubeconfig=` included where the cluster names one), joined.
pub fn delete_job_command(cluster: &KubeConfig, job: &str) -> String {
    format!(
        "kubectl {}",
        arguments(cluster, &delete_rest(job)).join(" ")
    )
}

/// How many pods of Job `job` still exist (running, or terminating and still holding their
/// GPUs): `kubectl get pods -l job-name=NAME -o name`, one line per pod. The legacy
/// `job-name` label is set by every Kubernetes version, the newer one only from 1.27.
pub async fn pods_left(
    cluster: &KubeConfig,
    job: &str,
    timeout: Duration,
) -> Result<usize, KubectlError> {
    let job = checked_name(cluster, job)?;
    let selector = format!("--selector=job-name={job}");
    let out = kubectl(cluster, &["get", "pods", &selector, "-o", "name"], timeout).await?;
    Ok(out.lines().filter(|l| !l.trim().is_empty()).count())
}

/// Whether Job `job` still exists: `kubectl get job NAME --ignore-not-found -o name` prints
/// its name, or nothing once it is gone.
pub async fn job_exists(
    cluster: &KubeConfig,
    job: &str,
    timeout: Duration,
) -> Result<bool, KubectlError> {
    let job = checked_name(cluster, job)?;
    let rest = ["get", "job", job, "--ignore-not-found", "-o", "name"];
    let out = kubectl(cluster, &rest, timeout).await?;
    Ok(!out.trim().is_empty())
}

/// Runs `command` in `container` of pod `pod`: `kubectl exec POD -c CONTAINER -- COMMAND…`
/// (kubectl 1.30+ speaks WebSocket to the API server); its stdout when it exits 0.
pub async fn exec(
    cluster: &KubeConfig,
    pod: &str,
    container: &str,
    command: &[&str],
    timeout: Duration,
) -> Result<String, KubectlError> {
    let pod = checked_name(cluster, pod)?;
    let container = checked_name(cluster, container)?;
    let mut args = vec!["exec", pod, "-c", container, "--"];
    args.extend_from_slice(command);
    kubectl(cluster, &args, timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> KubeConfig {
        KubeConfig {
            name: "lab".into(),
            context: "-n kube-system".into(),
            kubeconfig: Some("/k/config".into()),
            namespace: "ml".into(),
            selector: "app=train".into(),
            period: Duration::from_secs(30),
            checkpoints: None,
            nvidia_smi: false,
            pull: None,
        }
    }

    #[test]
    fn every_value_is_one_flag_argument() {
        let args = arguments(&cluster(), &["get", "jobs"]);
        assert_eq!(
            args,
            [
                "--context=-n kube-system",
                "--kubeconfig=/k/config",
                "--namespace=ml",
                "get",
                "jobs"
            ]
        );
    }

    #[test]
    fn a_job_name_that_is_not_a_kubernetes_name_never_reaches_kubectl() {
        for bad in ["", "-rf", "Train", "a b", "a/b", "x-", &"a".repeat(254)] {
            assert!(checked_name(&cluster(), bad).is_err(), "{bad:?}");
        }
        for good in ["train", "train-7.a", "0"] {
            assert_eq!(checked_name(&cluster(), good), Ok(good));
        }
    }

    #[test]
    fn kubectls_words_are_one_clean_line() {
        let text = b"error: You must be logged in\n\x1b[31mUnauthorized\x1b[0m\n\n";
        assert_eq!(one_line(text), "error: You must be logged in; Unauthorized");
    }
}
