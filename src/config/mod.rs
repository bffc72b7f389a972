//! Configuration: `fleet.toml` and what `~/.ssh/config` says about each host.

pub mod alerts;
pub mod error;
pub mod fleet;
pub mod paths;
pub mod pull;
pub mod ranges;
pub mod ssh;
mod target;
mod teardown;

pub use error::{ConfigError, Located};
pub use fleet::{
    Billing, FleetConfig, HostConfig, LinkTuning, ProviderPrograms, PullConfig, QueueConfig,
    SshTarget, Thresholds,
};
pub use teardown::TeardownTuning;
