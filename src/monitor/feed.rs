//! The live fleet feed: both streams per host, link-state forwarding and the provider CLIs'
//! read-only listings, started on one pool. The dashboard and `watch` both read it, so polling
//! is one piece of code whatever shows the result.

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::config::FleetConfig;
use crate::readings::Update;
use crate::transport::{LinkState, Pool};

pub type LinkChanges = mpsc::Receiver<(String, LinkState)>;

pub struct Feed {
    pub pool: Pool,
    /// Readings; taken (`Option::take`) by the loop that waits on them.
    pub updates: Option<mpsc::Receiver<Update>>,
    /// Link states as they change; taken likewise.
    pub links: Option<LinkChanges>,
    tasks: Vec<JoinHandle<()>>,
}

impl Feed {
    pub fn start(pool: Pool, fleet: &FleetConfig) -> Feed {
        let (tx, updates) = mpsc::channel(4096);
        let (link_tx, links) = mpsc::channel(1024);
        let mut tasks = super::providers::spawn(fleet, tx.clone());
        for host in &fleet.hosts {
            let Some(link) = pool.get(&host.name) else {
                continue;
            };
            tasks.extend(super::live::spawn(
                host.clone(),
                link.watch_session(),
                fleet.poll,
                tx.clone(),
            ));
            let mut watch = link.watch_state();
            let (name, link_tx) = (host.name.clone(), link_tx.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let state = watch.borrow_and_update().clone();
                    if link_tx.send((name.clone(), state)).await.is_err()
                        || watch.changed().await.is_err()
                    {
                        return;
                    }
                }
            }));
        }
        Feed {
            pool,
            updates: Some(updates),
            links: Some(links),
            tasks,
        }
    }

    /// Stops every task and says goodbye on every connection.
    pub async fn shutdown(self) {
        for task in self.tasks {
            task.abort();
        }
        self.pool.shutdown().await;
    }
}
