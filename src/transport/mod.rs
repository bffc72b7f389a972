//! Transport: the pooled SSH connections to the boxes, and `kubectl` for Kubernetes clusters.
//! The only module that talks to the network.

mod algorithms;
mod auth;
mod banner;
mod box_exec;
mod budget;
mod bytes;
mod error;
mod exec;
mod framer;
mod handler;
mod handles;
mod jumps;
pub mod kaggle;
pub mod known_hosts;
pub mod kubectl;
mod link;
pub mod openssh;
mod pool;
mod rate;
mod session;
mod sftp;
mod shell;
mod stream;

use std::time::Duration;

pub use box_exec::{BoxExec, KubectlBox, OneShell};
pub use bytes::BytesEnd;
pub use error::TransportError;
pub use exec::{ExecLimits, ExecOutput, status_words};
pub use jumps::Jumps;
pub use link::{LinkKind, LinkState, SLOW_RTT};
pub use openssh::Handover;
pub use pool::{Helpers, HostLink, Pool, backoff};
pub use rate::LinkRate;
pub use session::{ConnectOptions, Session, WINDOW_BYTES};
pub use sftp::{SFTP_OPEN_TIMEOUT, SftpChannel};
pub use stream::{LineSplitter, STREAM_QUEUE, StreamEvent, StreamInput};

pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}
