//! Probe parsers: the text a GPU box prints, in; a typed sample or a located error, out.
//!
//! Pure functions over `&str`, no I/O, no clock, no host: the transport hands over each probe's
//! output and the caller adds the host to any error ([`ParseError::on_host`]). Every parser
//! caps its input ([`MAX_LINE_BYTES`], [`MAX_LINES`]), never panics (fuzzed with proptest), and
//! reports a missing value as `None`, never as a made-up 0. The output these parsers expect
//! is the C locale's; the probe script should run under `LC_ALL=C`.
//!
//! One file per tool: `gpu` (`nvidia-smi --query-gpu`), `reasons` (clock event bitmask),
//! `gpu_list` (`nvidia-smi -L`), `apps` (`--query-compute-apps`), `df` (bytes and inodes),
//! `proc` (uptime, loadavg, meminfo, boot id, CPUs online), `tmux` (`tmux ls`, `pgrep -af`), `kernel`
//! (Xid and OOM lines), `slurm` (`squeue`: the job's time left for a box inside a job), `squeue`
//! (a cluster's jobs, every field, for `[[slurm]]`), `kube` (`kubectl get jobs/pods -o json`,
//! for `[[kubernetes]]`). Tests against the real captures in
//! tests/fixtures live in `tests/`.

mod apps;
mod df;
mod error;
pub mod frame;
mod gpu;
mod gpu_list;
mod headed;
pub mod kaggle;
mod kernel;
pub mod kube;
pub mod loops;
mod proc;
mod reasons;
pub mod sample;
pub mod script;
mod slurm;
pub mod squeue;
mod text;
mod tmux;

#[cfg(test)]
mod tests;

pub use apps::{APPS_QUERY_FIELDS, GpuProcess, parse_compute_apps};
pub use df::{
    DfBytes, DfInodes, Mount, merge_df, parse_df_bytes, parse_df_inodes, parse_df_output,
};
pub use error::{HostParseError, ParseError};
pub use gpu::{
    GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY, GpuSample, parse_gpu_query, parse_query_failure,
};
pub use gpu_list::{GpuListing, parse_gpu_list};
pub use headed::{parse_apps_csv, parse_gpu_csv};
pub use kernel::{KernelEvent, parse_kernel_log};
pub use proc::{
    LoadAvg, MemInfo, Uptime, parse_boot_id, parse_cpus_online, parse_loadavg, parse_meminfo,
    parse_uptime,
};
pub use reasons::{ClockEventReason, ClockEventReasons};
pub use slurm::{SQUEUE_FORMAT, SlurmJob, parse_slurm_duration, parse_squeue};
pub use text::{MAX_LINE_BYTES, MAX_LINES};
pub use tmux::{ProcessLine, TmuxSession, parse_pgrep, parse_tmux_ls};
