//! Kubernetes Jobs and their pods as job rows, and one read of a `[[kubernetes]]` namespace as
//! a reading. The Job's conditions say whether it ended; its pods say why it pends, restarts or
//! failed (a pod that cannot be scheduled, a container killed for memory, an eviction), where it
//! runs, how many GPUs it holds, and whether its checkpoints survive a reschedule. Every text
//! from kubectl is sanitized here, before any view sees it.
//!
//! Past 400 lines: a Job's conditions and its pods' states to one row is one table of cases,
//! read top to bottom.

use chrono::{DateTime, Utc};

use super::{ClusterReading, Exit, JobRow, Phase, PodRow, Scheduler};
use crate::config::KubeConfig;
use crate::probe::kube::{KubeJob, KubePod, PodSpec, Terminated};
use crate::sanitize::line;

/// The GPU resource NVIDIA's device plugin advertises.
const GPU: &str = "nvidia.com/gpu";
/// Longest reason text kept (a scheduler message lists every node's problem).
const WORDS: usize = 300;

/// Every text a Job or pod carries (a condition's or a container's message is whatever the
/// program wrote): one line, and a key or token in it masked, before any view, event or sink.
fn clean(text: &str) -> String {
    crate::sanitize::words(text.trim(), WORDS)
}

fn is_over(pod: &KubePod) -> bool {
    matches!(
        pod.status.phase.as_deref(),
        Some("Succeeded") | Some("Failed")
    )
}

fn time(text: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The GPUs one pod asks for: each container's limit (the device plugin needs limit =
/// request), else its request.
fn gpus_of(spec: &PodSpec) -> Option<u32> {
    let per: Vec<u32> = spec
        .containers
        .iter()
        .filter_map(|c| {
            let r = &c.resources;
            r.limits.get(GPU).or_else(|| r.requests.get(GPU))?.whole()
        })
        .collect();
    (!per.is_empty()).then(|| per.iter().fold(0u32, |a, b| a.saturating_add(*b)))
}

/// How a container ended, in words: memory with its limit, else its exit.
fn terminated_words(pod: &KubePod, container: &str, t: &Terminated) -> (String, String) {
    let reason = t.reason.as_deref().map(clean).unwrap_or_default();
    if reason == "OOMKilled" {
        let limit = pod
            .spec
            .containers
            .iter()
            .find(|c| c.name == container)
            .and_then(|c| c.resources.limits.get("memory"))
            .map(|q| clean(&q.text()));
        let words = match limit {
            Some(limit) => format!("killed for using more than its {limit} memory limit"),
            None => "killed for running out of memory (no memory limit: the node ran out)".into(),
        };
        return (reason, words);
    }
    let code = t.exit_code.unwrap_or(-1);
    let reason = if reason.is_empty() {
        "Error".into()
    } else {
        reason
    };
    (
        reason,
        format!("container {} exited with code {code}", clean(container)),
    )
}

/// Why the Job's pods pend, restarted or failed, most telling first: a pod no node can take,
/// a container stuck waiting, a container killed for memory, an eviction, a failed exit.
fn pod_cause(pods: &[&KubePod]) -> Option<(String, String)> {
    for pod in pods.iter().filter(|p| !is_over(p)) {
        if let Some(c) = pod.condition("PodScheduled")
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
        {
            let message = c.message.as_deref().map(clean).unwrap_or_default();
            return Some((
                "Unschedulable".into(),
                format!("no node can take it: {message}"),
            ));
        }
        for cs in &pod.status.container_statuses {
            if let Some(w) = &cs.state.waiting
                && let Some(reason) = w.reason.as_deref()
                && !matches!(reason, "ContainerCreating" | "PodInitializing")
            {
                let message = w.message.as_deref().map(clean);
                let words = format!(
                    "container {} is waiting: {}",
                    clean(&cs.name),
                    clean(reason)
                );
                let words = match message {
                    Some(m) if !m.is_empty() => format!("{words}: {m}"),
                    _ => words,
                };
                return Some((clean(reason), words));
            }
        }
    }
    // The latest container end of all: an OOM kill restarted in place (lastState) or final.
    let mut last: Option<(&str, (String, String))> = None;
    for pod in pods {
        for cs in &pod.status.container_statuses {
            for (t, restarted) in [
                (&cs.state.terminated, false),
                (&cs.last_state.terminated, true),
            ] {
                let Some(t) = t else { continue };
                if t.exit_code == Some(0) && t.reason.as_deref() != Some("OOMKilled") {
                    continue;
                }
                let (reason, words) = terminated_words(pod, &cs.name, t);
                let words = if restarted {
                    format!("restarted after being {words}")
                } else {
                    words
                };
                let at = t.finished_at.as_deref().unwrap_or("");
                if last.as_ref().is_none_or(|(when, _)| at >= *when) {
                    last = Some((at, (reason, words)));
                }
            }
        }
    }
    let evicted = pods
        .iter()
        .find(|p| p.status.reason.as_deref() == Some("Evicted"));
    match (evicted, last) {
        (_, Some((_, (reason, words)))) if reason == "OOMKilled" => Some((reason, words)),
        (Some(pod), _) => {
            let message = pod.status.message.as_deref().map(clean).unwrap_or_default();
            Some((
                "Evicted".into(),
                format!("a pod was evicted by the kubelet: {message}"),
            ))
        }
        (None, last) => last.map(|(_, cause)| cause),
    }
}

/// Why a Job failed (or is failing), from its condition, with the pods' cause when known.
fn failure_words(
    job: &KubeJob,
    reason: &str,
    message: Option<&str>,
    cause: Option<&str>,
) -> String {
    let words = match reason {
        "BackoffLimitExceeded" => format!(
            "failed {} times, past its backoff limit of {}",
            job.status.failed.unwrap_or(0),
            job.spec
                .backoff_limit
                .map_or_else(|| "?".to_string(), |l| l.to_string())
        ),
        "DeadlineExceeded" => match job.spec.active_deadline_seconds {
            Some(s) => format!("ran past its activeDeadlineSeconds ({s} s); its pods were ended"),
            None => "ran past its deadline; its pods were ended".into(),
        },
        "MaxFailedIndexesExceeded" => "more indexes failed than its maxFailedIndexes".into(),
        _ => message.map(clean).unwrap_or_else(|| clean(reason)),
    };
    match cause {
        Some(cause) if reason != "PodFailurePolicy" => format!("{words}; last: {cause}"),
        _ => words,
    }
}

/// Where the checkpoints land, judged on the pod's first container (the main one, as kubectl
/// exec's default): a PVC survives a reschedule, an emptyDir or the container's own filesystem
/// does not.
fn checkpoint_danger(path: &str, spec: &PodSpec) -> Option<String> {
    let container = spec.containers.first()?;
    let under = |mount: &str| {
        let mount = mount.trim_end_matches('/');
        mount.is_empty() || path == mount || path.starts_with(&format!("{mount}/"))
    };
    let mount = container
        .volume_mounts
        .iter()
        .filter(|m| under(&m.mount_path))
        .max_by_key(|m| m.mount_path.trim_end_matches('/').len());
    let path = clean(path);
    let Some(mount) = mount else {
        return Some(format!(
            "checkpoints in {path} are on the container's own filesystem: lost when the pod is \
             rescheduled; mount a PVC there"
        ));
    };
    let volume = spec.volumes.iter().find(|v| v.name == mount.name)?;
    let name = clean(&volume.name);
    if volume.persistent_volume_claim.is_some() {
        None
    } else if volume.empty_dir.is_some() {
        Some(format!(
            "checkpoints in {path} are on emptyDir {name:?}: lost when the pod is rescheduled; \
             mount a PVC there"
        ))
    } else if volume.host_path.is_some() {
        Some(format!(
            "checkpoints in {path} are on hostPath {name:?}: lost when the pod moves to another \
             node; mount a PVC there"
        ))
    } else {
        None
    }
}

/// One Job and its pods (those whose job-name label names it) as a row at `now`.
pub fn job_row(
    job: &KubeJob,
    pods: &[&KubePod],
    checkpoints: Option<&str>,
    now: DateTime<Utc>,
) -> JobRow {
    let live: Vec<&KubePod> = pods.iter().copied().filter(|p| !is_over(p)).collect();
    let cause = pod_cause(pods);
    let running = live
        .iter()
        .any(|p| p.status.phase.as_deref() == Some("Running"));
    let (phase, state, ended) = if let Some(c) = job.condition("Failed") {
        (Phase::Failed, "Failed", Some(c))
    } else if let Some(c) = job.condition("Complete") {
        (Phase::Succeeded, "Complete", Some(c))
    } else if let Some(c) = job.condition("FailureTarget") {
        (Phase::Ending, "Failing", Some(c))
    } else if job.condition("SuccessCriteriaMet").is_some() {
        // From 1.31 the controller marks success first and adds Complete once pods ended.
        (Phase::Ending, "Completing", None)
    } else if job.condition("Suspended").is_some() {
        (Phase::Pending, "Suspended", None)
    } else if running {
        (Phase::Running, "Running", None)
    } else {
        (Phase::Pending, "Pending", None)
    };
    let cause_words = cause.as_ref().map(|(_, w)| w.as_str());
    let (reason, reason_words) = match (phase, ended) {
        (Phase::Failed | Phase::Ending, Some(c)) => {
            let reason = c
                .reason
                .as_deref()
                .map(clean)
                .unwrap_or_else(|| "Failed".into());
            let words = failure_words(job, &reason, c.message.as_deref(), cause_words);
            let words = if phase == Phase::Ending {
                format!("failing: {words}; its pods are still ending")
            } else {
                words
            };
            (Some(reason), Some(words))
        }
        (Phase::Succeeded, _) => (None, None),
        _ if state == "Suspended" => (None, Some("suspended (spec.suspend)".into())),
        _ => cause.map_or((None, None), |(r, w)| (Some(r), Some(w))),
    };
    let start = time(job.status.start_time.as_deref());
    let end = time(job.status.completion_time.as_deref())
        .or_else(|| ended.and_then(|c| time(c.last_transition_time.as_deref())))
        .filter(|_| phase.is_over())
        .unwrap_or(now);
    let shown = if phase.is_over() || live.is_empty() {
        pods.to_vec()
    } else {
        live.clone()
    };
    let mut nodes: Vec<String> = shown
        .iter()
        .filter_map(|p| p.spec.node_name.as_deref().map(clean))
        .collect();
    nodes.sort();
    nodes.dedup();
    let gpus = if live.is_empty() {
        gpus_of(&job.spec.template.spec)
    } else {
        live.iter()
            .filter_map(|p| gpus_of(&p.spec))
            .reduce(u32::saturating_add)
    };
    let restarts = pods
        .iter()
        .flat_map(|p| p.status.container_statuses.iter().map(|c| c.restart_count))
        .fold(job.status.failed.unwrap_or(0), u32::saturating_add);
    let exit = phase.is_over().then(|| last_exit(pods)).flatten();
    let judged = live.first().or(pods.first()).map(|p| &p.spec);
    let dangers = checkpoints
        .and_then(|path| checkpoint_danger(path, judged.unwrap_or(&job.spec.template.spec)))
        .into_iter()
        .collect();
    let elapsed = start
        .and_then(|s| (end - s).to_std().ok())
        .map(|d| d.as_secs());
    JobRow {
        id: clean(&job.metadata.name),
        name: clean(&job.metadata.name),
        phase,
        state: state.into(),
        reason,
        reason_words,
        exit,
        nodes: (!nodes.is_empty()).then(|| u32::try_from(nodes.len()).unwrap_or(u32::MAX)),
        node_list: (!nodes.is_empty()).then(|| nodes.join(",")),
        gpus,
        elapsed_secs: elapsed,
        limit_secs: job.spec.active_deadline_seconds,
        // activeDeadlineSeconds runs from the Job's start: its walltime, while it is not over.
        left: job
            .spec
            .active_deadline_seconds
            .zip(elapsed)
            .filter(|_| !phase.is_over())
            .map(|(limit, used)| std::time::Duration::from_secs(limit.saturating_sub(used))),
        restarts: Some(restarts),
        restart_limit: job.spec.backoff_limit,
        requeue: None,
        walltime: None,
        checkpoint_age_secs: None,
        dangers,
        gpu_truth: Vec::new(),
        pods: pods
            .iter()
            .map(|p| PodRow {
                name: clean(&p.metadata.name),
                phase: clean(p.status.phase.as_deref().unwrap_or("Unknown")),
                node: p.spec.node_name.as_deref().map(clean),
                restarts: p
                    .status
                    .container_statuses
                    .iter()
                    .fold(0u32, |n, c| n.saturating_add(c.restart_count)),
                last_end: last_end(p),
                gpus: Vec::new(),
                gpu_error: None,
            })
            .collect(),
    }
}

/// How a container of `pod` last ended (the latest by its finish time, the current state
/// before the last): reason and words, and kubectl's message where it gave one.
fn last_end(pod: &KubePod) -> Option<String> {
    let ended = pod
        .status
        .container_statuses
        .iter()
        .flat_map(|c| {
            [&c.state.terminated, &c.last_state.terminated]
                .into_iter()
                .flatten()
                .map(move |t| (c, t))
        })
        .max_by(|(_, a), (_, b)| a.finished_at.cmp(&b.finished_at))?;
    let (container, t) = ended;
    let (reason, words) = terminated_words(pod, &container.name, t);
    let message = t
        .message
        .as_deref()
        .map(|m| format!(" ({})", crate::sanitize::mask_secrets(&clean(m))))
        .unwrap_or_default();
    Some(format!("{reason}: {words}{message}"))
}

/// The exit of the container that ended last, of all the Job's pods.
fn last_exit(pods: &[&KubePod]) -> Option<Exit> {
    pods.iter()
        .flat_map(|p| &p.status.container_statuses)
        .flat_map(|c| [&c.state.terminated, &c.last_state.terminated])
        .flatten()
        .filter(|t| t.exit_code.is_some())
        .max_by(|a, b| a.finished_at.cmp(&b.finished_at))
        .and_then(|t| {
            Some(Exit {
                code: t.exit_code?,
                signal: t.signal,
            })
        })
}

/// One read of `cluster`: every Job the selector picked, with its pods; or, with an error,
/// why they could not be read (the error already names the cluster and the command).
pub fn reading(
    cluster: &KubeConfig,
    listed: Result<(Vec<KubeJob>, Vec<KubePod>), String>,
    now: DateTime<Utc>,
) -> ClusterReading {
    let (jobs, error) = match listed {
        Ok((jobs, pods)) => {
            let rows = jobs
                .iter()
                .map(|job| {
                    let mine: Vec<&KubePod> = pods
                        .iter()
                        .filter(|p| p.job_name() == Some(job.metadata.name.as_str()))
                        .collect();
                    job_row(job, &mine, cluster.checkpoints.as_deref(), now)
                })
                .collect();
            (rows, None)
        }
        Err(e) => (Vec::new(), Some(line(&e, 400))),
    };
    let mut out = ClusterReading {
        name: cluster.name.clone(),
        scheduler: Scheduler::Kubernetes,
        via: format!("{}/{}", line(&cluster.context, 100), cluster.namespace),
        jobs,
        ended_state_unknown: Vec::new(),
        error,
        read_at: now,
        quota: None,
    };
    out.judge(now);
    out
}

#[cfg(test)]
#[path = "kubernetes_tests.rs"]
mod tests;
