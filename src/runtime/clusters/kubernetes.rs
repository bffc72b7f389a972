//! A `[[kubernetes]]` namespace read: its watched Jobs and their pods, two kubectl calls at
//! once (never one per Job), turned into a [`ClusterReading`]. Live, each cluster is a task
//! that sends a reading per period.

use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;

use crate::cluster::ClusterReading;
use crate::config::KubeConfig;
use crate::probe::kube::{parse_jobs, parse_pods};
use crate::transport::kubectl::{get_jobs, get_pods};

/// One read of `cluster`'s Jobs and pods, within `timeout` in all.
pub async fn read_kubernetes(cluster: &KubeConfig, timeout: Duration) -> ClusterReading {
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
    crate::cluster::kubernetes::reading(cluster, listed, Utc::now())
}

/// Reads the cluster each period until the receiver is gone. A read never takes more than
/// the period, so reads never pile up.
pub(super) async fn poll_kubernetes(cluster: KubeConfig, tx: mpsc::Sender<ClusterReading>) {
    let period = cluster.period.max(Duration::from_secs(1));
    let mut every = tokio::time::interval(period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let reading = read_kubernetes(&cluster, period).await;
        if tx.send(reading).await.is_err() {
            return;
        }
    }
}
