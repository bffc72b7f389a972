//! Wiring: runs the probes over the pool and turns their output into readings. The only module
//! that joins transport and probe; signals and views never see a connection.

mod apps_feed;
pub mod commands;
mod demux;
pub mod feed;
mod gpu_feed;
pub mod live;
pub mod oneshot;
pub mod providers;
pub mod readers;
pub mod verified;

pub use oneshot::{HostProbe, probe_once};
