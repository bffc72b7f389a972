//! One host of the fleet, connected through the pool, for the commands that act on one box.

use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{WrapErr, eyre};

use crate::config::{FleetConfig, HostConfig};
use crate::transport::{LinkState, Pool, Session};

/// A host by name; a `[[slurm]]` cluster's name gives its login node (its `[slurm.pull]` is
/// pulled through it, and recorded under the cluster's name).
pub fn host<'a>(fleet: &'a FleetConfig, name: &str) -> color_eyre::Result<&'a HostConfig> {
    let logins = fleet.slurm.iter().map(|c| &c.login);
    let mut all = fleet.hosts.iter().chain(logins);
    all.find(|h| h.name == name).ok_or_else(|| {
        let logins = fleet.slurm.iter().map(|c| c.login.name.as_str());
        let names: Vec<&str> = fleet
            .hosts
            .iter()
            .map(|h| h.name.as_str())
            .chain(logins)
            .collect();
        super::usage(format!(
            "no host named {name:?} in {}; there are: {}",
            fleet.path.display(),
            names.join(", ")
        ))
    })
}

/// Connects to one host; the pool is returned so the caller can shut it down cleanly.
pub async fn connect(
    fleet: &FleetConfig,
    host: &HostConfig,
    timeout: Duration,
) -> color_eyre::Result<(Pool, Arc<Session>)> {
    let one = FleetConfig {
        hosts: vec![host.clone()],
        ..fleet.clone()
    };
    let pool = Pool::start_for_pulls(&one);
    let states = pool.settle(timeout).await;
    let session = pool.get(&host.name).and_then(|l| l.session());
    match session {
        Some(s) => Ok((pool, s)),
        None => {
            let state = match states.first().map(|(_, s)| s) {
                Some(
                    LinkState::Down { reason, .. }
                    | LinkState::AuthRefused { reason, .. }
                    | LinkState::HostkeyRefused { reason, .. },
                ) => reason.clone(),
                Some(other) => other.word().to_string(),
                None => "unknown".to_string(),
            };
            pool.shutdown().await;
            Err(eyre!("{}: not reachable: {state}", host.name))
                .wrap_err_with(|| format!("connecting to {}", host.name))
        }
    }
}
