//! The state of the link to a box: reachability only, never a statement about the run on it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Round trips slower than this mark a link degraded: it works, but polls will lag.
pub const SLOW_RTT: Duration = Duration::from_millis(1500);

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum LinkState {
    Connecting {
        attempt: u32,
    },
    Up {
        since: DateTime<Utc>,
        rtt_ms: f64,
        banner: String,
        auth: String,
    },
    Degraded {
        since: DateTime<Utc>,
        rtt_ms: f64,
        banner: String,
        auth: String,
        reason: String,
    },
    Down {
        since: DateTime<Utc>,
        reason: String,
        retry_in_ms: u64,
    },
    AuthRefused {
        since: DateTime<Utc>,
        reason: String,
    },
    HostkeyRefused {
        since: DateTime<Utc>,
        reason: String,
    },
}

impl LinkState {
    pub fn word(&self) -> &'static str {
        match self {
            LinkState::Connecting { .. } => "connecting",
            LinkState::Up { .. } => "up",
            LinkState::Degraded { .. } => "degraded",
            LinkState::Down { .. } => "down",
            LinkState::AuthRefused { .. } => "auth-refused",
            LinkState::HostkeyRefused { .. } => "hostkey-refused",
        }
    }

    /// Commands can run over the link (slow counts: slow is not down).
    pub fn is_usable(&self) -> bool {
        matches!(self, LinkState::Up { .. } | LinkState::Degraded { .. })
    }

    /// The pool has finished its first attempt: there is something definite to report.
    pub fn is_settled(&self) -> bool {
        !matches!(self, LinkState::Connecting { .. })
    }

    pub fn rtt_ms(&self) -> Option<f64> {
        match self {
            LinkState::Up { rtt_ms, .. } | LinkState::Degraded { rtt_ms, .. } => Some(*rtt_ms),
            _ => None,
        }
    }
}
