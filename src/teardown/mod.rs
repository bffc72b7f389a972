//! Teardown: the guard (pure), the plan (what a destroy means on this platform), and running the
//! destroy command once when — and only when — the guard says so.

mod describe;
mod exec;
pub mod guard;
pub mod plan;
mod queue_note;
mod ready;

pub use describe::{Description, describe, final_check_line};
pub use exec::{BY_HAND, Ran, carry_out, run_destroy};
pub use guard::{Guard, GuardEvent, GuardOutcome, PlanLooks, RunLooks};
pub use plan::{Method, TeardownPlan, plan};
pub use queue_note::{QueueLooks, QueueNote, queue_note};
pub use ready::{plan_looks, program_runs};
