//! What rigwatch remembers about each box between runs, in the XDG state dir: its last boot
//! (to notice a reboot), when it was last seen up (the clocks count from there), and its cost
//! ledger (cost so far survives restarts of rigwatch).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::clocks::{CostLedger, SessionLog};
use crate::fleet::BootMark;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostMemory {
    pub boot: Option<BootMark>,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub ledger: Option<CostLedger>,
    /// Sessions seen in the last week, for a weekly quota.
    #[serde(default)]
    pub sessions: SessionLog,
}

pub type FleetMemory = BTreeMap<String, HostMemory>;

pub fn path() -> Option<PathBuf> {
    crate::config::paths::state_dir().map(|d| d.join("hosts.json"))
}

/// A missing or unreadable file is an empty memory: nothing has been seen yet.
pub fn load(path: Option<&Path>) -> FleetMemory {
    path.and_then(|p| std::fs::read(p).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Written to a temporary file and renamed, so a crash never leaves half a file.
pub fn save(path: &Path, memory: &FleetMemory) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(memory).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(&tmp, path)
}
