//! The provider's own figures: where vast.ai's or RunPod's CLI is installed and configured,
//! rigwatch asks it for state and price instead of counting from what it observed.
//!
//! Only read-only list calls are ever run (`list_argv` of each provider); stop and destroy stay
//! with the user and the guarded teardown. Parsers are pure (text in, typed states or a located
//! error out) and never panic; `query` runs the CLI locally with a timeout and an output cap.
//! Imports nothing else of ours: provider text is cleaned here before anything shows it.

mod report;
mod run;
pub mod runpod;
pub mod vastai;

pub use report::{ProviderReport, report_for};
pub use run::query;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::{Deserialize, Serialize};

/// A platform whose CLI reports state and price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    Vastai,
    Runpod,
}

impl Provider {
    /// The provider behind a profile's platform name (`vastai`, `runpod`); None elsewhere.
    pub fn from_platform(platform: &str) -> Option<Provider> {
        match platform {
            "vastai" => Some(Provider::Vastai),
            "runpod" => Some(Provider::Runpod),
            _ => None,
        }
    }

    /// The CLI's usual name, looked up on PATH when the user names no executable.
    pub fn default_program(self) -> &'static str {
        match self {
            Provider::Vastai => "vastai",
            Provider::Runpod => "runpodctl",
        }
    }

    /// The one read-only call `query` makes.
    pub fn list_argv(self) -> Vec<String> {
        match self {
            Provider::Vastai => vastai::list_argv(),
            Provider::Runpod => runpod::list_argv(),
        }
    }

    /// Parses what the list call printed; `source` names the command in errors.
    pub fn parse_list(self, json: &str, source: &str) -> Result<Vec<ProviderState>, ProviderError> {
        match self {
            Provider::Vastai => vastai::parse_list(json, source),
            Provider::Runpod => runpod::parse_list(json, source),
        }
    }

    /// Lowercase fragments of the CLI's output that mean "no usable API key".
    fn not_configured_markers(self) -> &'static [&'static str] {
        match self {
            Provider::Vastai => vastai::NOT_CONFIGURED,
            Provider::Runpod => runpod::NOT_CONFIGURED,
        }
    }
}

/// Where a rented box stands, in words common to both providers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceState {
    /// Computing, and billing at the running price.
    Running,
    /// Being provisioned, pulling its image or rebooting.
    Starting,
    /// Stopped by the user: compute off, the disk keeps billing (`stopped_price_per_hour`).
    Stopped,
    /// Not running and not because the user stopped it: the container exited on its own or the
    /// host is offline or silent.
    Exited,
    /// Gone for good (destroyed, terminated, released).
    Destroyed,
    /// A state this version does not know, as the provider spelled it (cleaned).
    Other(String),
}

impl InstanceState {
    pub fn word(&self) -> &str {
        match self {
            InstanceState::Running => "running",
            InstanceState::Starting => "starting",
            InstanceState::Stopped => "stopped",
            InstanceState::Exited => "exited",
            InstanceState::Destroyed => "destroyed",
            InstanceState::Other(word) => word,
        }
    }
}

/// One instance as its provider reports it. Prices are dollars per hour.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderState {
    pub instance_id: String,
    pub state: InstanceState,
    /// The price while running, disk included where the provider folds it in.
    pub price_per_hour: Option<f64>,
    /// What keeps billing while stopped (the disk), where the provider reports it.
    pub stopped_price_per_hour: Option<f64>,
    /// When the current state began, where the provider says so.
    pub state_since: Option<DateTime<Utc>>,
    /// When the provider ends the rental by itself, where it says so (vast.ai: the host's
    /// lifetime end date, when an on-demand rental is stopped).
    pub ends_at: Option<DateTime<Utc>>,
    pub label: Option<String>,
    /// Where the provider says the instance's SSH listens (proxy and direct), for telling
    /// whether an `instance_id` really is the box rigwatch connects to.
    pub ssh: Vec<SshEndpoint>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SshEndpoint {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for SshEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Any JSON number or numeric string as a port; None for anything else.
fn port_of(v: &serde_json::Value) -> Option<u16> {
    match v {
        serde_json::Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Why the provider's figures are not available. `command` names what ran (or the source given
/// to `parse_list`), so a message is useful on its own.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error("{program}: not installed (no such executable)")]
    NotInstalled { program: String },
    #[error("{command}: no usable API key: {message}")]
    NotConfigured { command: String, message: String },
    #[error("{command}: failed ({}): {stderr}", exit_words(*exit))]
    Failed {
        command: String,
        exit: Option<i32>,
        stderr: String,
    },
    #[error("{command}: no answer within {:.1}s", after.as_secs_f64())]
    Timeout { command: String, after: Duration },
    #[error("{command}: unexpected output at line {line} column {column}: {message}")]
    Parse {
        command: String,
        line: usize,
        column: usize,
        message: String,
    },
}

/// "exit 3", or why there is no code (killed by a signal, or it never started).
fn exit_words(exit: Option<i32>) -> String {
    exit.map_or("no exit status".to_string(), |code| format!("exit {code}"))
}

impl ProviderError {
    fn parse(command: &str, err: &serde_json::Error) -> ProviderError {
        // serde_json appends " at line L column C" to its message; keep it once, in the fields.
        let full = err.to_string();
        let position = format!(" at line {} column {}", err.line(), err.column());
        let message = full.strip_suffix(&position).unwrap_or(&full);
        ProviderError::Parse {
            command: command.to_string(),
            line: err.line(),
            column: err.column(),
            message: clean(message, MAX_MESSAGE),
        }
    }
}

/// Longest label or state name kept: enough for any real one, bounded for the dashboard.
const MAX_NAME: usize = 200;
/// Longest error message kept from a CLI's output.
const MAX_MESSAGE: usize = 2000;

/// Provider text made safe for a terminal: line breaks and tabs become spaces, then the same
/// rule as every box's text (controls and invisible formatting dropped), trimmed and capped.
fn clean(text: &str, max_chars: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    crate::sanitize::line(flat.trim(), max_chars)
}

/// A list call prints an array; a show/get call prints the one object. Either becomes rows.
fn parse_rows<T: DeserializeOwned>(json: &str, source: &str) -> Result<Vec<T>, ProviderError> {
    let rows = if json.trim_start().starts_with('{') {
        serde_json::from_str::<T>(json).map(|row| vec![row])
    } else {
        serde_json::from_str::<Vec<T>>(json)
    };
    rows.map_err(|e| ProviderError::parse(source, &e))
}

// Field readers for `#[serde(deserialize_with)]`. Providers drift (RunPod documents `costPerHr`
// as a number with the example "0.74", a string), so an optional field of the wrong kind reads
// as absent rather than failing the whole list; only the id is required.

/// The instance id: a number (vast.ai) or a non-empty string (RunPod).
fn required_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let id = match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => clean(&s, MAX_NAME),
        _ => String::new(),
    };
    if id.is_empty() {
        return Err(D::Error::custom(
            "`id` is neither a number nor a non-empty string",
        ));
    }
    Ok(id)
}

/// A finite, non-negative amount given as a number or a numeric string; anything else is None.
fn loose_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    Ok(value.filter(|v| v.is_finite() && *v >= 0.0))
}

/// A non-empty string, cleaned; anything else (null, a number, an object) is None.
fn loose_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(clean(&s, MAX_NAME)).filter(|s| !s.is_empty()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_map_to_providers() {
        assert_eq!(Provider::from_platform("vastai"), Some(Provider::Vastai));
        assert_eq!(Provider::from_platform("runpod"), Some(Provider::Runpod));
        assert_eq!(Provider::from_platform("lambda"), None);
        assert_eq!(Provider::from_platform("VastAI"), None);
        assert_eq!(Provider::Runpod.default_program(), "runpodctl");
        assert_eq!(Provider::Vastai.list_argv(), vastai::list_argv());
    }

    #[test]
    fn clean_flattens_lines_and_drops_escapes() {
        assert_eq!(clean(" a\x1b[31mb\r\n\tc\u{9b} ", 100), "ab   c");
        assert_eq!(clean("abcdef", 3), "ab…");
        assert_eq!(
            clean("run\u{202e}ning", 20),
            "running",
            "a bidi override is dropped"
        );
    }

    #[test]
    fn parse_errors_carry_position_once() {
        let Err(err) = parse_rows::<serde_json::Value>("[\n  1,\n  oops]", "cmd") else {
            panic!("garbage parsed");
        };
        let ProviderError::Parse {
            line,
            column,
            message,
            ..
        } = &err
        else {
            panic!("not a parse error: {err:?}");
        };
        assert_eq!((*line, *column), (3, 3));
        assert!(!message.contains("at line"), "{message}");
        assert!(
            err.to_string()
                .starts_with("cmd: unexpected output at line 3 column 3: ")
        );
    }

    /// JSON rows built from the fields the parsers read, each holding any kind of value.
    fn rows() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        use serde_json::Value;
        let key = proptest::sample::select(vec![
            "id",
            "actual_status",
            "cur_state",
            "label",
            "dph_total",
            "storage_total_cost",
            "storage_cost",
            "disk_space",
            "instances",
            "name",
            "desiredStatus",
            "costPerHr",
            "adjustedCostPerHr",
            "lastStatusChange",
            "lastStartedAt",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "\\PC{0,40}".prop_map(Value::from),
            "[A-Za-z ]{0,12}: [A-Za-z0-9:+ ()-]{0,50}".prop_map(Value::from),
        ];
        let row = proptest::collection::btree_map(key, leaf, 0..8)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
        (proptest::collection::vec(row, 0..4), any::<bool>()).prop_map(|(rows, one)| {
            let value = match (one, rows.first()) {
                (true, Some(first)) => first.clone(),
                _ => Value::Array(rows),
            };
            value.to_string()
        })
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(text in "\\PC*", json in rows()) {
            for provider in [Provider::Vastai, Provider::Runpod] {
                let _ = provider.parse_list(&text, "prop");
                let _ = provider.parse_list(&json, "prop");
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for provider in [Provider::Vastai, Provider::Runpod] {
            assert!(matches!(
                provider.parse_list(&deep, "deep"),
                Err(ProviderError::Parse { .. })
            ));
        }
    }

    #[test]
    fn state_serializes_for_machine_output() -> Result<(), serde_json::Error> {
        let state = ProviderState {
            ssh: Vec::new(),
            instance_id: "7".into(),
            state: InstanceState::Other("frozen".into()),
            price_per_hour: Some(0.5),
            stopped_price_per_hour: None,
            state_since: None,
            ends_at: None,
            label: None,
        };
        let json = serde_json::to_string(&state)?;
        assert!(json.contains(r#""state":{"other":"frozen"}"#), "{json}");
        Ok(())
    }
}
