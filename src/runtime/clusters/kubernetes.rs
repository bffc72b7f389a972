//! A `[[kubernetes]]` namespace read: its watched Jobs and their pods, two kubectl calls at
//! once (never one per Job), turned into a [`ClusterReading`]; with `nvidia_smi = true`, then
//! each running pod's GPUs read inside it (`kubectl exec`, all at once, at most
//! [`MAX_EXECS`]). Live, each cluster is a task that sends a reading per period.

use std::time::Duration;

use chrono::Utc;
use tokio::time::Instant;

use crate::cluster::ClusterReading;
use crate::cluster::pod_gpus::{POD_GPU_FIELDS, attach};
use crate::config::KubeConfig;
use crate::probe::kube::{KubeJob, KubePod, parse_jobs, parse_pods};
use crate::probe::parse_gpu_query;
use crate::transport::kubectl::{exec, get_jobs, get_pods};

/// The most pods exec'd into per read: each is a process in the user's pod and a stream
/// through the API server.
pub const MAX_EXECS: usize = 16;

/// One read of `cluster`'s Jobs and pods, within `timeout` in all.
pub async fn read_kubernetes(cluster: &KubeConfig, timeout: Duration) -> ClusterReading {
    let deadline = Instant::now() + timeout;
    let read = async {
        let (jobs, pods) = tokio::join!(get_jobs(cluster, timeout), get_pods(cluster, timeout));
        let named = |e: crate::probe::ParseError| format!("{}: {e}", cluster.name);
        let jobs = parse_jobs(&jobs.map_err(|e| e.to_string())?).map_err(named)?;
        let pods = parse_pods(&pods.map_err(|e| e.to_string())?).map_err(named)?;
        Ok((jobs, pods))
    };
    let listed = match tokio::time::timeout(timeout, read).await {
        Ok(listed) => listed,
        Err(_) => Err(format!(
            "{}: kubectl: no answer within {:.1}s",
            cluster.name,
            timeout.as_secs_f64()
        )),
    };
    let targets = match (&listed, cluster.nvidia_smi) {
        (Ok((jobs, pods)), true) => exec_targets(jobs, pods),
        _ => Vec::new(),
    };
    let mut reading = crate::cluster::kubernetes::reading(cluster, listed, Utc::now());
    let left = deadline.saturating_duration_since(Instant::now());
    for (pod, read) in read_pod_gpus(cluster, targets, left).await {
        attach(&mut reading, &pod, read);
    }
    reading
}

/// The running pods of the listed Jobs, with their first container: (pod, container).
fn exec_targets(jobs: &[KubeJob], pods: &[KubePod]) -> Vec<(String, String)> {
    pods.iter()
        .filter(|p| p.status.phase.as_deref() == Some("Running"))
        .filter(|p| {
            p.job_name()
                .is_some_and(|j| jobs.iter().any(|job| job.metadata.name == j))
        })
        .filter_map(|p| {
            let container = p.spec.containers.first()?;
            Some((p.metadata.name.clone(), container.name.clone()))
        })
        .take(MAX_EXECS)
        .collect()
}

/// nvidia-smi inside each target, all at once, within `timeout`.
async fn read_pod_gpus(
    cluster: &KubeConfig,
    targets: Vec<(String, String)>,
    timeout: Duration,
) -> Vec<(String, Result<Vec<crate::probe::GpuSample>, String>)> {
    let query = format!("--query-gpu={}", POD_GPU_FIELDS.join(","));
    let reads = targets.into_iter().map(|(pod, container)| {
        let query = query.clone();
        async move {
            let command = ["nvidia-smi", &query, "--format=csv,noheader,nounits"];
            let read = match exec(cluster, &pod, &container, &command, timeout).await {
                Ok(text) => parse_gpu_query(POD_GPU_FIELDS, &text).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            (pod, read)
        }
    });
    futures::future::join_all(reads).await
}
