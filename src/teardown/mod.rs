//! Teardown: the guard (pure), the plan (what a destroy means on this platform), and the one
//! destroy path (intent recorded, command run once, provider asked, outcome recorded) taken
//! when — and only when — the guard says so.

mod describe;
mod destroy;
mod exec;
pub mod guard;
pub mod plan;
mod queue_note;
mod ready;
mod unfinished;

pub use describe::{Description, describe, final_check_line};
pub use destroy::{Confirming, DestroyReport, destroy};
pub use exec::{BY_HAND, Ran, run_destroy};
pub use guard::{Guard, GuardEvent, GuardOutcome, PlanLooks, RunLooks};
pub use plan::{Method, TeardownPlan, plan};
pub use queue_note::{QueueLooks, QueueNote, queue_note};
pub use ready::{plan_looks, program_runs};
pub use unfinished::unfinished;
