//! Configuration: `fleet.toml` and what `~/.ssh/config` says about each host.

pub mod alerts;
mod connection;
pub mod error;
pub mod fleet;
mod hosts;
pub mod kaggle;
pub mod keys;
pub mod kubernetes;
pub mod paths;
pub mod pull;
pub mod ranges;
pub mod slurm;
pub mod ssh;
mod suggest;
mod target;
mod teardown;
pub mod typed;

pub use error::{ConfigError, Located};
pub use fleet::{
    Billing, FleetConfig, HostConfig, LinkTuning, ProviderPrograms, PullConfig, QueueConfig,
    SshTarget, Thresholds,
};
pub use kaggle::KaggleConfig;
pub use kubernetes::KubeConfig;
pub use slurm::SlurmConfig;
pub use teardown::{FinalCheck, TeardownTuning};
