//! The one destroy path. The dashboard and `rigwatch teardown` call `destroy` once the guard has
//! fired and only render the report it returns:
//! 1. the intent (host, instance, masked command, the pull relied on, time, this process) is
//!    written to the ledger first; if it cannot be, nothing runs;
//! 2. the command runs once in its own process group (or the person's word is taken, by hand);
//! 3. exit 0 proves nothing: the provider is asked until it no longer lists the instance (or
//!    lists it destroyed), or the confirm window has passed;
//! 4. the outcome (confirmed, UNCONFIRMED with why, or FAILED with how) is added to the intent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;

use super::confirm::{Seen, until_ended};
use super::exec::{BY_HAND, run_destroy, run_on_host};
use super::job::job_ended;
use super::plan::Method;
use super::ready::{PROVIDER_TIMEOUT, provider_cli};
use crate::clocks::Profile;
use crate::config::slurm::SlurmConfig;
use crate::config::{FleetConfig, HostConfig, TeardownTuning};
use crate::ledger::{DestroyOutcome, Ledger, TeardownFinish, TeardownIntent};
use crate::provider::{InstanceState, Provider, query};
use crate::sanitize::mask_secrets;
use crate::transport::Session;

/// Who is asked afterwards, and how long the destroy and the asking may take.
#[derive(Debug, Clone)]
pub struct Confirming {
    /// The provider CLI that lists the instance; None on a platform without one.
    pub provider: Option<(Provider, PathBuf)>,
    /// For a cluster job: its cluster, whose queue is read until it shows the job ended.
    pub cluster: Option<SlurmConfig>,
    pub tuning: TeardownTuning,
}

impl Confirming {
    pub fn for_host(profile: &Profile, fleet: &FleetConfig) -> Confirming {
        Confirming {
            provider: provider_cli(profile, fleet),
            cluster: None,
            tuning: fleet.teardown.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DestroyReport {
    /// The command as run and recorded, secrets masked; None by hand.
    pub command: Option<String>,
    /// What the command printed (masked), or the person's word, line by line.
    pub output: Vec<String>,
    /// The outcome and why; Err when it was refused and nothing ran.
    pub outcome: Result<(DestroyOutcome, String), String>,
    /// Where the outcome is recorded, or why it is not (the intent is, without one).
    pub recorded: Result<PathBuf, String>,
}

impl DestroyReport {
    /// The line every front end ends with: the outcome's word, why, and where it is recorded.
    pub fn last_line(&self) -> String {
        match (&self.outcome, &self.recorded) {
            (Err(why), _) => format!("REFUSED, nothing ran: {why}"),
            (Ok((outcome, why)), Ok(path)) => {
                format!("{outcome}: {why}; recorded in {}", path.display())
            }
            (Ok((outcome, why)), Err(e)) => format!("{outcome}: {why}; OUTCOME NOT RECORDED: {e}"),
        }
    }

    /// None when refused.
    pub fn word(&self) -> Option<DestroyOutcome> {
        self.outcome.as_ref().ok().map(|(o, _)| *o)
    }
}

/// Carries out what the guard's Fire means for `host` (see the module's steps); `session` is
/// the host's pooled session, for a command that runs on it.
pub async fn destroy(
    host: &HostConfig,
    method: &Method,
    pull_id: i64,
    ledger: &Path,
    confirming: &Confirming,
    session: Option<&Session>,
    holding: Option<std::fs::File>,
) -> DestroyReport {
    let refused = |why: String| DestroyReport {
        command: None,
        output: Vec::new(),
        outcome: Err(why),
        recorded: Err("nothing ran, so nothing was recorded".into()),
    };
    let command = match method {
        Method::Blocked { why } => return refused(why.clone()),
        Method::Command { command } | Method::OnHost { command } => Some(command.as_str()),
        Method::Manual { .. } => None,
    };
    let on_host = matches!(method, Method::OnHost { .. });
    if on_host && session.is_none() {
        return refused(format!(
            "{} is not reachable, so the command cannot run on it",
            host.name
        ));
    }
    let masked = command.map(mask_secrets);
    let intent = TeardownIntent {
        at: Utc::now(),
        host: host.name.clone(),
        instance_id: host.instance_id.clone(),
        command: masked.clone(),
        pull_id,
        pid: std::process::id(),
    };
    let act = async {
        let timeout = confirming.tuning.destroy_timeout;
        let (exit_status, output, failed) = match (command, session) {
            (Some(command), Some(session)) if on_host => {
                let ran = run_on_host(session, command, timeout).await;
                (ran.exit_status, ran.output, ran.failed)
            }
            (Some(command), _) => {
                let ran = run_destroy(command, timeout, holding).await;
                (ran.exit_status, ran.output, ran.failed)
            }
            (None, _) => (None, BY_HAND.to_string(), None),
        };
        let (outcome, why) = match failed {
            // A failed command proves nothing either: it may have destroyed the box before it
            // failed (or timed out). Where the provider can be asked, what it lists decides.
            Some(how) if confirming.cluster.is_none() => {
                after_failure(&how, host.instance_id.as_deref(), confirming).await
            }
            Some(how) => (
                DestroyOutcome::Failed,
                format!("{how}; the job may still run"),
            ),
            None => {
                let claim = if command.is_some() {
                    "the destroy command exited 0"
                } else {
                    "you said you destroyed it at the provider"
                };
                match (&confirming.cluster, host.instance_id.as_deref()) {
                    (Some(cluster), Some(job)) => {
                        job_ended(cluster, session, job, &confirming.tuning, claim).await
                    }
                    _ => ask_provider(host.instance_id.as_deref(), confirming, claim).await,
                }
            }
        };
        Acted {
            exit_status,
            output,
            outcome,
            why,
        }
    };
    recorded(ledger, intent, act).await
}

/// What a destroy did: its exit, its output, and the outcome with why.
pub(super) struct Acted {
    pub exit_status: Option<i32>,
    pub output: String,
    pub outcome: DestroyOutcome,
    pub why: String,
}

/// The one way a destroy is carried out, whatever it runs: the intent recorded first (if it
/// cannot be, `act` never starts: a future does nothing until awaited), then `act`, then its
/// outcome added to the intent.
pub(super) async fn recorded(
    ledger: &Path,
    intent: TeardownIntent,
    act: impl std::future::Future<Output = Acted>,
) -> DestroyReport {
    let command = intent.command.clone();
    let id = match with_ledger(ledger, move |l| l.record_intent(&intent)).await {
        Ok(id) => id,
        Err(e) => {
            return DestroyReport {
                command: None,
                output: Vec::new(),
                outcome: Err(format!(
                    "the ledger cannot record the destroy's intent ({e}); a destroy without a \
                     record does not run"
                )),
                recorded: Err("nothing ran, so nothing was recorded".into()),
            };
        }
    };
    let Acted {
        exit_status,
        output,
        outcome,
        why,
    } = act.await;
    let finish = TeardownFinish {
        finished: Utc::now(),
        exit_status,
        output: output.clone(),
        outcome,
        why: why.clone(),
    };
    let recorded = match with_ledger(ledger, move |l| l.record_outcome(id, &finish)).await {
        Ok(true) => Ok(ledger.to_path_buf()),
        Ok(false) => Err("another rigwatch already recorded an outcome for it".into()),
        Err(e) => Err(e),
    };
    DestroyReport {
        command,
        output: output.lines().map(String::from).collect(),
        outcome: Ok((outcome, why)),
        recorded,
    }
}

/// After a destroy command that failed (`how`): the provider asked once. Gone or destroyed there
/// is destroyed, whatever the exit said; still listed, or not askable, is FAILED.
async fn after_failure(
    how: &str,
    id: Option<&str>,
    confirming: &Confirming,
) -> (DestroyOutcome, String) {
    let failed = |seen: String| (DestroyOutcome::Failed, format!("{how}; {seen}"));
    let (Some((provider, program)), Some(id)) = (&confirming.provider, id) else {
        return failed("the box may still exist and bill".into());
    };
    let (name, id) = (provider.default_program(), crate::sanitize::line(id, 80));
    match query(*provider, program, PROVIDER_TIMEOUT).await {
        Ok(rows) => match rows.iter().find(|r| r.instance_id == id) {
            None => (
                DestroyOutcome::Confirmed,
                format!("{how}, but {name} no longer lists instance {id}: destroyed"),
            ),
            Some(r) if r.state == InstanceState::Destroyed => (
                DestroyOutcome::Confirmed,
                format!("{how}, but {name} lists instance {id} as destroyed"),
            ),
            Some(r) => failed(format!(
                "{name} still lists instance {id} as {}: it may still bill",
                crate::sanitize::line(r.state.word(), 40)
            )),
        },
        Err(e) => failed(format!(
            "{name} could not be asked ({}): the box may still exist and bill",
            mask_secrets(&e.to_string())
        )),
    }
}

/// Asks the provider until the instance is gone or the confirm window has passed; `claim` is
/// what the outcome would otherwise rest on.
async fn ask_provider(
    id: Option<&str>,
    confirming: &Confirming,
    claim: &str,
) -> (DestroyOutcome, String) {
    let unconfirmed = |why: String| (DestroyOutcome::Unconfirmed, format!("{claim}, but {why}"));
    let Some((provider, program)) = &confirming.provider else {
        return unconfirmed("there is no provider CLI to ask: check the provider".into());
    };
    let name = provider.default_program();
    let Some(id) = id else {
        return unconfirmed(format!("there is no instance_id to ask {name} about"));
    };
    let id = crate::sanitize::line(id, 80);
    let id = id.as_str();
    let advice = ": check the provider";
    until_ended(&confirming.tuning, claim, advice, move || async move {
        match query(*provider, program, PROVIDER_TIMEOUT).await {
            Ok(rows) => match rows.iter().find(|r| r.instance_id == id) {
                None => Seen::Ended(format!("{name} no longer lists instance {id}")),
                Some(r) if r.state == InstanceState::Destroyed => {
                    Seen::Ended(format!("{name} lists instance {id} as destroyed"))
                }
                Some(r) => Seen::NotYet(format!(
                    "{name} still lists instance {id} as {}",
                    crate::sanitize::line(r.state.word(), 40)
                )),
            },
            Err(e @ crate::provider::ProviderError::NotInstalled { .. }) => {
                Seen::CannotAsk(format!("there is no provider CLI to ask ({e})"))
            }
            Err(e) => Seen::NotYet(format!(
                "{name} could not be asked ({})",
                mask_secrets(&e.to_string())
            )),
        }
    })
    .await
}

/// Runs `f` on the ledger at `path`, off the async runtime.
pub(super) async fn with_ledger<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce(&Ledger) -> Result<T, crate::ledger::LedgerError> + Send + 'static,
) -> Result<T, String> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || Ledger::open(&path).and_then(|l| f(&l)))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// How long any destroy may be in flight (the longest timeout and confirm window the config
/// allows, and a minute more): an intent older than this has no live rigwatch behind it.
pub(super) const LONGEST: Duration = Duration::from_secs(3600 + 600 + 60);

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostConfig {
        let fleet = crate::config::fleet::parse(
            Path::new("f.toml"),
            "[[host]]\nname = \"a\"\nssh = \"root@h\"\ninstance_id = \"7\"\n",
        )
        .expect("fleet");
        fleet.hosts[0].clone()
    }

    fn confirming() -> Confirming {
        Confirming {
            provider: None,
            cluster: None,
            tuning: TeardownTuning::default(),
        }
    }

    #[tokio::test]
    async fn no_intent_written_means_nothing_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("ran");
        let blocker = dir.path().join("not-a-folder");
        std::fs::write(&blocker, b"").expect("file");
        let method = Method::Command {
            command: format!("touch '{}'", marker.display()),
        };
        let ledger = blocker.join("ledger.sqlite");
        let report = destroy(&host(), &method, 1, &ledger, &confirming(), None, None).await;
        let why = report.outcome.clone().expect_err("refused");
        assert!(why.contains("cannot record the destroy's intent"), "{why}");
        assert!(report.last_line().starts_with("REFUSED, nothing ran"));
        assert!(!marker.exists(), "the command ran without an intent");
    }

    #[tokio::test]
    async fn without_a_provider_to_ask_exit_zero_stays_unconfirmed() {
        let (outcome, why) =
            ask_provider(Some("7"), &confirming(), "the destroy command exited 0").await;
        assert_eq!(outcome, DestroyOutcome::Unconfirmed);
        assert_eq!(
            why,
            "the destroy command exited 0, but there is no provider CLI to ask: check the provider"
        );
    }
}
