//! Rows for tests across the crate: a job with nothing else known, to judge or say things of.

use super::{JobRow, Phase};

impl JobRow {
    /// A one-node job with nothing else known, for tests of what is judged or said about it.
    pub fn for_test(id: &str, name: &str, phase: Phase, state: &str) -> JobRow {
        JobRow {
            id: id.into(),
            name: name.into(),
            phase,
            state: state.into(),
            reason: None,
            reason_words: None,
            exit: None,
            nodes: Some(1),
            node_list: None,
            gpus: None,
            elapsed_secs: None,
            limit_secs: None,
            left: None,
            restarts: None,
            restart_limit: None,
            requeue: None,
            walltime: None,
            checkpoint_age_secs: None,
            dangers: Vec::new(),
            gpu_truth: Vec::new(),
            pods: Vec::new(),
        }
    }
}
