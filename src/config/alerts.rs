//! `[alerts]` timing and `[[alert]]` rules in fleet.toml: which events go to which sink.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::NaiveTime;
use serde::Deserialize;
use toml::Spanned;

use super::error::ConfigError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlerts {
    group_wait_secs: Option<Spanned<f64>>,
    repeat_hours: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    sink: Spanned<String>,
    #[serde(default)]
    kinds: Vec<String>,
    #[serde(default)]
    hosts: Vec<String>,
    min_severity: Option<Spanned<String>>,
    command: Option<Spanned<Vec<String>>>,
    url: Option<Spanned<String>>,
    timeout_secs: Option<Spanned<f64>>,
    quiet: Option<Spanned<String>>,
    labels: Option<Spanned<BTreeMap<String, String>>>,
}

/// How loud an event is; `min_severity` compares against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Info,
    Warn,
    Crit,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Sink {
    /// The terminal bell on stderr.
    Bell,
    /// notify-send (Linux) or osascript (macOS), where installed.
    Desktop,
    /// A program and its arguments, run without a shell: the event as JSON on stdin and as
    /// RIGWATCH_* variables.
    Command(Vec<String>),
    /// A JSON POST of the event (through curl).
    Webhook(String),
    /// An ntfy topic URL: the message as the body, title and priority as headers.
    Ntfy(String),
    /// Prometheus's Alertmanager (its base URL): alerts POSTed to its v2 API, `labels` added
    /// to each; a firing alert is held active for `hold` unless said again or resolved.
    Alertmanager {
        url: String,
        labels: BTreeMap<String, String>,
        hold: Duration,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlertRule {
    pub sink: Sink,
    /// Globs over event kinds; empty: every kind.
    pub kinds: Vec<String>,
    /// Globs over host names; empty: every host.
    pub hosts: Vec<String>,
    pub min_severity: Level,
    pub timeout: Duration,
    /// Local times between which this sink is not called (`22:00-07:00` wraps midnight).
    pub quiet: Option<(NaiveTime, NaiveTime)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlertsConfig {
    pub group_wait: Duration,
    pub repeat: Duration,
    pub rules: Vec<AlertRule>,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        AlertsConfig {
            group_wait: Duration::from_secs(30),
            repeat: Duration::from_secs(4 * 3600),
            rules: Vec::new(),
        }
    }
}

pub(super) fn build(
    raw: RawAlerts,
    rules: Vec<RawRule>,
    at: &dyn Fn(usize, String) -> ConfigError,
) -> Result<AlertsConfig, ConfigError> {
    let positive = |v: &Spanned<f64>, key: &str, scale: f64| {
        super::ranges::checked(v, key)
            .map(|x| Duration::from_secs_f64(x * scale))
            .map_err(|(offset, m)| at(offset, m))
    };
    let defaults = AlertsConfig::default();
    let mut out = AlertsConfig {
        group_wait: match &raw.group_wait_secs {
            Some(v) => positive(v, "alerts.group_wait_secs", 1.0)?,
            None => defaults.group_wait,
        },
        repeat: match &raw.repeat_hours {
            Some(v) => positive(v, "alerts.repeat_hours", 3600.0)?,
            None => defaults.repeat,
        },
        rules: Vec::new(),
    };
    for r in rules {
        let needs = |what: &str| {
            at(
                r.sink.span().start,
                format!("sink = {:?} needs {what}", r.sink.get_ref()),
            )
        };
        let sink = match r.sink.get_ref().as_str() {
            "bell" => Sink::Bell,
            "desktop" => Sink::Desktop,
            "command" => match &r.command {
                Some(argv) if !argv.get_ref().is_empty() => Sink::Command(argv.get_ref().clone()),
                Some(argv) => {
                    return Err(at(
                        argv.span().start,
                        "command = [] names no program".into(),
                    ));
                }
                None => {
                    return Err(needs(
                        "command = [\"program\", \"arg\", …] (run without a shell)",
                    ));
                }
            },
            "webhook" | "ntfy" | "alertmanager" => {
                let Some(url) = &r.url else {
                    return Err(needs("url = \"http…\""));
                };
                if !url.get_ref().starts_with("http://") && !url.get_ref().starts_with("https://") {
                    return Err(at(
                        url.span().start,
                        format!(
                            "url {:?} must start with http:// or https://",
                            url.get_ref()
                        ),
                    ));
                }
                match r.sink.get_ref().as_str() {
                    "ntfy" => Sink::Ntfy(url.get_ref().clone()),
                    "webhook" => Sink::Webhook(url.get_ref().clone()),
                    _ => Sink::Alertmanager {
                        url: url.get_ref().clone(),
                        labels: am_labels(r.labels.as_ref(), at)?,
                        // A firing alert is said again every `repeat`; held for two of them, one
                        // lost delivery does not resolve it, and a watch that died lets it lapse.
                        hold: out.repeat * 2,
                    },
                }
            }
            other => {
                return Err(at(
                    r.sink.span().start,
                    format!(
                        "unknown sink {other:?}; one of bell, desktop, command, webhook, ntfy, \
                         alertmanager"
                    ),
                ));
            }
        };
        if let (Some(labels), false) = (&r.labels, matches!(sink, Sink::Alertmanager { .. })) {
            return Err(at(
                labels.span().start,
                "labels are for sink = \"alertmanager\" only".into(),
            ));
        }
        let min_severity = match r
            .min_severity
            .as_ref()
            .map(|s| (s.get_ref().as_str(), s.span().start))
        {
            None | Some(("warn", _)) => Level::Warn,
            Some(("info", _)) => Level::Info,
            Some(("crit", _)) => Level::Crit,
            Some((other, offset)) => {
                return Err(at(
                    offset,
                    format!("min_severity {other:?} is not info, warn or crit"),
                ));
            }
        };
        let quiet = match &r.quiet {
            None => None,
            Some(q) => Some(quiet_hours(q.get_ref()).ok_or_else(|| {
                at(
                    q.span().start,
                    format!("quiet = {:?} is not HH:MM-HH:MM", q.get_ref()),
                )
            })?),
        };
        out.rules.push(AlertRule {
            sink,
            kinds: r.kinds,
            hosts: r.hosts,
            min_severity,
            timeout: match &r.timeout_secs {
                Some(v) => positive(v, "alert.timeout_secs", 1.0)?,
                None => Duration::from_secs(10),
            },
            quiet,
        });
    }
    Ok(out)
}

/// The labels the Alertmanager sink sets on every alert; a rule's own `labels` may not.
const ALERTMANAGER_LABELS: [&str; 6] = [
    "alertname",
    "host",
    "kind",
    "severity",
    "platform",
    "subject",
];

/// Extra static labels for Alertmanager (a team, an environment to route on): Prometheus's
/// label names, and none of the names rigwatch sets itself.
fn am_labels(
    labels: Option<&Spanned<BTreeMap<String, String>>>,
    at: &dyn Fn(usize, String) -> ConfigError,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let Some(labels) = labels else {
        return Ok(BTreeMap::new());
    };
    for name in labels.get_ref().keys() {
        let valid = name
            .chars()
            .enumerate()
            .all(|(i, c)| c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
        let ours = ALERTMANAGER_LABELS.contains(&name.as_str());
        if !valid || name.is_empty() || name.starts_with("__") || ours {
            return Err(at(
                labels.span().start,
                format!(
                    "label {name:?} is not free to set: [A-Za-z_][A-Za-z0-9_]*, not starting \
                     with __, and not one of {}",
                    ALERTMANAGER_LABELS.join(", ")
                ),
            ));
        }
    }
    Ok(labels.get_ref().clone())
}

fn quiet_hours(text: &str) -> Option<(NaiveTime, NaiveTime)> {
    let (from, to) = text.split_once('-')?;
    let time = |t: &str| NaiveTime::parse_from_str(t.trim(), "%H:%M").ok();
    Some((time(from)?, time(to)?))
}

impl AlertRule {
    /// Whether `now` (local time of day) falls in this rule's quiet hours.
    pub fn is_quiet(&self, now: NaiveTime) -> bool {
        match self.quiet {
            None => false,
            Some((from, to)) if from <= to => from <= now && now < to,
            Some((from, to)) => now >= from || now < to,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> Result<AlertsConfig, String> {
        crate::config::fleet::parse(Path::new("fleet.toml"), text)
            .map(|f| f.alerts)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn rules_load_and_mistakes_name_file_line_and_column() {
        let ok = parse(
            "[alerts]\ngroup_wait_secs = 5\n[[alert]]\nsink = \"ntfy\"\nurl = \"https://ntfy.sh/t\"\n\
             min_severity = \"crit\"\nquiet = \"22:00-07:00\"\nhosts = [\"gpu-*\"]\n",
        )
        .expect("loads");
        assert_eq!(ok.group_wait, Duration::from_secs(5));
        let rule = &ok.rules[0];
        assert_eq!(rule.sink, Sink::Ntfy("https://ntfy.sh/t".into()));
        assert_eq!(rule.min_severity, Level::Crit);
        let at = |h, m| NaiveTime::from_hms_opt(h, m, 0).expect("time");
        assert!(rule.is_quiet(at(23, 0)) && rule.is_quiet(at(6, 59)) && !rule.is_quiet(at(12, 0)));

        let am = parse(
            "[alerts]\nrepeat_hours = 2\n[[alert]]\nsink = \"alertmanager\"\n\
             url = \"http://127.0.0.1:9093/\"\nlabels = { team = \"ml\" }\n",
        )
        .expect("loads");
        assert_eq!(
            am.rules[0].sink,
            Sink::Alertmanager {
                url: "http://127.0.0.1:9093/".into(),
                labels: BTreeMap::from([("team".into(), "ml".into())]),
                hold: Duration::from_secs(4 * 3600),
            }
        );

        for (text, says) in [
            (
                "[[alert]]\nsink = \"pager\"\n",
                "fleet.toml:2:8: unknown sink \"pager\"",
            ),
            (
                "[[alert]]\nsink = \"command\"\n",
                "fleet.toml:2:8: sink = \"command\" needs command",
            ),
            (
                "[[alert]]\nsink = \"webhook\"\nurl = \"ftp://x\"\n",
                "fleet.toml:3:7: url \"ftp://x\"",
            ),
            (
                "[[alert]]\nsink = \"bell\"\nquiet = \"late\"\n",
                "fleet.toml:3:9: quiet = \"late\"",
            ),
            (
                "[[alert]]\nsink = \"bell\"\nmin_severity = \"loud\"\n",
                "fleet.toml:3:16: min_severity",
            ),
            (
                "[[alert]]\nsink = \"alertmanager\"\n",
                "fleet.toml:2:8: sink = \"alertmanager\" needs url",
            ),
            (
                "[[alert]]\nsink = \"alertmanager\"\nurl = \"localhost:9093\"\n",
                "fleet.toml:3:7: url \"localhost:9093\" must start with http",
            ),
            (
                "[[alert]]\nsink = \"alertmanager\"\nurl = \"http://am:9093\"\n\
                 labels = { host = \"x\" }\n",
                "fleet.toml:4:10: label \"host\" is not free to set",
            ),
            (
                "[[alert]]\nsink = \"alertmanager\"\nurl = \"http://am:9093\"\n\
                 labels = { \"a-b\" = \"x\" }\n",
                "fleet.toml:4:10: label \"a-b\"",
            ),
            (
                "[[alert]]\nsink = \"webhook\"\nurl = \"http://h\"\nlabels = { team = \"ml\" }\n",
                "fleet.toml:4:10: labels are for sink = \"alertmanager\" only",
            ),
            (
                "[[alert]]\nsink = \"alertmanager\"\nurl = \"http://am:9093\"\nreceiver = \"x\"\n",
                "fleet.toml:4:1: unknown field `receiver`",
            ),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.starts_with(says), "{e}");
        }
    }
}
