//! Wiring: runs the probes over the pool and turns their output into readings. The only module
//! that joins transport and probe; signals and views never see a connection.

pub mod commands;
pub mod live;
pub mod oneshot;

pub use oneshot::{HostProbe, probe_once};
