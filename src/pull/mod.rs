//! Pull: a host's results copied home over SFTP on its pooled connection, resumably, hashed on
//! both ends and proven to load; then judged against a fresh listing of the box (`current`).

mod check;
mod copy;
pub mod current;
mod engine;
pub mod local;
mod recheck;
pub mod remote;
pub mod verify;

pub use check::{Verification, verify as verify_local};
pub use current::{Currentness, NotCurrent, judge};
pub use engine::{Progress, list_remote, pull};
pub use recheck::{check_host, recheck};

use std::path::PathBuf;

use crate::transport::TransportError;

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("{host}: {stage}: {source}")]
    Link {
        host: String,
        stage: &'static str,
        source: TransportError,
    },
    #[error("{host}: listing the pull paths failed (exit {status:?}): {stderr}")]
    Listing {
        host: String,
        status: Option<u32>,
        stderr: String,
    },
    #[error("{}: {source}", path.display())]
    Local {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "local disk full while writing {}: free space and pull again; what arrived is kept and \
         the pull resumes from there",
        path.display()
    )]
    DiskFull { path: PathBuf },
    #[error("{0}: vanished from the box during the pull")]
    Vanished(String),
    #[error("{path}: shrank on the box during the pull (listed {expected} bytes, ended at {got})")]
    Shrank {
        path: String,
        expected: u64,
        got: u64,
    },
    #[error("{path}: {reason}")]
    Remote { path: String, reason: String },
}
