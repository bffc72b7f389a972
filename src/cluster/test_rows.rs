//! Rows for tests across the crate: a job with nothing else known, to judge or say things of.

use super::{JobRow, Phase};

impl JobRow {
    /// A one-node job with nothing else known, for tests of what is judged or said about it.
    pub fn for_test(id: &str, name: &str, phase: Phase, state: &str) -> JobRow {
        JobRow {
            nodes: Some(1),
            ..JobRow::new(id.into(), name.into(), phase, state.into())
        }
    }
}
