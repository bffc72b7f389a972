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

/// Which state a link is in, without its details: what code compares (never the words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Connecting,
    Up,
    Degraded,
    Down,
    AuthRefused,
    HostkeyRefused,
}

impl LinkKind {
    pub fn word(self) -> &'static str {
        match self {
            LinkKind::Connecting => "connecting",
            LinkKind::Up => "up",
            LinkKind::Degraded => "degraded",
            LinkKind::Down => "down",
            LinkKind::AuthRefused => "auth-refused",
            LinkKind::HostkeyRefused => "hostkey-refused",
        }
    }
}

impl LinkState {
    pub fn kind(&self) -> LinkKind {
        match self {
            LinkState::Connecting { .. } => LinkKind::Connecting,
            LinkState::Up { .. } => LinkKind::Up,
            LinkState::Degraded { .. } => LinkKind::Degraded,
            LinkState::Down { .. } => LinkKind::Down,
            LinkState::AuthRefused { .. } => LinkKind::AuthRefused,
            LinkState::HostkeyRefused { .. } => LinkKind::HostkeyRefused,
        }
    }

    pub fn word(&self) -> &'static str {
        self.kind().word()
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
