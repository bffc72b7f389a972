//! Platform facts and the clocks that follow from them: profiles (what stop and destroy mean,
//! what keeps billing, the timers), the danger clocks, and cost so far. Pure data and pure
//! functions of time passed in; no I/O beyond reading the profile files.

pub mod cost;
pub mod engine;
pub mod profiles;
pub mod quota;
pub mod rates;

pub use cost::{Billed, CostLedger, CostReport};
pub use engine::{Clock, ClockFacts, ClockKind, Confidence, Urgency, clocks, walltime_clock};
pub use profiles::{Profile, load_all};
pub use quota::SessionLog;
pub use rates::{RateSource, Rates, billed, rates, stopped_rate};
