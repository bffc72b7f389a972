//! An event as Alertmanager's v2 API takes it (`POST /api/v2/alerts`, a list of postable
//! alerts), and what its answer means. Pure: the sink in `sinks` sends it through curl.
//!
//! Alertmanager knows an alert by its label set, so every label here is the same for an
//! alert's firing, its repeats and its resolve. rigwatch's resolve has severity `info`, and a
//! clock's alert escalates from warn to crit while firing; so each POST speaks for the alert at
//! every severity: the one firing held active, the others ended now. That resolves the warning
//! a critical replaced, and a resolve ends whichever severity fired, with no state kept here.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{AlertEvent, AlertState};
use crate::signals::Severity;

const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Warn, Severity::Crit];

/// The request body for `event`: for a firing, the alert active until `at + hold` (Alertmanager
/// resolves an alert whose end passes unrefreshed) and ended at `at` for the other severities;
/// for a resolve, ended at `at` for every severity; a notice once, with no end, so
/// Alertmanager's own `resolve_timeout` lets it lapse. `extra` labels go on every alert.
pub fn body(event: &AlertEvent, extra: &BTreeMap<String, String>, hold: Duration) -> Value {
    let at = event.at;
    // `repeat_hours` is at most 720, so the hold always converts.
    let hold = chrono::Duration::from_std(hold).unwrap_or(chrono::Duration::hours(8));
    let alerts: Vec<Value> = match event.state {
        AlertState::Notice => vec![alert(event, extra, event.severity, at, None)],
        AlertState::Firing => SEVERITIES
            .iter()
            .map(|&s| {
                let ends = if s == event.severity { at + hold } else { at };
                alert(event, extra, s, at, Some(ends))
            })
            .collect(),
        AlertState::Resolved => SEVERITIES
            .iter()
            .map(|&s| alert(event, extra, s, at, Some(at)))
            .collect(),
    };
    Value::Array(alerts)
}

fn alert(
    event: &AlertEvent,
    extra: &BTreeMap<String, String>,
    severity: Severity,
    starts: DateTime<Utc>,
    ends: Option<DateTime<Utc>>,
) -> Value {
    // Label values are shown in Alertmanager's UI, mails and chats: one clean line each.
    let text = |s: &str, max| crate::sanitize::line(s, max);
    let mut labels: BTreeMap<&str, String> = extra
        .iter()
        .map(|(k, v)| (k.as_str(), text(v, 200)))
        .collect();
    labels.insert(
        "alertname",
        format!("rigwatch_{}", text(&event.kind.to_string(), 100)),
    );
    labels.insert("host", text(&event.host, 200));
    labels.insert("kind", text(&event.kind.to_string(), 100));
    labels.insert("severity", severity_word(severity).into());
    if let Some(platform) = &event.platform {
        labels.insert("platform", text(platform, 100));
    }
    // Two failed queue cells on one host are two alerts, as they are two in the engine.
    if let Some(subject) = &event.data.subject {
        labels.insert("subject", text(subject, 200));
    }
    let mut annotations = BTreeMap::from([("summary", text(&event.message, 500))]);
    if let Some(stage) = &event.data.stage {
        annotations.insert("stage", text(stage, 20));
    }
    let mut out = json!({
        "labels": labels,
        "annotations": annotations,
        "startsAt": time(starts),
    });
    if let Some(ends) = ends {
        out["endsAt"] = json!(time(ends));
    }
    out
}

/// Alertmanager's usual severity words, which routes and inhibit rules commonly match.
fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Info => "info",
        Severity::Warn => "warning",
        Severity::Crit => "critical",
    }
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// What Alertmanager answered, from curl's stdout: its body, then a line with the HTTP status.
pub fn answer(stdout: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(stdout);
    let (said, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    match status.trim().parse::<u16>() {
        Ok(200..=299) => Ok(()),
        Ok(code) => Err(format!(
            "alertmanager answered HTTP {code}: {}",
            crate::sanitize::line(said.trim(), 200)
        )),
        Err(_) => Err(format!(
            "alertmanager: no HTTP status in curl's output: {}",
            crate::sanitize::line(&text, 200)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::{AlertData, SCHEMA_VERSION};

    fn event(state: AlertState, severity: Severity) -> AlertEvent {
        AlertEvent {
            v: SCHEMA_VERSION,
            at: "2026-11-24T03:12:09Z".parse().expect("time"),
            host: "gpu-\u{1b}[31m1\u{7}".into(),
            kind: crate::alerts::AlertKind::Clock(crate::clocks::ClockKind::Walltime),
            severity,
            state,
            message: "walltime ends in 50 min\u{1b}]0;owned\u{7}".into(),
            platform: Some("slurm".into()),
            data: AlertData {
                count: 1,
                repeat: false,
                stage: Some("1h".into()),
                subject: None,
                silenced: false,
                id: String::new(),
            },
        }
    }

    /// The firing alert is held for `hold`, the same labels at the other severities ended now,
    /// and a hostile host name reaches Alertmanager with its escape bytes gone.
    #[test]
    fn a_firing_is_held_and_its_other_severities_ended() {
        let extra = BTreeMap::from([("team".to_string(), "ml\n".to_string())]);
        let body = body(
            &event(AlertState::Firing, Severity::Crit),
            &extra,
            Duration::from_secs(8 * 3600),
        );
        let alerts = body.as_array().expect("a list");
        assert_eq!(alerts.len(), 3, "{body}");
        let firing = alerts
            .iter()
            .find(|a| a["labels"]["severity"] == "critical")
            .expect("the critical one");
        assert_eq!(
            firing["labels"],
            json!({"alertname": "rigwatch_clock_walltime", "host": "gpu-1",
                   "kind": "clock_walltime", "severity": "critical", "platform": "slurm",
                   "team": "ml"})
        );
        assert_eq!(firing["startsAt"], "2026-11-24T03:12:09.000Z");
        assert_eq!(firing["endsAt"], "2026-11-24T11:12:09.000Z");
        assert_eq!(firing["annotations"]["summary"], "walltime ends in 50 min");
        assert_eq!(firing["annotations"]["stage"], "1h");
        for other in alerts.iter().filter(|a| a != &firing) {
            assert_eq!(other["endsAt"], "2026-11-24T03:12:09.000Z", "{other}");
            assert_ne!(other["labels"]["severity"], "critical");
        }
        assert!(!body.to_string().contains('\u{1b}'), "{body}");
    }

    /// A resolve (severity info) ends the alert at every severity; a notice has no end.
    #[test]
    fn a_resolve_ends_every_severity_and_a_notice_has_no_end() {
        let hold = Duration::from_secs(3600);
        let resolve = body(
            &event(AlertState::Resolved, Severity::Info),
            &BTreeMap::new(),
            hold,
        );
        let words: Vec<&Value> = resolve
            .as_array()
            .expect("a list")
            .iter()
            .inspect(|a| assert_eq!(a["endsAt"], "2026-11-24T03:12:09.000Z", "{a}"))
            .map(|a| &a["labels"]["severity"])
            .collect();
        assert_eq!(words, ["info", "warning", "critical"]);
        let notice = body(
            &event(AlertState::Notice, Severity::Info),
            &BTreeMap::new(),
            hold,
        );
        assert_eq!(notice.as_array().map(Vec::len), Some(1));
        assert!(notice[0].get("endsAt").is_none(), "{notice}");
    }

    #[test]
    fn a_non_2xx_answer_is_an_error_with_its_status_and_words() {
        assert_eq!(answer(b"\n200"), Ok(()));
        assert_eq!(
            answer(b"{\"code\":400,\"message\":\"start time must be before end time\"}\n400"),
            Err(
                "alertmanager answered HTTP 400: {\"code\":400,\"message\":\"start time must \
                 be before end time\"}"
                    .into()
            )
        );
        assert!(answer(b"").is_err());
    }
}
