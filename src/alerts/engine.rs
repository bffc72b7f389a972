//! Turning conditions into events, once each way. Pure: conditions, frozen hosts and `now` in.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};

use super::{AlertData, AlertEvent, AlertState, Condition, SCHEMA_VERSION, Seen};
use crate::signals::Severity;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// A condition must hold this long before it fires, and be gone this long before it
    /// resolves: a blip sends nothing (Alertmanager's group_wait).
    pub group_wait: Duration,
    /// A condition still firing is said again this often.
    pub repeat: Duration,
    /// A condition that started this many times within `flap_window` fires at once, with the
    /// count, however short each time was, and resolves only after `flap_threshold` waits
    /// gone: a link back for a minute between drops is still the one flapping alert.
    pub flap_threshold: usize,
    pub flap_window: Duration,
}

impl Timing {
    /// The fleet's `[alerts]` timing; the flap rules are fixed.
    pub fn of(alerts: &crate::config::alerts::AlertsConfig) -> Timing {
        let d = |std| Duration::from_std(std).unwrap_or(Duration::zero());
        Timing {
            group_wait: d(alerts.group_wait),
            repeat: d(alerts.repeat),
            ..Timing::default()
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            group_wait: Duration::seconds(30),
            repeat: Duration::hours(4),
            flap_threshold: 3,
            flap_window: Duration::minutes(10),
        }
    }
}

/// One condition's alert state, as saved across restarts.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Track {
    condition: Condition,
    present_since: Option<DateTime<Utc>>,
    absent_since: Option<DateTime<Utc>>,
    firing: bool,
    last_sent: Option<DateTime<Utc>>,
    /// When it started, within the flap window.
    starts: Vec<DateTime<Utc>>,
    /// When this alert began (its first start since it was last resolved and forgotten): its
    /// id's time. None in states saved before ids were kept.
    #[serde(default)]
    began: Option<DateTime<Utc>>,
}

#[derive(Debug, Default)]
pub struct Engine {
    timing: Timing,
    tracks: BTreeMap<(String, super::AlertKind, Option<String>), Track>,
}

impl Engine {
    pub fn new(timing: Timing) -> Self {
        Engine {
            timing,
            tracks: BTreeMap::new(),
        }
    }

    /// What changed at `now`. Frozen hosts keep their non-link alerts exactly as they were;
    /// hosts whose link is not known yet keep all of them.
    pub fn step(&mut self, seen: &Seen, now: DateTime<Utc>) -> Vec<AlertEvent> {
        let (conditions, frozen) = (&seen.conditions, &seen.frozen);
        let t = self.timing;
        let mut out = Vec::new();
        let mut present = BTreeSet::new();
        // A host whose link is down says only that; its other conditions wait (inhibition).
        let link_down: BTreeSet<&str> = conditions
            .iter()
            .filter(|c| c.is_link())
            .map(|c| c.host.as_str())
            .collect();
        let held = |c: &Condition| {
            seen.link_unknown.contains(&c.host)
                || (!c.says_unseen()
                    && (frozen.contains(&c.host) || link_down.contains(c.host.as_str())))
        };
        for c in conditions {
            if held(c) {
                continue;
            }
            let key = (c.host.clone(), c.kind, c.subject.clone());
            present.insert(key.clone());
            let track = self.tracks.entry(key).or_insert_with(|| Track {
                condition: c.clone(),
                present_since: None,
                absent_since: None,
                firing: false,
                last_sent: None,
                starts: Vec::new(),
                began: Some(now),
            });
            if track.present_since.is_none() {
                track.present_since = Some(now);
                track.absent_since = None;
                track.starts.push(now);
            }
            track.starts.retain(|s| now - *s <= t.flap_window);
            let escalated = track.firing
                && (c.stage != track.condition.stage || c.severity > track.condition.severity);
            track.condition = c.clone();
            let since = track.present_since.unwrap_or(now);
            if escalated
                || (!track.firing
                    && (now - since >= t.group_wait || track.starts.len() >= t.flap_threshold))
            {
                track.firing = true;
                track.last_sent = Some(now);
                out.push(event(track, AlertState::Firing, false, now));
            } else if track.firing && track.last_sent.is_some_and(|s| now - s >= t.repeat) {
                track.last_sent = Some(now);
                out.push(event(track, AlertState::Firing, true, now));
            }
        }
        let mut gone = Vec::new();
        for (key, track) in &mut self.tracks {
            if present.contains(key) || held(&track.condition) {
                continue;
            }
            if track.present_since.take().is_some() {
                track.absent_since = Some(now);
            }
            track.starts.retain(|s| now - *s <= t.flap_window);
            let absent_for = track.absent_since.map_or(Duration::zero(), |a| now - a);
            let quiet = if track.starts.len() >= t.flap_threshold {
                t.group_wait * t.flap_threshold as i32
            } else {
                t.group_wait
            };
            if track.firing && absent_for >= quiet {
                track.firing = false;
                out.push(event(track, AlertState::Resolved, false, now));
            }
            if !track.firing && track.starts.is_empty() {
                gone.push(key.clone());
            }
        }
        for key in gone {
            self.tracks.remove(&key);
        }
        out
    }

    /// A digest of what is firing at `now`, as one event; None when nothing is.
    pub fn digest(&self, now: DateTime<Utc>) -> Option<AlertEvent> {
        let firing: Vec<&Condition> = self
            .tracks
            .values()
            .filter(|t| t.firing)
            .map(|t| &t.condition)
            .collect();
        let worst = firing.iter().map(|c| c.severity).max()?;
        let mut hosts: Vec<&str> = firing.iter().map(|c| c.host.as_str()).collect();
        hosts.dedup();
        let list: Vec<String> = firing
            .iter()
            .map(|c| format!("{} {}", c.host, c.kind))
            .collect();
        Some(AlertEvent {
            v: SCHEMA_VERSION,
            at: now,
            host: if hosts.len() == 1 {
                hosts[0].to_string()
            } else {
                "*".into()
            },
            kind: super::AlertKind::Digest,
            severity: worst,
            state: AlertState::Firing,
            message: crate::sanitize::words(
                &format!("{} alerts firing: {}", firing.len(), list.join(", ")),
                2000,
            ),
            platform: None,
            data: AlertData {
                count: firing.len(),
                repeat: false,
                stage: None,
                subject: None,
                silenced: false,
                id: super::alert_id("*", super::AlertKind::Digest, None, now),
            },
        })
    }

    /// What is pending or firing, for the next start: a restarted watch (systemd, a reboot of
    /// the laptop) does not fire again what it already said.
    pub fn tracks(&self) -> Vec<Track> {
        self.tracks.values().cloned().collect()
    }

    /// Takes back what [`Engine::tracks`] gave, in place of what it holds.
    pub fn restore(&mut self, tracks: Vec<Track>) {
        self.tracks = tracks
            .into_iter()
            .map(|t| {
                let c = &t.condition;
                ((c.host.clone(), c.kind, c.subject.clone()), t)
            })
            .collect();
    }

    /// New timing (a reloaded config), the alert states kept.
    pub fn retime(&mut self, timing: Timing) {
        self.timing = timing;
    }
}

fn event(track: &Track, state: AlertState, repeat: bool, now: DateTime<Utc>) -> AlertEvent {
    let c = &track.condition;
    AlertEvent {
        v: SCHEMA_VERSION,
        at: now,
        host: c.host.clone(),
        kind: c.kind,
        severity: if state == AlertState::Resolved {
            Severity::Info
        } else {
            c.severity
        },
        state,
        message: crate::sanitize::words(&c.message, 500),
        platform: None,
        data: AlertData {
            count: track.starts.len().max(1),
            repeat,
            stage: c.stage.clone(),
            subject: c.subject.clone(),
            silenced: false,
            id: super::alert_id(
                &c.host,
                c.kind,
                c.subject.as_deref(),
                track.began.or(track.starts.first().copied()).unwrap_or(now),
            ),
        },
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
