//! Platform facts and the clocks that follow from them: profiles (what stop and destroy mean,
//! what keeps billing, the timers). Pure data and pure functions; no I/O beyond reading the
//! profile files.

pub mod profiles;

pub use profiles::{Profile, load_all};
