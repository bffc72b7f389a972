//! Asking the providers' CLIs (read-only list calls) about the fleet's boxes: once for
//! `rigwatch status`, and every `providers.poll_secs` in the background for the dashboard.
//! One call per provider, however many of its boxes the fleet holds.

use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::config::FleetConfig;
use crate::provider::{Provider, ProviderError, ProviderReport, query, report_for};
use crate::readings::{Observation, Update};

/// A CLI that hangs (network, a prompt) is given up on after this long.
const QUERY_TIMEOUT: Duration = Duration::from_secs(20);
/// A CLI that is not installed is looked for again this rarely.
const NOT_INSTALLED_RECHECK: Duration = Duration::from_secs(600);

/// One provider, the CLI to ask, and the fleet's hosts (name, instance id) it rents.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderHosts {
    pub provider: Provider,
    pub program: PathBuf,
    pub hosts: Vec<(String, String)>,
}

/// Which providers to ask, about which hosts: those whose profile has a provider CLI and
/// whose `instance_id` is set.
pub fn plan(fleet: &FleetConfig) -> Vec<ProviderHosts> {
    let mut out: Vec<ProviderHosts> = Vec::new();
    for host in &fleet.hosts {
        let (Some(provider), Some(id)) = (
            Provider::from_platform(&host.profile),
            host.instance_id.as_ref(),
        ) else {
            continue;
        };
        let entry = (host.name.clone(), id.clone());
        match out.iter_mut().find(|p| p.provider == provider) {
            Some(p) => p.hosts.push(entry),
            None => {
                let configured = match provider {
                    Provider::Vastai => fleet.providers.vastai.clone(),
                    Provider::Runpod => fleet.providers.runpod.clone(),
                };
                out.push(ProviderHosts {
                    provider,
                    program: configured
                        .unwrap_or_else(|| PathBuf::from(provider.default_program())),
                    hosts: vec![entry],
                });
            }
        }
    }
    out
}

/// Runs one provider's list call; a report for each of its hosts, and whether the CLI exists.
pub async fn ask(plan: &ProviderHosts) -> (Vec<(String, ProviderReport)>, bool) {
    let listing = query(plan.provider, &plan.program, QUERY_TIMEOUT).await;
    let installed = !matches!(listing, Err(ProviderError::NotInstalled { .. }));
    let now = Utc::now();
    let reports = plan
        .hosts
        .iter()
        .map(|(host, id)| (host.clone(), report_for(plan.provider, &listing, id, now)))
        .collect();
    (reports, installed)
}

/// Every provider of the fleet asked at once, for a one-shot status.
pub async fn ask_all(fleet: &FleetConfig) -> Vec<(String, ProviderReport)> {
    let plans = plan(fleet);
    let answers = futures::future::join_all(plans.iter().map(ask)).await;
    answers.into_iter().flat_map(|(r, _)| r).collect()
}

/// Keeps asking in the background; each report goes out as an observation of its host.
pub fn spawn(fleet: &FleetConfig, tx: mpsc::Sender<Update>) -> Vec<JoinHandle<()>> {
    let every = fleet.providers.poll;
    plan(fleet)
        .into_iter()
        .map(|plan| {
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    let (reports, installed) = ask(&plan).await;
                    for (host, report) in reports {
                        let update = Update {
                            host,
                            observation: Observation::Provider(report),
                        };
                        if tx.send(update).await.is_err() {
                            return;
                        }
                    }
                    let wait = if installed {
                        every
                    } else {
                        NOT_INSTALLED_RECHECK
                    };
                    tokio::time::sleep(wait).await;
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_per_provider_for_hosts_with_an_instance_id() {
        let text = r#"
[providers]
vastai = "/opt/shims/vastai"

[[host]]
name = "a"
ssh = "a.example"
profile = "vastai"
instance_id = "1"

[[host]]
name = "b"
ssh = "b.example"
profile = "vastai"
instance_id = "2"

[[host]]
name = "c"
ssh = "c.example"
profile = "runpod"
instance_id = "pod"

[[host]]
name = "d"
ssh = "d.example"
profile = "runpod"

[[host]]
name = "e"
ssh = "e.example"
profile = "lambda"
instance_id = "3"
"#;
        let fleet =
            crate::config::fleet::parse(std::path::Path::new("fleet.toml"), text).expect("parses");
        let plans = plan(&fleet);
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[0].provider, Provider::Vastai);
        assert_eq!(plans[0].program, PathBuf::from("/opt/shims/vastai"));
        assert_eq!(plans[0].hosts.len(), 2);
        assert_eq!(plans[1].program, PathBuf::from("runpodctl"));
        assert_eq!(plans[1].hosts, vec![("c".to_string(), "pod".to_string())]);
    }
}
