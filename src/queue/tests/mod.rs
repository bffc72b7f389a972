//! Tests for the queue module, one file per source file, plus proptests that nothing panics.

mod eta_tests;
mod fixtures;
mod listing_tests;
mod parse_tests;
mod progress_tests;
mod props;
mod roster_tests;
mod running_tests;
mod status_tests;

use chrono::{DateTime, Utc};

/// A fixed instant `secs` after 2024-05-02T00:00:00Z.
pub(crate) fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_714_608_000 + secs, 0).expect("test instant in range")
}
