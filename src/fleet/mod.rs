//! The fleet's state: per host its config, link, readings and their judgement (run state,
//! signals, clocks, cost, queue), the events of what changed, and what is remembered between
//! runs. The runtime owns the one instance and feeds it; views read it.

mod clusters;
mod host;
pub mod memory;
pub mod queues;
mod records;
mod state;

pub use host::HostState;
pub use records::Records;
pub use state::{EVENTS_KEPT, Event, FleetState};
