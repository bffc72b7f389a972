//! What the sending rigwatch keeps in the state folder (`alerts.json`) so that a restart, a
//! kill -9 or a hand-over between the dashboard and `watch` sends nothing twice and loses
//! nothing: the engine's alert states, the notices' last look, and the outbox (events written
//! before their sinks were called, and not yet marked sent). The file is replaced whole and
//! synced before anything is sent; an event is marked sent (the outbox emptied) right after
//! its sinks are called, so a kill at any moment repeats at most the events of that one send.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::AlertEvent;
use super::engine::Track;
use super::notices::Notices;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Saved {
    #[serde(default)]
    pub tracks: Vec<Track>,
    #[serde(default)]
    pub notices: Notices,
    /// Written, not yet marked sent: sent once more by the next process that sends.
    #[serde(default)]
    pub outbox: Vec<AlertEvent>,
}

/// Writes `saved` durably (a private file, synced, renamed over the old one).
pub fn save(path: &Path, saved: &Saved) -> std::io::Result<()> {
    crate::config::paths::save_private(path, &serde_json::to_vec(saved)?)
}

/// Takes back what `save` wrote. A missing or unreadable file is a fresh start; a file from
/// before the notices and outbox were kept (a bare list of alert states) keeps its states.
pub fn load(path: &Path) -> Saved {
    let text = std::fs::read(path).unwrap_or_default();
    if let Ok(saved) = serde_json::from_slice::<Saved>(&text) {
        return saved;
    }
    Saved {
        tracks: serde_json::from_slice(&text).unwrap_or_default(),
        ..Saved::default()
    }
}
