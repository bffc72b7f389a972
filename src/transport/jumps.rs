//! One connection to each jump host, shared by every host behind it, as OpenSSH's ControlMaster
//! would share it: a fleet of 200 boxes behind one bastion is one login there, not 200 (which
//! its MaxStartups, 10 unauthenticated connections by default, would refuse in bulk). The
//! registry holds each connection weakly: it lives while a host behind it does, and a host that
//! finds it lost (or gone) opens the next one, which the others then share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::budget::Budget;
use super::error::TransportError;
use super::session::{ConnectOptions, Session};
use crate::config::ssh::ResolvedHost;

/// A weak handle to one jump host's connection; its lock is held while it is (re)made, so hosts
/// that come up together wait for the one connect instead of each opening their own.
type Slot = Arc<tokio::sync::Mutex<Weak<Session>>>;

#[derive(Default)]
pub struct Jumps {
    open: Mutex<HashMap<String, Slot>>,
}

impl Jumps {
    /// The live connection to `jump`, or a new one made within `budget` and shared from now on.
    pub(super) async fn connect(
        &self,
        jump: &ResolvedHost,
        opts: &ConnectOptions,
        budget: Budget,
    ) -> Result<Arc<Session>, TransportError> {
        let slot = {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(open.entry(key(jump, opts)).or_default())
        };
        let mut held = budget
            .step("waiting for the jump host", slot.lock())
            .await?;
        if let Some(live) = held.upgrade().filter(|s| s.lost_reason().is_none()) {
            return Ok(live);
        }
        let fresh = Arc::new(Box::pin(Session::connect_within(jump, opts, budget, self)).await?);
        *held = Arc::downgrade(&fresh);
        Ok(fresh)
    }
}

/// What makes two jump connections the same: the resolved host (address, user, keys, its own
/// jump host) and how its key is checked.
fn key(jump: &ResolvedHost, opts: &ConnectOptions) -> String {
    format!(
        "{jump:?} known_hosts={:?} accept_new={}",
        opts.known_hosts, opts.accept_new
    )
}
