//! Wiring: runs the probes over the pool and turns their output into readings. The only module
//! that joins transport and probe; signals and views never see a connection.

mod apps_stream;
pub mod commands;
pub mod feed;
mod fleet_state;
mod host_state;
pub mod live;
pub mod memory;
pub mod oneshot;
pub mod providers;
pub mod queues;
pub mod readers;
pub mod verified;

pub use fleet_state::{EVENTS_KEPT, Event, FleetState, HostState};
pub use oneshot::{HostProbe, probe_once, run_state_of};
