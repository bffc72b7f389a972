//! One box's entry in a provider's listing, or why there is none, with when it was asked.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Provider, ProviderError, ProviderState};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderReport {
    /// `vastai` or `runpod`.
    pub provider: &'static str,
    pub checked_at: DateTime<Utc>,
    /// None when the CLI failed or does not list the instance (`error` says which).
    pub state: Option<ProviderState>,
    pub error: Option<String>,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Vastai => "vastai",
            Provider::Runpod => "runpod",
        }
    }
}

/// The report for `instance_id` from one listing. An id the listing lacks is reported as
/// such, never as destroyed: another account's key or a typo looks the same.
pub fn report_for(
    provider: Provider,
    listing: &Result<Vec<ProviderState>, ProviderError>,
    instance_id: &str,
    checked_at: DateTime<Utc>,
) -> ProviderReport {
    let (state, error) = match listing {
        Ok(rows) => match rows.iter().find(|r| r.instance_id == instance_id) {
            Some(row) => (Some(row.clone()), None),
            None => (
                None,
                Some(format!(
                    "{} lists no instance {}: destroyed, or another account",
                    provider.name(),
                    super::clean(instance_id, super::MAX_NAME)
                )),
            ),
        },
        Err(e) => (None, Some(e.to_string())),
    };
    ProviderReport {
        provider: provider.name(),
        checked_at,
        state,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::InstanceState;

    #[test]
    fn the_listed_instance_or_a_reason() {
        let json = include_str!("../../tests/fixtures/providers/vastai_show_instances.json");
        let listing = Provider::Vastai.parse_list(json, "shim");
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let stopped = report_for(Provider::Vastai, &listing, "21437002", at);
        assert_eq!(
            stopped.state.as_ref().map(|s| &s.state),
            Some(&InstanceState::Stopped)
        );
        let absent = report_for(Provider::Vastai, &listing, "99", at);
        assert_eq!(absent.state, None);
        assert!(
            absent
                .error
                .as_deref()
                .is_some_and(|e| e.contains("lists no instance 99")),
            "{absent:?}"
        );
        let failed = report_for(
            Provider::Runpod,
            &Err(ProviderError::NotInstalled {
                program: "runpodctl".into(),
            }),
            "x",
            at,
        );
        assert_eq!(
            failed.error.as_deref(),
            Some("runpodctl: not installed (no such executable)")
        );
    }
}
