//! The one confirm-wait of every teardown. A destroy command that exits 0 proves nothing (a
//! provider accepts a request it later drops; `scancel` on a purged job exits 0; `kubectl
//! delete` returns before the pods are gone), so whatever can see the target (the provider's
//! CLI, squeue, kubectl) is asked every `confirm_every` until it shows the target ended or the
//! confirm window passes. What it asks is the caller's; the waiting and the words are here.

use std::future::Future;

use crate::config::TeardownTuning;
use crate::ledger::DestroyOutcome;

/// What one look at the target saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// It is gone or ended: why, for the record.
    Ended(String),
    /// Not yet (still listed, still running, or the look failed): what was seen, kept in case it
    /// is the last look.
    NotYet(String),
    /// Nothing can ever answer (no CLI to ask, no instance id): stop asking.
    CannotAsk(String),
}

/// Looks until the target shows ended or the confirm window has passed. `claim` is what the
/// outcome would otherwise rest on ("the destroy command exited 0"); `advice` follows the last
/// look when the window passes (": check the provider").
pub async fn until_ended<F, Fut>(
    tuning: &TeardownTuning,
    claim: &str,
    advice: &str,
    mut look: F,
) -> (DestroyOutcome, String)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Seen>,
{
    let deadline = tokio::time::Instant::now() + tuning.confirm_within;
    loop {
        let last = match look().await {
            Seen::Ended(why) => return (DestroyOutcome::Confirmed, why),
            Seen::CannotAsk(why) => {
                return (DestroyOutcome::Unconfirmed, format!("{claim}, but {why}"));
            }
            Seen::NotYet(last) => last,
        };
        if tokio::time::Instant::now() + tuning.confirm_every > deadline {
            return (
                DestroyOutcome::Unconfirmed,
                format!(
                    "{claim}, but {last} {}s after it{advice}",
                    tuning.confirm_within.as_secs()
                ),
            );
        }
        tokio::time::sleep(tuning.confirm_every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn tuning() -> TeardownTuning {
        TeardownTuning {
            confirm_within: Duration::from_secs(60),
            confirm_every: Duration::from_secs(10),
            ..TeardownTuning::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn ended_on_a_later_look_is_confirmed_with_its_why() {
        let mut looks = 0;
        let (outcome, why) = until_ended(&tuning(), "it exited 0", "", || {
            looks += 1;
            let n = looks;
            async move {
                if n < 3 {
                    Seen::NotYet(format!("still listed ({n})"))
                } else {
                    Seen::Ended("no longer listed".into())
                }
            }
        })
        .await;
        assert_eq!(
            (outcome, why.as_str()),
            (DestroyOutcome::Confirmed, "no longer listed")
        );
        assert_eq!(looks, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn never_ended_is_unconfirmed_with_the_last_look_and_the_window() {
        let mut looks = 0;
        let started = tokio::time::Instant::now();
        let (outcome, why) = until_ended(&tuning(), "it exited 0", ": check the provider", || {
            looks += 1;
            let n = looks;
            async move { Seen::NotYet(format!("look {n} still lists it")) }
        })
        .await;
        assert_eq!(outcome, DestroyOutcome::Unconfirmed);
        assert_eq!(
            why,
            format!(
                "it exited 0, but look {looks} still lists it 60s after it: check the provider"
            )
        );
        // Asked at 0, 10, …, 60 s: never past the window, never fewer looks than fit in it.
        assert_eq!(looks, 7);
        assert!(started.elapsed() <= Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_to_ask_stops_at_once() {
        let mut looks = 0;
        let (outcome, why) = until_ended(&tuning(), "it exited 0", "", || {
            looks += 1;
            async { Seen::CannotAsk("there is no CLI to ask".into()) }
        })
        .await;
        assert_eq!(outcome, DestroyOutcome::Unconfirmed);
        assert_eq!(why, "it exited 0, but there is no CLI to ask");
        assert_eq!(looks, 1);
    }
}
