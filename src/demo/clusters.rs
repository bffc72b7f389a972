//! The demo's clusters: a Slurm queue replayed from the real capture of the one-node test
//! cluster (tests/fixtures/slurm/later.txt) through squeue's parser and the same job rows as a
//! live cluster: a job in its last ten minutes of walltime, one requeued and pending, one killed
//! at its walltime, one failed with exit code 3. And a Kubernetes namespace from the
//! hand-written fixtures the kubectl tests serve (tests/fixtures/kubernetes, sources in its
//! README), through kubectl's parsers: a Job whose container was OOMKilled and restarted, and
//! one whose checkpoints are on an emptyDir (lost on reschedule).

use chrono::{DateTime, Utc};

use crate::cluster::{ClusterReading, Scheduler};
use crate::config::kubernetes::KubeConfig;
use crate::probe::kube::{parse_jobs, parse_pods};
use crate::probe::squeue::parse_squeue_rows;

const SQUEUE_LATER: &str = include_str!("../../tests/fixtures/slurm/later.txt");
/// The separator the capture was taken with (its README gives the command).
const SEP: &str = "~rw5f0c2e9a7b1d3846~";
/// The jobs of the capture the demo shows, by name.
const SHOWN: [&str; 4] = ["requeue-me", "train-gpu", "walltime", "exits-3"];

/// The demo's Slurm cluster as read at `now`; a capture that stopped parsing shows as a
/// cluster that could not be read, never as a panic.
pub fn slurm(now: DateTime<Utc>) -> ClusterReading {
    let (jobs, error) = match parse_squeue_rows(SQUEUE_LATER, SEP) {
        Ok(rows) => {
            let mut rows: Vec<_> = rows
                .into_iter()
                .filter(|r| SHOWN.contains(&r.name.as_str()))
                .collect();
            rows.sort_by_key(|r| SHOWN.iter().position(|n| *n == r.name));
            (
                rows.into_iter()
                    .map(crate::cluster::slurm::job_row)
                    .collect(),
                None,
            )
        }
        Err(e) => (
            Vec::new(),
            Some(format!("hpc: the demo's squeue capture: {e}")),
        ),
    };
    let mut reading = ClusterReading {
        name: "hpc".into(),
        scheduler: Scheduler::Slurm,
        via: "demo@login.hpc.example".into(),
        jobs,
        ended_state_unknown: Vec::new(),
        error,
        read_at: now,
        quota: None,
    };
    reading.judge(now);
    reading
}

const KUBE_FIXTURES: [&str; 2] = [
    include_str!("../../tests/fixtures/kubernetes/oom-restarted.json"),
    include_str!("../../tests/fixtures/kubernetes/checkpoint-emptydir.json"),
];

/// The fixtures' items of `kind` as one `kind: List`, as `kubectl get … -o json` prints it.
fn list_of(kind: &str) -> String {
    let items: Vec<serde_json::Value> = KUBE_FIXTURES
        .iter()
        .filter_map(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .flat_map(|doc| doc["items"].as_array().cloned().unwrap_or_default())
        .filter(|item| item["kind"] == kind)
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// The demo's Kubernetes namespace as read at `now`.
pub fn kubernetes(now: DateTime<Utc>) -> ClusterReading {
    let cluster = KubeConfig {
        name: "k8s".into(),
        context: "demo".into(),
        kubeconfig: None,
        namespace: "ml".into(),
        selector: "rigwatch=train".into(),
        period: std::time::Duration::from_secs(30),
        checkpoints: Some("/ckpt".into()),
        nvidia_smi: false,
        pull: None,
    };
    let listed = parse_jobs(&list_of("Job"))
        .and_then(|jobs| Ok((jobs, parse_pods(&list_of("Pod"))?)))
        .map_err(|e| format!("k8s: the demo's fixtures: {e}"));
    crate::cluster::kubernetes::reading(&cluster, listed, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Phase;

    #[test]
    fn the_demo_cluster_shows_each_kind_of_job_from_the_capture() {
        let now = Utc::now();
        let r = slurm(now);
        assert!(r.error.is_none(), "{:?}", r.error);
        let phases: Vec<(&str, Phase)> =
            r.jobs.iter().map(|j| (j.name.as_str(), j.phase)).collect();
        assert_eq!(
            phases,
            [
                ("requeue-me", Phase::Running),
                ("train-gpu", Phase::Pending),
                ("walltime", Phase::Failed),
                ("exits-3", Phase::Failed),
            ]
        );
        let clock = r.jobs[0].walltime.as_ref().and_then(|c| c.remaining_secs);
        assert_eq!(clock, Some(9 * 60 + 57), "TimeLeft 9:57 in the capture");
    }

    #[test]
    fn the_demo_namespace_shows_an_oom_and_a_checkpoint_off_a_pvc() {
        let r = kubernetes(Utc::now());
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.jobs.len(), 2, "{:?}", r.jobs);
        let words: Vec<String> = r
            .jobs
            .iter()
            .filter_map(|j| j.reason_words.clone())
            .collect();
        assert!(words.iter().any(|w| w.contains("16Gi")), "{words:?}");
        assert!(
            r.jobs
                .iter()
                .any(|j| j.dangers.iter().any(|d| d.contains("emptyDir"))),
            "{:?}",
            r.jobs
        );
    }
}
