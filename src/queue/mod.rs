//! Queues of training cells on rented boxes (`run_queue.sh` discipline): parse the queue file,
//! read the durable final copies, find the running cell, read its progress from the log tail,
//! estimate rate and ETA, and reconcile the whole fleet's roster.
//!
//! Everything here is a pure function of text and time (`now` is passed in): no clock, no I/O,
//! no async, no UI. Imports only std, serde, chrono, regex and thiserror.
//!
//! | file | holds |
//! |---|---|
//! | `parse` | queue file → [`Queue`] of [`Cell`]s; `start_index` semantics; [`QueueError`] |
//! | `listing` | `final_dir` listing → [`FinalListing`]; the [`DoneRule`] and [`is_cell_done`] |
//! | `running` | which cell runs, from a command line and the newest log ([`running_cell`]) |
//! | `progress` | log tail → [`Progress`] (tqdm, Lightning, HF Trainer, Keras, epoch/step lines) |
//! | `eta` | samples → [`CellRate`], [`CellEta`], [`QueueEta`] (epoch-weighted) |
//! | `roster` | fleet-wide [`reconcile`] → [`Roster`] of [`CellReport`]s and [`HostSummary`]s |
//! | `status` | [`QueueStatus`] for `status --json`, [`overview_label`] for the overview column |

mod eta;
mod listing;
mod parse;
mod progress;
mod roster;
mod running;
mod status;

#[cfg(test)]
mod tests;

pub use eta::{
    CellEta, CellRate, MAX_ETA_SECS, QueueEta, Sample, cell_eta, cell_rate, cell_weights, queue_eta,
};
pub use listing::{
    DoneCheck, DoneRule, FinalFile, FinalListing, check_cell, glob_match, is_cell_done,
    parse_final_listing,
};
pub use parse::{Cell, Queue, QueueError, cell_name, parse_queue, parse_queue_lenient};
pub use progress::{Progress, parse_progress, parse_progress_with, segments};
pub use roster::{
    CellRef, CellReport, CellState, DEFAULT_RESUME_TEMPLATE, HostQueue, HostSummary, Presence,
    Resume, Roster, RosterOptions, reconcile, resume_command,
};
pub use running::{QueueInvocation, queue_invocation, running_cell};
pub use status::{CurrentCell, QueueStatus, compact_duration, overview_label};
