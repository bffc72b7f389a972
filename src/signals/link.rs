//! What a link that carries no commands asks of the user. A box rigwatch cannot log into is
//! blind, not fine: it needs the user as much as a dead run does, and each refusal says what to
//! do about it.

use super::{HostFacts, Severity, Signal, SignalKind, minutes};
use crate::sanitize;
use crate::transport::LinkState;

pub fn link_signals(f: &HostFacts<'_>) -> Vec<Signal> {
    let when = |since: &chrono::DateTime<chrono::Utc>| {
        format!(
            "(since {}, {} ago)",
            since.format("%H:%M:%S UTC"),
            minutes(f.now - *since)
        )
    };
    let signal = match f.link {
        LinkState::AuthRefused { since, reason } => Signal::new(
            SignalKind::LoginRefused,
            Severity::Crit,
            format!(
                "cannot log in: {} {}. Check this host's user and identity in the config, or \
                 add the key to the box's authorized_keys; rigwatch tries again and sees \
                 nothing meanwhile",
                sanitize::line(reason, 300),
                when(since)
            ),
        ),
        // The reason already says what to do: compare a fingerprint, or remove an old entry.
        LinkState::HostkeyRefused { since, reason } => Signal::new(
            SignalKind::HostKeyRefused,
            Severity::Crit,
            format!(
                "will not connect: {} {}",
                sanitize::line(reason, 2000),
                when(since)
            ),
        ),
        LinkState::Down { since, reason, .. } => Signal::new(
            SignalKind::LinkDown,
            Severity::Crit,
            format!(
                "unreachable: {} {}. rigwatch keeps retrying; if it stays down, look at the box \
                 in the provider's console (stopped, preempted, out of credit)",
                sanitize::line(reason, 200),
                when(since)
            ),
        ),
        LinkState::Connecting { .. } | LinkState::Up { .. } | LinkState::Degraded { .. } => {
            return Vec::new();
        }
    };
    vec![signal]
}
