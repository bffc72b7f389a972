//! Teardown: the dialog (a pure state machine, `driver`), the plan (what a destroy means on this
//! platform), the one executor of the dialog's effects through a small I/O trait (`io`; live in
//! `live`), and the one destroy path (intent recorded, command run once, provider asked, outcome
//! recorded) taken when — and only when — the dialog says so.

mod confirm;
mod describe;
mod destroy;
mod driver;
mod exec;
mod facts;
mod hold;
mod io;
mod job;
mod kube;
mod live;
pub mod plan;
mod queue_note;
mod ready;
#[cfg(test)]
pub mod scripted;
mod target_io;
mod unfinished;

pub use crate::config::FinalCheck;
pub use describe::{Description, describe};
pub use driver::{CHECK_MAX_AGE, Dialog, Effect, Event, NAME_MAX, Stage};
pub use facts::{Ending, Finished, PlanLooks, RunLooks, looks_of};
pub use io::{CheckFound, TeardownIo, execute};
pub use plan::{Method, TeardownPlan, plan};
pub use queue_note::{QueueLooks, QueueNote, QueueSeen, queue_note};
pub use target_io::io_for;
pub use unfinished::unfinished;
