//! One wait, however many steps it takes. A timeout is the whole wait (a connect's TCP,
//! handshake and authentication; a command's slot, channel and output), not a fresh allowance
//! per step that adds up to several times what the user set; and a step that runs past it fails
//! saying how long had really passed since the wait began, not the size of one step's share.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::error::TransportError;

#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    started: Instant,
    deadline: Instant,
}

impl Budget {
    pub(super) fn new(limit: Duration) -> Budget {
        let started = Instant::now();
        Budget {
            started,
            deadline: started + limit,
        }
    }

    /// `step`, cut off at the budget's end as `stage`.
    pub(super) async fn step<T>(
        &self,
        stage: &'static str,
        step: impl Future<Output = T>,
    ) -> Result<T, TransportError> {
        tokio::time::timeout_at(self.deadline, step)
            .await
            .map_err(|_| self.spent(stage))
    }

    /// The error of a wait that ran out in `stage`: the time that really passed.
    pub(super) fn spent(&self, stage: &'static str) -> TransportError {
        TransportError::Timeout {
            stage,
            after: self.started.elapsed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn steps_share_one_deadline_and_the_error_says_the_whole_wait() {
        let budget = Budget::new(Duration::from_millis(300));
        let first = budget
            .step("first", tokio::time::sleep(Duration::from_millis(200)))
            .await;
        assert!(first.is_ok());
        let second = budget
            .step("second", tokio::time::sleep(Duration::from_millis(200)))
            .await;
        let Err(TransportError::Timeout { stage, after }) = second else {
            panic!("the second step had only what the first left: {second:?}")
        };
        assert_eq!(stage, "second");
        assert!(after >= Duration::from_millis(300), "{after:?}");
        assert!(after < Duration::from_millis(600), "{after:?}");
    }
}
