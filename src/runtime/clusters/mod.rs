//! Clusters read for the runtime and for `status`: each `[[slurm]]` login node reached through
//! a pool of its own, one `squeue` for all of the user's jobs at the cluster's period (never one
//! call per job), turned into a [`ClusterReading`]. Live, every cluster is a task that sends a
//! reading per period; `status` reads each once. Each `[[kubernetes]]` namespace is read
//! through kubectl (`kubernetes`), and each `[[kaggle]]` member through the kaggle CLI
//! (`kaggle`), alongside.

mod kaggle;
mod kubernetes;

pub use kaggle::{Remember, read_kaggle};
pub use kubernetes::read_kubernetes;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::cluster::ClusterReading;
use crate::config::FleetConfig;
use crate::config::slurm::SlurmConfig;
use crate::transport::{Pool, Session};

/// The login nodes as hosts a pool connects to.
fn logins(fleet: &FleetConfig) -> FleetConfig {
    FleetConfig {
        hosts: fleet.slurm.iter().map(|c| c.login.clone()).collect(),
        ..fleet.clone()
    }
}

/// Reads every cluster's queue once, within `timeout` in all (connection and squeue).
pub async fn read(fleet: &FleetConfig, timeout: Duration) -> Vec<ClusterReading> {
    let kube = fleet
        .kubernetes
        .iter()
        .map(|cluster| read_kubernetes(cluster, timeout));
    let kaggle = fleet
        .kaggle
        .iter()
        .map(|member| read_kaggle(member, timeout, kaggle::Remember::Nothing));
    let (mut readings, kube, kaggle) = tokio::join!(
        read_slurm_all(fleet, timeout),
        futures::future::join_all(kube),
        futures::future::join_all(kaggle)
    );
    readings.extend(kube);
    readings.extend(kaggle);
    readings
}

async fn read_slurm_all(fleet: &FleetConfig, timeout: Duration) -> Vec<ClusterReading> {
    if fleet.slurm.is_empty() {
        return Vec::new();
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let pool = Pool::start(&logins(fleet));
    pool.settle(timeout).await;
    let reads = fleet.slurm.iter().map(|cluster| {
        let session = pool.get(&cluster.login.name).and_then(|l| l.session());
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        async move {
            let timeout = left.max(Duration::from_millis(100));
            crate::cluster::slurm::read(cluster, session.as_deref(), timeout).await
        }
    });
    let readings = futures::future::join_all(reads).await;
    pool.shutdown().await;
    readings
}

/// The live clusters: a pool of login nodes and a task per cluster sending a reading each
/// period.
pub struct Clusters {
    pool: Option<Pool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Clusters {
    /// Starts reading every cluster of `fleet`; readings arrive on the receiver.
    pub fn start(fleet: &FleetConfig) -> (Clusters, Option<mpsc::Receiver<ClusterReading>>) {
        if fleet.slurm.is_empty() && fleet.kubernetes.is_empty() && fleet.kaggle.is_empty() {
            let none = Clusters {
                pool: None,
                tasks: Vec::new(),
            };
            return (none, None);
        }
        let (tx, rx) = mpsc::channel(64);
        // Kubernetes needs no pool: kubectl reaches the API server itself.
        let pool = (!fleet.slurm.is_empty()).then(|| Pool::start(&logins(fleet)));
        let mut tasks: Vec<JoinHandle<()>> = fleet
            .slurm
            .iter()
            .filter_map(|cluster| {
                let sessions = pool.as_ref()?.get(&cluster.login.name)?.watch_session();
                Some(tokio::spawn(poll_slurm(
                    cluster.clone(),
                    sessions,
                    tx.clone(),
                )))
            })
            .collect();
        tasks.extend(fleet.kubernetes.iter().cloned().map(|cluster| {
            let period = cluster.period;
            let read = move |t| {
                let cluster = cluster.clone();
                async move { read_kubernetes(&cluster, t).await }
            };
            tokio::spawn(poll(period, period, read, tx.clone()))
        }));
        // A Kaggle read is bounded well under its period: a public API that answers or not.
        tasks.extend(fleet.kaggle.iter().cloned().map(|member| {
            let period = member.period;
            let read = move |t| {
                let member = member.clone();
                async move { read_kaggle(&member, t, kaggle::Remember::Runs).await }
            };
            let limit = period.min(Duration::from_secs(120));
            tokio::spawn(poll(period, limit, read, tx.clone()))
        }));
        (Clusters { pool, tasks }, Some(rx))
    }

    /// The login node's pooled session of `cluster`, when its link is up.
    pub fn session(&self, cluster: &str) -> Option<Arc<Session>> {
        self.pool.as_ref()?.get(cluster)?.session()
    }

    pub async fn shutdown(self) {
        for task in &self.tasks {
            task.abort();
        }
        if let Some(pool) = self.pool {
            pool.shutdown().await;
        }
    }
}

/// Reads with `read` (given `limit`, at most the period, for its whole read) each `period`
/// until the receiver is gone: a read never takes more than the period, so reads never pile
/// up.
async fn poll<F, Fut>(period: Duration, limit: Duration, read: F, tx: mpsc::Sender<ClusterReading>)
where
    F: Fn(Duration) -> Fut,
    Fut: std::future::Future<Output = ClusterReading>,
{
    let period = period.max(Duration::from_secs(1));
    let mut every = tokio::time::interval(period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if tx.send(read(limit.min(period)).await).await.is_err() {
            return;
        }
    }
}

/// Reads the cluster each period, once its login node is up, until the receiver is gone. A
/// read never takes more than the period, so reads never pile up.
async fn poll_slurm(
    cluster: SlurmConfig,
    mut sessions: watch::Receiver<Option<Arc<Session>>>,
    tx: mpsc::Sender<ClusterReading>,
) {
    let period = cluster.period.max(Duration::from_secs(1));
    // The first read waits for the first connect (or its failure) at most one period.
    let _ = tokio::time::timeout(period, sessions.wait_for(Option::is_some)).await;
    let mut every = tokio::time::interval(period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Jobs the last read showed live: one that is gone from the next is asked of accounting.
    let mut live: Vec<String> = Vec::new();
    loop {
        every.tick().await;
        let session = sessions.borrow().clone();
        let reading =
            crate::cluster::slurm::read_after(&cluster, session.as_deref(), period, &live).await;
        if reading.error.is_none() {
            live = reading
                .jobs
                .iter()
                .filter(|j| !j.phase.is_over())
                .map(|j| j.id.clone())
                .collect();
        }
        if tx.send(reading).await.is_err() {
            return;
        }
    }
}
