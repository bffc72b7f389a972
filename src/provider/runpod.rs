//! RunPod through its CLI, `runpodctl` (v2, runpod/runpodctl).
//!
//! Shape sources (read August 2026):
//! - `runpodctl pod list --all` prints a JSON array (JSON is the default `-o` format since v2.0)
//!   of `{id, name, desiredStatus, imageName, gpuId, gpuCount, volumeInGb, costPerHr, createdAt}`
//!   with keys sorted; `costPerHr`, `gpuId`, `createdAt` are omitted when empty
//!   (runpodctl `cmd/pod/list.go`, `internal/output/output.go`; docs.runpod.io/runpodctl/
//!   reference/runpodctl-pod). Without `--all` only running pods are listed (since v2.1.0), and
//!   stopped pods are the ones that matter here. runpodctl 1.x has no JSON listing
//!   (`runpodctl get pod` prints a table), so it fails as an unknown command.
//! - `runpodctl pod get ID` prints one full REST pod (plus `ssh`); GET rest.runpod.io/v1/pods
//!   returns an array of them (docs.runpod.io/api-reference/openapi.json, schema `Pod`):
//!   `desiredStatus` RUNNING | EXITED | TERMINATED, `costPerHr` (number; the documented example
//!   is the string "0.74"), `adjustedCostPerHr` (after Savings Plans), `lastStatusChange`
//!   ("Rented by User: Fri Jul 12 2024 15:14:40 GMT-0400 (Eastern Daylight Time)"),
//!   `lastStartedAt` (RFC 3339). Both shapes parse here.
//! - EXITED is RunPod's stopped state (`stop` leaves the pod EXITED). A stopped pod bills its
//!   volume disk at $0.20/GB/month (docs.runpod.io/pods/pricing), but no field reports that
//!   figure, so `stopped_price_per_hour` is None: the rate belongs in the profile, not here.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::{InstanceState, ProviderError, ProviderState};

/// Lowercase fragments meaning "no usable API key": v2 prints
/// `{"error":"api key not configured. …"}` on stderr and exits 1 (`internal/api/client.go`); a
/// rejected key comes back as `api error: … (status 401)`; 1.x printed "API key not found".
pub(super) const NOT_CONFIGURED: &[&str] = &[
    "api key not configured",
    "api key not found",
    "(status 401)",
    "(status 403)",
];

/// `runpodctl pod list --all -o json`: every pod, stopped ones included, read-only.
pub fn list_argv() -> Vec<String> {
    ["pod", "list", "--all", "-o", "json"]
        .map(String::from)
        .to_vec()
}

/// The fields rigwatch reads from a pod; the rest are ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pod {
    #[serde(deserialize_with = "super::required_id")]
    id: String,
    #[serde(default, deserialize_with = "super::loose_string")]
    name: Option<String>,
    #[serde(default, deserialize_with = "super::loose_string")]
    desired_status: Option<String>,
    #[serde(default, deserialize_with = "super::loose_f64")]
    cost_per_hr: Option<f64>,
    #[serde(default, deserialize_with = "super::loose_f64")]
    adjusted_cost_per_hr: Option<f64>,
    #[serde(default, deserialize_with = "super::loose_string")]
    last_status_change: Option<String>,
    #[serde(default, deserialize_with = "super::loose_string")]
    last_started_at: Option<String>,
    /// The REST shape: the public address and `{"22": 10341}` for the TCP port of sshd.
    #[serde(default, deserialize_with = "super::loose_string")]
    public_ip: Option<String>,
    #[serde(default)]
    port_mappings: serde_json::Value,
}

/// Parses `pod list` (an array), `pod get ID` (one object) or the REST list.
pub fn parse_list(json: &str, source: &str) -> Result<Vec<ProviderState>, ProviderError> {
    let pods: Vec<Pod> = super::parse_rows(json, source)?;
    Ok(pods.into_iter().map(state_of).collect())
}

fn state_of(pod: Pod) -> ProviderState {
    let state = match pod.desired_status.as_deref() {
        Some("RUNNING") => InstanceState::Running,
        Some("EXITED") => InstanceState::Stopped,
        Some("TERMINATED") => InstanceState::Destroyed,
        Some(other) => InstanceState::Other(other.to_string()),
        None => InstanceState::Other("unknown".to_string()),
    };
    // The last lifecycle event dates the current state; failing that, a running pod's start.
    let since = pod
        .last_status_change
        .as_deref()
        .and_then(status_change_time)
        .or_else(|| match (&state, pod.last_started_at.as_deref()) {
            (InstanceState::Running, Some(started)) => DateTime::parse_from_rfc3339(started).ok(),
            _ => None,
        });
    // Savings Plans lower the effective price; a zero is "not reported" (runpodctl omits it).
    let price = pod
        .adjusted_cost_per_hr
        .or(pod.cost_per_hr)
        .filter(|p| *p > 0.0);
    let ssh = match (
        pod.public_ip,
        pod.port_mappings.get("22").and_then(super::port_of),
    ) {
        (Some(host), Some(port)) => vec![super::SshEndpoint { host, port }],
        _ => Vec::new(),
    };
    ProviderState {
        instance_id: pod.id,
        state,
        price_per_hour: price,
        stopped_price_per_hour: None,
        state_since: since.map(|t| t.with_timezone(&Utc)),
        ends_at: None,
        label: pod.name,
        ssh,
    }
}

/// "Rented by User: Fri Jul 12 2024 15:14:40 GMT-0400 (Eastern Daylight Time)" → its instant.
fn status_change_time(text: &str) -> Option<DateTime<chrono::FixedOffset>> {
    let (_event, when) = text.split_once(": ")?;
    let when = when.split(" (").next()?;
    DateTime::parse_from_str(when.trim(), "%a %b %d %Y %H:%M:%S GMT%z").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = include_str!("../../tests/fixtures/providers/runpodctl_pods.json");

    fn parse(json: &str) -> Result<Vec<ProviderState>, ProviderError> {
        parse_list(json, "runpodctl pod list --all -o json")
    }

    #[test]
    fn shipped_fixture_has_a_running_and_an_exited_pod() -> Result<(), ProviderError> {
        let states = parse(SHIPPED)?;
        assert_eq!(states.len(), 2);
        assert_eq!(states[0].instance_id, "x7k2m9q4wv1abc");
        assert_eq!(states[0].state, InstanceState::Running);
        assert_eq!(states[0].price_per_hour, Some(0.69));
        assert_eq!(states[0].label.as_deref(), Some("finetune-a"));
        assert_eq!(states[1].instance_id, "p3r8t5y2zn6def");
        assert_eq!(states[1].state, InstanceState::Stopped);
        assert_eq!(states[1].price_per_hour, None);
        assert!(states.iter().all(|s| s.stopped_price_per_hour.is_none()));
        assert!(states.iter().all(|s| s.state_since.is_none()));
        Ok(())
    }

    #[test]
    fn full_rest_pod_dates_its_state_and_prefers_the_adjusted_price() -> Result<(), ProviderError> {
        // Trimmed from the List Pods example at docs.runpod.io/api-reference (costPerHr a string).
        let one = r#"{"adjustedCostPerHr": 0.69, "costPerHr": "0.74", "desiredStatus": "EXITED",
            "id": "xedezhzb9la3ye", "lastStartedAt": "2024-07-12T19:14:40.144Z",
            "lastStatusChange": "Exited by User: Sat Jul 13 2024 09:00:05 GMT-0400 (Eastern Daylight Time)",
            "machine": {"podHostId": "xedezhzb9la3ye-64410c4b"}, "ssh": {"error": "pod not ready"}}"#;
        let state = &parse(one)?[0];
        assert_eq!(state.state, InstanceState::Stopped);
        assert_eq!(state.price_per_hour, Some(0.69));
        let since = state.state_since.map(|t| t.to_rfc3339());
        assert_eq!(since.as_deref(), Some("2024-07-13T13:00:05+00:00"));
        Ok(())
    }

    #[test]
    fn a_running_pod_without_a_readable_event_counts_from_its_start() -> Result<(), ProviderError> {
        let json = r#"[{"id": "a", "desiredStatus": "RUNNING", "costPerHr": 0.5,
            "lastStatusChange": "Rented by User", "lastStartedAt": "2024-07-12T19:14:40Z"},
            {"id": "b", "desiredStatus": "EXITED", "lastStartedAt": "2024-07-12T19:14:40Z"},
            {"id": "c", "desiredStatus": "TERMINATED"}, {"id": "d", "desiredStatus": "PAUSED"},
            {"id": "e"}]"#;
        let states = parse(json)?;
        let since = states[0].state_since.map(|t| t.to_rfc3339());
        assert_eq!(since.as_deref(), Some("2024-07-12T19:14:40+00:00"));
        assert_eq!(states[1].state_since, None);
        assert_eq!(states[2].state, InstanceState::Destroyed);
        assert_eq!(states[3].state, InstanceState::Other("PAUSED".into()));
        assert_eq!(states[4].state, InstanceState::Other("unknown".into()));
        Ok(())
    }

    #[test]
    fn garbage_and_bad_ids_are_located_errors() {
        for (json, line) in [
            ("", 1),
            ("{\"error\":\"api key not configured\"", 1),
            ("[\n  {\"id\": \"\"}\n]", 2),
            ("[1]", 1),
        ] {
            match parse(json) {
                Err(ProviderError::Parse {
                    command, line: at, ..
                }) => {
                    assert_eq!(command, "runpodctl pod list --all -o json");
                    assert_eq!(at, line, "{json:?}");
                }
                other => panic!("{json:?} gave {other:?}"),
            }
        }
    }
}
