//! Silenced hosts: `rigwatch silence HOST 2h` writes here; `watch` reads it every tick, so a
//! silence applies at once and ends by itself. Events of a silenced host are still written to
//! stdout and the events file, marked `silenced`; no sink is called.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

pub type Silences = BTreeMap<String, DateTime<Utc>>;

pub fn path() -> Option<PathBuf> {
    crate::config::paths::state_dir().map(|d| d.join("silences.json"))
}

/// The silences still running at `now`; a missing or unreadable file is none.
pub fn load(path: &Path, now: DateTime<Utc>) -> Silences {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Silences = serde_json::from_str(&text).unwrap_or_default();
    all.into_iter().filter(|(_, until)| *until > now).collect()
}

pub fn save(path: &Path, silences: &Silences) -> std::io::Result<()> {
    crate::config::paths::save_private(path, &serde_json::to_vec_pretty(silences)?)
}
