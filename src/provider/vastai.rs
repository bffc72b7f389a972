//! vast.ai through its CLI, `vastai` (the vast-ai/vast-cli Python package).
//!
//! Shape sources (read August 2026):
//! - `vastai show instances --raw` prints a flat JSON array of full instance rows, every page of
//!   `GET /api/v1/instances/` joined (vast-cli `vastai/api/instances.py::show_instances`), as
//!   `json.dumps(rows, indent=1, sort_keys=True)` (`vastai/cli/main.py::run_command`).
//!   `vastai show instance ID --raw` prints the one row, or `{"instances": null}` once the id is
//!   gone (`vastai/cli/commands/instances.py::show__instance`).
//! - Field meanings: docs.vast.ai/cli/reference/show-instances and the OpenAPI files
//!   `api-reference/openapi/yaml/show_instances.yaml`, `show_instance.yaml` (vast-ai/docs):
//!   `actual_status` (container: null while provisioning, loading, running, stopped, frozen,
//!   exited, rebooting, unknown, offline), `intended_status`, `cur_state` (contract: running,
//!   stopped, unloaded = released on destroy), `label`, `dph_total`, `storage_cost`,
//!   `storage_total_cost`, `disk_space`, `start_date` and `end_date` (epoch seconds; the CLI's
//!   own table shows `end_date - now` as "Max Days": the host's lifetime end for the rental).
//! - Prices: `dph_total` = `dph_base` + `storage_total_cost` (the docs' example: 1.0 +
//!   0.0020740… = 1.0020740…), so it is the running price with the disk in it.
//!   `storage_total_cost` is the disk's $/hour = `storage_cost` ($/GB/month, per the CLI's own
//!   field list) × `disk_space` (GB) / 720 h (both documented examples: 0.149333 × 10 / 720 =
//!   0.0020740…, 0.15 × 10.08 / 720 = 0.0021). A stopped instance bills exactly that ("Disk
//!   charges continue; no GPU charges"). Bandwidth bills per GB, not per hour: not included.
//! - No field says when the current state began (`start_date` is the rental's start), so
//!   `state_since` is None and rigwatch counts from what it observed.

use serde::Deserialize;

use super::{InstanceState, ProviderError, ProviderState};

/// Lowercase fragments meaning "no usable API key". The CLI sends the request anyway and the
/// server answers 401 (403 for a key without the scope); with `--raw` the CLI prints
/// `{"error": true, "status_code": 401, "msg": …}` on stderr, older releases print
/// `Failed with error 401: …` on stdout, and both exit 0 (vast-cli `vastai/cli/main.py`,
/// `vast.py`). Recent releases add "No API key is configured." (vast-cli PR #492).
pub(super) const NOT_CONFIGURED: &[&str] = &[
    "\"status_code\": 401",
    "\"status_code\": 403",
    "failed with error 401",
    "failed with error 403",
    "no api key",
];

/// `vastai show instances --raw`: every instance, read-only.
pub fn list_argv() -> Vec<String> {
    ["show", "instances", "--raw"].map(String::from).to_vec()
}

/// The fields rigwatch reads from an instance row; the rest are ignored.
#[derive(Deserialize)]
struct Row {
    #[serde(deserialize_with = "super::required_id")]
    id: String,
    #[serde(default, deserialize_with = "super::loose_string")]
    actual_status: Option<String>,
    #[serde(default, deserialize_with = "super::loose_string")]
    cur_state: Option<String>,
    #[serde(default, deserialize_with = "super::loose_string")]
    label: Option<String>,
    #[serde(default, deserialize_with = "super::loose_f64")]
    dph_total: Option<f64>,
    #[serde(default, deserialize_with = "super::loose_f64")]
    storage_total_cost: Option<f64>,
    #[serde(default, deserialize_with = "super::loose_f64")]
    storage_cost: Option<f64>,
    #[serde(default, deserialize_with = "super::loose_f64")]
    disk_space: Option<f64>,
    /// Epoch seconds: the host's lifetime end for this rental.
    #[serde(default, deserialize_with = "super::loose_f64")]
    end_date: Option<f64>,
    #[serde(default, deserialize_with = "super::loose_string")]
    ssh_host: Option<String>,
    #[serde(default)]
    ssh_port: serde_json::Value,
    #[serde(default, deserialize_with = "super::loose_string")]
    public_ipaddr: Option<String>,
    /// Docker's map: `{"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": "21001"}]}`.
    #[serde(default)]
    ports: serde_json::Value,
}

/// Hours in the month vast.ai's $/GB/month storage price is divided by (see the module notes).
const HOURS_PER_STORAGE_MONTH: f64 = 720.0;

/// Parses `show instances --raw` (an array) or `show instance ID --raw` (one row, or
/// `{"instances": null}` for a gone id, which yields no rows).
pub fn parse_list(json: &str, source: &str) -> Result<Vec<ProviderState>, ProviderError> {
    let gone = json.trim_start().starts_with('{')
        && serde_json::from_str::<serde_json::Value>(json)
            .is_ok_and(|v| v == serde_json::json!({ "instances": null }));
    if gone {
        return Ok(Vec::new());
    }
    let rows: Vec<Row> = super::parse_rows(json, source)?;
    Ok(rows.into_iter().map(state_of).collect())
}

fn state_of(row: Row) -> ProviderState {
    let state = match (row.cur_state.as_deref(), row.actual_status.as_deref()) {
        (Some("unloaded"), _) => InstanceState::Destroyed,
        (_, None | Some("loading" | "rebooting")) => InstanceState::Starting,
        (_, Some("running")) => InstanceState::Running,
        (_, Some("stopped")) => InstanceState::Stopped,
        (_, Some("exited" | "offline" | "unknown")) => InstanceState::Exited,
        // `frozen` (paused, memory kept, GPU still billed) and anything newer.
        (_, Some(other)) => InstanceState::Other(other.to_string()),
    };
    let disk_per_hour = row
        .storage_total_cost
        .or_else(|| Some(row.storage_cost? * row.disk_space? / HOURS_PER_STORAGE_MONTH));
    // The proxy (`ssh -p ssh_port root@ssh_host`) and the direct port on the public address.
    let mut ssh = Vec::new();
    if let (Some(host), Some(port)) = (row.ssh_host, super::port_of(&row.ssh_port)) {
        ssh.push(super::SshEndpoint { host, port });
    }
    if let Some(ip) = row.public_ipaddr {
        let direct = row.ports.get("22/tcp").and_then(|v| v.as_array()).cloned();
        for binding in direct.unwrap_or_default() {
            if let Some(port) = binding.get("HostPort").and_then(super::port_of) {
                ssh.push(super::SshEndpoint {
                    host: ip.clone(),
                    port,
                });
            }
        }
    }
    ProviderState {
        instance_id: row.id,
        state,
        price_per_hour: row.dph_total,
        stopped_price_per_hour: disk_per_hour,
        state_since: None,
        ends_at: row
            .end_date
            .and_then(|s| chrono::DateTime::from_timestamp(s as i64, 0)),
        label: row.label,
        ssh,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = include_str!("../../tests/fixtures/providers/vastai_show_instances.json");

    fn parse(json: &str) -> Result<Vec<ProviderState>, ProviderError> {
        parse_list(json, "vastai show instances --raw")
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn shipped_fixture_has_a_running_and_a_stopped_instance() -> Result<(), ProviderError> {
        let states = parse(SHIPPED)?;
        assert_eq!(states.len(), 2);
        let (running, stopped) = (&states[0], &states[1]);
        assert_eq!(running.instance_id, "21437001");
        assert_eq!(running.state, InstanceState::Running);
        assert_eq!(running.label.as_deref(), Some("train-llama"));
        assert!(close(running.price_per_hour, 0.35 + 0.15 * 50.0 / 720.0));
        assert!(close(running.stopped_price_per_hour, 0.15 * 50.0 / 720.0));
        assert_eq!(running.state_since, None);
        assert_eq!(
            running.ends_at.map(|t| t.timestamp()),
            Some(1_787_142_000),
            "end_date"
        );
        let ssh: Vec<String> = running.ssh.iter().map(ToString::to_string).collect();
        assert_eq!(ssh, vec!["ssh4.vast.ai:21001", "192.0.2.17:21001"]);
        assert_eq!(stopped.instance_id, "21437002");
        assert_eq!(stopped.state, InstanceState::Stopped);
        assert_eq!(stopped.label, None);
        assert!(close(stopped.stopped_price_per_hour, 0.2 * 200.0 / 720.0));
        Ok(())
    }

    #[test]
    fn states_follow_actual_status_and_a_released_contract() -> Result<(), ProviderError> {
        let json = r#"[
            {"id": 1, "actual_status": null},
            {"id": 2, "actual_status": "loading"},
            {"id": 3, "actual_status": "exited"},
            {"id": 4, "actual_status": "offline"},
            {"id": 5, "actual_status": "frozen"},
            {"id": 6, "actual_status": "stopped", "cur_state": "unloaded"},
            {"id": 7, "actual_status": "ev\u001b[2Jil"}
        ]"#;
        let states: Vec<InstanceState> = parse(json)?.into_iter().map(|s| s.state).collect();
        assert_eq!(
            states,
            [
                InstanceState::Starting,
                InstanceState::Starting,
                InstanceState::Exited,
                InstanceState::Exited,
                InstanceState::Other("frozen".into()),
                InstanceState::Destroyed,
                InstanceState::Other("evil".into()),
            ]
        );
        Ok(())
    }

    #[test]
    fn show_instance_shapes_and_the_disk_price_fallback() -> Result<(), ProviderError> {
        // `show instance ID --raw`: the docs' stopped example, without storage_total_cost.
        let one = r#"{"id": 178, "actual_status": "stopped", "dph_total": "1.0020740740740741",
                      "storage_cost": 0.14933333333333335, "disk_space": 10.0, "extra": [1]}"#;
        let states = parse(one)?;
        assert_eq!(states.len(), 1);
        assert!(close(states[0].price_per_hour, 1.0020740740740741));
        assert!(close(
            states[0].stopped_price_per_hour,
            0.002074074074074074
        ));
        assert_eq!(parse(r#" {"instances": null}"#)?, []);
        Ok(())
    }

    #[test]
    fn missing_or_odd_optional_fields_read_as_absent() -> Result<(), ProviderError> {
        let json = r#"[{"id": 9, "label": 3, "dph_total": -1, "storage_cost": 0.1}]"#;
        let state = &parse(json)?[0];
        assert_eq!(state.state, InstanceState::Starting);
        assert_eq!((state.label.as_deref(), state.price_per_hour), (None, None));
        assert_eq!(state.stopped_price_per_hour, None);
        Ok(())
    }

    #[test]
    fn garbage_and_missing_ids_are_located_errors() {
        for (json, line) in [
            ("", 1),
            ("Failed with error 500: oops", 1),
            ("[\n {\"actual_status\": \"running\"}]", 2),
            ("[\n {\"id\": null}]", 2),
            ("{\"instances\": [", 1),
        ] {
            match parse(json) {
                Err(ProviderError::Parse {
                    command, line: at, ..
                }) => {
                    assert_eq!(command, "vastai show instances --raw");
                    assert_eq!(at, line, "{json:?}");
                }
                other => panic!("{json:?} gave {other:?}"),
            }
        }
    }
}
