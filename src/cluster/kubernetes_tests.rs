//! Each hand-written fixture (tests/fixtures/kubernetes) as the row the views show.

use chrono::{DateTime, Utc};

use super::*;
use crate::probe::kube::tests::fixture;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-20T12:00:00Z")
        .expect("time")
        .with_timezone(&Utc)
}

/// The one Job of fixture `name`, with checkpoints at /ckpt.
fn row(name: &str) -> JobRow {
    let (jobs, pods) = fixture(name);
    let refs: Vec<&KubePod> = pods.iter().collect();
    job_row(&jobs[0], &refs, Some("/ckpt"), now())
}

fn words(row: &JobRow) -> &str {
    row.reason_words.as_deref().unwrap_or("")
}

#[test]
fn a_healthy_job_on_a_pvc_runs_with_its_gpus_and_no_danger() {
    let r = row("running-pvc");
    assert_eq!((r.phase, r.state.as_str()), (Phase::Running, "Running"));
    assert_eq!((r.reason.clone(), r.reason_words.clone()), (None, None));
    assert_eq!(r.gpus, Some(2));
    assert_eq!(r.node_list.as_deref(), Some("gpu-node-1"));
    assert_eq!((r.restarts, r.restart_limit), (Some(0), Some(6)));
    assert_eq!(r.elapsed_secs, Some(2 * 3600));
    assert!(r.dangers.is_empty(), "{:?}", r.dangers);
    assert_eq!(r.exit, None);
    assert_eq!(r.pods[0].phase, "Running");
    assert_eq!(r.pods[0].name, "train-pvc-x7k2q");
    assert_eq!((r.pods[0].restarts, r.pods[0].last_end.clone()), (0, None));
}

#[test]
fn an_oom_kill_restarted_in_place_says_the_memory_limit() {
    let r = row("oom-restarted");
    assert_eq!(r.phase, Phase::Running);
    assert_eq!(r.reason.as_deref(), Some("OOMKilled"));
    assert_eq!(
        words(&r),
        "restarted after being killed for using more than its 16Gi memory limit"
    );
    assert_eq!((r.restarts, r.restart_limit), (Some(2), Some(4)));
    assert_eq!(r.gpus, Some(1));
    // The pod says its own restarts and how its container last ended, for the job's detail.
    assert_eq!(r.pods[0].restarts, 2);
    assert_eq!(
        r.pods[0].last_end.as_deref(),
        Some("OOMKilled: killed for using more than its 16Gi memory limit")
    );
}

#[test]
fn an_oom_kill_not_restarted_fails_the_pod_with_the_same_words() {
    let (jobs, mut pods) = fixture("oom-restarted");
    let status = &mut pods[0].status;
    status.phase = Some("Failed".into());
    let cs = &mut status.container_statuses[0];
    cs.state = std::mem::take(&mut cs.last_state);
    cs.restart_count = 0;
    let refs: Vec<&KubePod> = pods.iter().collect();
    let r = job_row(&jobs[0], &refs, None, now());
    assert_eq!(r.reason.as_deref(), Some("OOMKilled"));
    assert_eq!(
        words(&r),
        "killed for using more than its 16Gi memory limit"
    );
    assert_eq!(r.gpus, Some(1), "no live pod: the template's ask");
}

#[test]
fn an_eviction_says_the_kubelets_message_and_counts_as_a_restart() {
    let r = row("evicted");
    assert_eq!(r.phase, Phase::Running);
    assert_eq!(r.reason.as_deref(), Some("Evicted"));
    assert_eq!(
        words(&r),
        "a pod was evicted by the kubelet: The node was low on resource: ephemeral-storage. \
         Container train was using 20Ki, which exceeds its request of 0."
    );
    assert_eq!(r.restarts, Some(1));
    assert_eq!(r.gpus, Some(1), "the evicted pod holds no GPU");
    assert_eq!(r.node_list.as_deref(), Some("gpu-node-4"));
    let phases: Vec<&str> = r.pods.iter().map(|p| p.phase.as_str()).collect();
    assert_eq!(phases, ["Failed", "Running"]);
}

#[test]
fn a_job_past_its_backoff_limit_failed_with_the_last_exit() {
    let r = row("backoff-failed");
    assert_eq!((r.phase, r.state.as_str()), (Phase::Failed, "Failed"));
    assert_eq!(r.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert_eq!(
        words(&r),
        "failed 3 times, past its backoff limit of 2; last: container train exited with code 3"
    );
    assert_eq!((r.restarts, r.restart_limit), (Some(3), Some(2)));
    assert_eq!(r.exit.map(|e| e.code), Some(3));
    assert_eq!(r.gpus, Some(4), "no live pod: the template's ask");
    assert_eq!(r.node_list.as_deref(), Some("gpu-node-1,gpu-node-2"));
    assert_eq!(
        r.elapsed_secs,
        Some(3 * 60 + 41),
        "until the Failed condition"
    );
    assert_eq!(r.severity(), crate::signals::Severity::Crit);
}

#[test]
fn a_job_with_only_failure_target_is_failing_not_failed() {
    let (mut jobs, pods) = fixture("backoff-failed");
    jobs[0]
        .status
        .conditions
        .retain(|c| c.kind == "FailureTarget");
    let refs: Vec<&KubePod> = pods.iter().collect();
    let r = job_row(&jobs[0], &refs, None, now());
    assert_eq!((r.phase, r.state.as_str()), (Phase::Ending, "Failing"));
    assert!(
        words(&r).starts_with("failing: failed 3 times"),
        "{}",
        words(&r)
    );
    assert_eq!(r.exit, None, "not over yet");
}

#[test]
fn a_job_whose_success_criteria_are_met_is_completing() {
    let (mut jobs, mut pods) = fixture("running-pvc");
    jobs[0]
        .status
        .conditions
        .push(crate::probe::kube::Condition {
            kind: "SuccessCriteriaMet".into(),
            status: "True".into(),
            ..Default::default()
        });
    pods[0].status.phase = Some("Succeeded".into());
    let refs: Vec<&KubePod> = pods.iter().collect();
    let r = job_row(&jobs[0], &refs, None, now());
    assert_eq!((r.phase, r.state.as_str()), (Phase::Ending, "Completing"));
    assert_eq!(r.reason_words, None);
}

#[test]
fn other_failure_reasons_in_words() {
    let (mut jobs, pods) = fixture("backoff-failed");
    let refs: Vec<&KubePod> = pods.iter().collect();
    let message = "Container train for pod ml/train-crash-a1a1a failed with exit code 3 \
                   matching FailJob rule at index 0";
    for (reason, msg, want) in [
        ("PodFailurePolicy", message, message.to_string()),
        (
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
            "ran past its activeDeadlineSeconds (3600 s); its pods were ended; last: container \
             train exited with code 3"
                .to_string(),
        ),
    ] {
        jobs[0].spec.active_deadline_seconds = Some(3600);
        for c in &mut jobs[0].status.conditions {
            c.reason = Some(reason.into());
            c.message = Some(msg.into());
        }
        let r = job_row(&jobs[0], &refs, None, now());
        assert_eq!(r.reason.as_deref(), Some(reason));
        assert_eq!(words(&r), want);
    }
}

#[test]
fn an_unschedulable_pod_pends_with_the_schedulers_message() {
    let r = row("unschedulable");
    assert_eq!((r.phase, r.state.as_str()), (Phase::Pending, "Pending"));
    assert_eq!(r.reason.as_deref(), Some("Unschedulable"));
    assert!(
        words(&r).starts_with(
            "no node can take it: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
        ),
        "{}",
        words(&r)
    );
    assert_eq!(r.gpus, Some(8), "asked for, while pending");
    assert_eq!(r.node_list, None);
}

#[test]
fn checkpoints_off_a_pvc_are_a_danger() {
    let r = row("checkpoint-emptydir");
    assert_eq!(
        r.dangers,
        [
            "checkpoints in /ckpt are on emptyDir \"scratch\": lost when the pod is rescheduled; \
          mount a PVC there"
        ]
    );
    assert_eq!(r.severity(), crate::signals::Severity::Warn);

    // A path below the PVC mount is safe; one beside it (/ckptx) is on the container's disk.
    let (jobs, pods) = fixture("running-pvc");
    let refs: Vec<&KubePod> = pods.iter().collect();
    assert!(
        job_row(&jobs[0], &refs, Some("/ckpt/run-7"), now())
            .dangers
            .is_empty()
    );
    let beside = job_row(&jobs[0], &refs, Some("/ckptx"), now());
    assert_eq!(
        beside.dangers,
        [
            "checkpoints in /ckptx are on the container's own filesystem: lost when the pod is \
          rescheduled; mount a PVC there"
        ]
    );
    // No pods yet: the template is judged.
    let none = job_row(&jobs[0], &[], Some("/tmp/ckpt"), now());
    assert_eq!(none.dangers.len(), 1);
    assert_eq!(none.gpus, Some(2));
}

#[test]
fn a_reading_joins_pods_by_label_and_names_errors() {
    let (mut jobs, mut pods) = fixture("running-pvc");
    let (more_jobs, more_pods) = fixture("unschedulable");
    jobs.extend(more_jobs);
    pods.extend(more_pods);
    let cluster = KubeConfig {
        name: "lab".into(),
        context: "lab\u{1b}[31m".into(),
        kubeconfig: None,
        namespace: "ml".into(),
        selector: "rigwatch=train".into(),
        period: std::time::Duration::from_secs(30),
        checkpoints: None,
        nvidia_smi: false,
        pull: None,
    };
    let r = reading(&cluster, Ok((jobs, pods)), now());
    assert_eq!(r.scheduler, Scheduler::Kubernetes);
    assert_eq!(r.via, "lab/ml");
    let ids: Vec<&str> = r.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["train-pvc", "train-big"]);
    assert_eq!(r.jobs[0].pods.len(), 1);
    assert_eq!(r.jobs[1].reason.as_deref(), Some("Unschedulable"));

    let failed = reading(
        &cluster,
        Err("lab: kubectl get jobs: \u{7}denied\nmore".into()),
        now(),
    );
    assert_eq!(
        failed.error.as_deref(),
        Some("lab: kubectl get jobs: deniedmore")
    );
    assert!(failed.jobs.is_empty());
}

#[test]
fn hostile_text_from_kubectl_is_sanitized() {
    let (mut jobs, mut pods) = fixture("evicted");
    jobs[0].metadata.name = "train\u{1b}]0;owned\u{7}".into();
    pods[0].status.message = Some("low \u{1b}[2J on disk\u{202e}".into());
    let refs: Vec<&KubePod> = pods.iter().collect();
    let r = job_row(&jobs[0], &refs, None, now());
    assert_eq!(r.id, "train");
    assert_eq!(words(&r), "a pod was evicted by the kubelet: low  on disk");
}

/// A condition's message is whatever the program wrote: a token in it is masked in the row,
/// so neither a view, an event nor a sink's payload made from the row carries it.
#[test]
fn a_token_in_a_condition_message_is_masked() {
    let (mut jobs, pods) = fixture("backoff-failed");
    let refs: Vec<&KubePod> = pods.iter().collect();
    for c in &mut jobs[0].status.conditions {
        c.reason = Some("PodFailurePolicy".into());
        c.message = Some("upload refused: token=sk-live0123456789abcdefXYZ expired".into());
    }
    let r = job_row(&jobs[0], &refs, None, now());
    assert_eq!(words(&r), "upload refused: token=**** expired");
}

/// Every field named `key`, anywhere in `value`, set to `to`.
fn set_everywhere(value: &mut serde_json::Value, key: &str, to: &serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(v) = map.get_mut(key) {
                *v = to.clone();
            }
            for v in map.values_mut() {
                set_everywhere(v, key, to);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                set_everywhere(v, key, to);
            }
        }
        _ => {}
    }
}

proptest::proptest! {
    /// Hostile values in any field the mapping reads: whatever parses maps without a panic.
    #[test]
    fn mapping_never_panics(
        name in proptest::sample::select(vec![
            "running-pvc", "oom-restarted", "evicted", "backoff-failed", "unschedulable",
            "checkpoint-emptydir",
        ]),
        key in "(phase|reason|message|exitCode|restartCount|mountPath|startTime|finishedAt|\
                 nvidia\\.com/gpu|memory|type|status|backoffLimit|failed|nodeName|name|\
                 lastTransitionTime|volumes|volumeMounts|containers|labels)",
        value in "(null|0|4294967295|-1|\"\"|\"/\"|\"x\\\\u001b\\[2J\"|\"1e9\"|\"True\"|\
                   \"2026-13-99T99:99:99Z\"|\\{\\}|\\[\\])",
        checkpoints in "(/|/ckpt|/ckpt/|//|/ckpt/../x)",
    ) {
        let (jobs, pods) = crate::probe::kube::tests::fixture_lists(name);
        let to: serde_json::Value = serde_json::from_str(&value).expect("a JSON value");
        let mutate = |text: &str| {
            let mut doc: serde_json::Value = serde_json::from_str(text).expect("JSON");
            set_everywhere(&mut doc, &key, &to);
            doc.to_string()
        };
        let jobs = crate::probe::kube::parse_jobs(&mutate(&jobs)).unwrap_or_default();
        let pods = crate::probe::kube::parse_pods(&mutate(&pods)).unwrap_or_default();
        let refs: Vec<&KubePod> = pods.iter().collect();
        for job in &jobs {
            let row = job_row(job, &refs, Some(&checkpoints), now());
            let escape = '\x1b';
            let clean = row.reason_words.iter().all(|w| !w.contains(escape));
            proptest::prop_assert!(clean, "{:?}", row.reason_words);
        }
    }
}

#[test]
fn active_deadline_seconds_is_the_jobs_walltime_clock() {
    let (mut jobs, pods) = fixture("running-pvc");
    // Running two hours of a three-hour deadline.
    jobs[0].spec.active_deadline_seconds = Some(3 * 3600);
    let refs: Vec<&KubePod> = pods.iter().collect();
    let row = job_row(&jobs[0], &refs, Some("/ckpt"), now());
    assert_eq!(row.left, Some(std::time::Duration::from_secs(3600)));
    let mut reading = ClusterReading {
        name: "lab".into(),
        scheduler: Scheduler::Kubernetes,
        via: "ctx/ml".into(),
        jobs: vec![row],
        ended_state_unknown: Vec::new(),
        error: None,
        read_at: now(),
        quota: None,
    };
    reading.judge(now() + chrono::Duration::minutes(10));
    let clock = reading.jobs[0].walltime.as_ref().expect("a clock");
    assert_eq!(clock.remaining_secs, Some(3000));
    assert!(
        clock.message.contains("activeDeadlineSeconds")
            && clock.message.contains("DeadlineExceeded"),
        "{}",
        clock.message
    );
    // An ended Job has no clock.
    let failed = row_of_failed();
    assert_eq!(failed.left, None);
}

fn row_of_failed() -> JobRow {
    let (mut jobs, pods) = fixture("backoff-failed");
    jobs[0].spec.active_deadline_seconds = Some(3600);
    let refs: Vec<&KubePod> = pods.iter().collect();
    job_row(&jobs[0], &refs, None, now())
}
