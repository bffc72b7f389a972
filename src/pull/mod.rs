//! Pull: a host's results copied home over SFTP on its pooled connection, resumably, hashed on
//! both ends and proven to load; then judged against a fresh listing of the box (`current`).
//!
//! Reading order, as one pull goes: `engine` (one pull of one host) runs `remote`'s listing
//! into a `spool` read back by `listing`, with `names` carrying a file's name as bytes; `plan`
//! decides what each listed file becomes (`local`: where it lands; `protect`: what it may never
//! write over); `chunk` takes the plan a chunk at a time: `copy` (a big file, many reads in
//! flight, over `channel`'s SFTP, with `writeback`) and `batch` (small files as `tar_stream`s),
//! `box_hash` (the box's SHA-256), `restat` (the second look), then `finish` proves each copy
//! (`check` and `verify`) and `promote` gives it its final name (`place` for a new small file,
//! `durable` for the renames); `book` records each chunk in the ledger. A Kaggle commit's output
//! comes another way (`kaggle`: the CLI downloads it, then the same proof and ledger). Afterwards, for the
//! teardown guard: `current` judges the last pull against a fresh look that `recheck` takes
//! (`strict` when the box's own hashing is not trusted).

mod batch;
mod book;
mod box_hash;
mod channel;
mod check;
mod chunk;
mod copy;
pub mod current;
mod durable;
mod engine;
mod finish;
pub mod kaggle;
mod listed;
mod listing;
pub mod local;
pub mod names;
mod pace;
mod place;
mod plan;
mod progress;
mod promote;
pub mod protect;
mod recheck;
pub mod remote;
mod restat;
mod scribe;
mod settled;
pub mod setup;
mod spool;
mod strict;
mod tar_stream;
pub mod verify;
mod writeback;

pub use check::{Verification, verify as verify_local};
pub use chunk::Tally;
pub use current::{Currentness, NotCurrent, judge};
pub use engine::{PullJob, list_remote, pull};
pub use progress::Progress;
pub use recheck::{Depth, FinalCheckCost, check_host, check_job, final_check_cost, recheck};

use std::path::PathBuf;

use crate::transport::TransportError;

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("{host}: {stage}: {source}")]
    Link {
        host: String,
        stage: &'static str,
        source: TransportError,
    },
    #[error(
        "{host}: listing the pull paths failed ({}): {stderr}",
        crate::transport::status_words(*status)
    )]
    Listing {
        host: String,
        status: Option<u32>,
        stderr: String,
    },
    #[error("{}: {source}", path.display())]
    Local {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `under`: the folder the user can free space in (beside dest, where the `.part` files
    /// live), not the hashed name of the file that did not fit.
    #[error(
        "{DISK_FULL} under {}: free space and pull again; what arrived is kept and the pull \
         resumes from there",
        under.display()
    )]
    DiskFull { under: PathBuf },
    #[error("{0}: vanished from the box during the pull")]
    Vanished(String),
    #[error("{path}: shrank on the box during the pull (listed {expected} bytes, ended at {got})")]
    Shrank {
        path: String,
        expected: u64,
        got: u64,
    },
    #[error("{path}: {reason}")]
    Remote { path: String, reason: String },
    #[error(transparent)]
    Ledger(#[from] crate::ledger::LedgerError),
    #[error("the pull's records: {0}")]
    Book(String),
    #[error(transparent)]
    Kubectl(#[from] crate::transport::kubectl::KubectlError),
    /// Boxed: its words are long and rare, and every pull result carries the enum.
    #[error(transparent)]
    Kaggle(Box<crate::transport::kaggle::KaggleError>),
    /// A pull runs only while it holds its target (`ledger::locks`): no other pull, kill or
    /// teardown of it can then overlap it, and its `.part` files are its own.
    #[error("{0}: the pull does not hold its target, so nothing was copied")]
    NotHeld(String),
}

impl From<crate::transport::kaggle::KaggleError> for PullError {
    fn from(e: crate::transport::kaggle::KaggleError) -> PullError {
        PullError::Kaggle(Box::new(e))
    }
}

impl PullError {
    /// What went wrong with one file, for its line and its ledger record, which already name
    /// the file: without the remote path again, so a deep path cannot push the reason past
    /// the line's end.
    pub fn file_reason(&self) -> String {
        match self {
            PullError::Vanished(_) => "vanished from the box during the pull".to_string(),
            PullError::Shrank { expected, got, .. } => format!(
                "shrank on the box during the pull (listed {expected} bytes, ended at {got})"
            ),
            PullError::Remote { reason, .. } => reason.clone(),
            other => other.to_string(),
        }
    }
}

const DISK_FULL: &str = "local disk full";

/// Why one file was not copied: the words for its line and record, and whether it was the
/// local disk filling up (then the pull's last line says to free space).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCopied {
    pub why: String,
    pub disk_full: bool,
}

impl From<String> for NotCopied {
    fn from(why: String) -> NotCopied {
        NotCopied {
            why,
            disk_full: false,
        }
    }
}

impl From<PullError> for NotCopied {
    fn from(e: PullError) -> NotCopied {
        NotCopied {
            disk_full: matches!(e, PullError::DiskFull { .. }),
            why: e.file_reason(),
        }
    }
}

/// A pull as the ledger has it: its files are there (`Ledger::each_file`), a chunk at a time
/// as the pull went; here, what they came to.
#[derive(Debug)]
pub struct Pulled {
    pub id: i64,
    pub host: String,
    pub unmatched: Vec<String>,
    pub local_disk_full: bool,
    pub tally: Tally,
}

impl Pulled {
    /// Every path matched and every file proven: what the teardown guard accepts.
    pub fn all_proven(&self) -> bool {
        self.unmatched.is_empty()
            && self.tally.outcomes[crate::ledger::Outcome::Proven as usize] == self.tally.files
    }
}

/// A pull as the CLI and the dashboard run it: the host's last pull and the local files it must
/// not overwrite (`protect`) come from the ledger, and the records go into it as the pull goes.
/// `held` is the host's lock, taken by the caller (who decides whether to wait for it).
pub async fn pull_and_record(
    session: &crate::transport::Session,
    host: &crate::config::HostConfig,
    spec: &crate::config::PullConfig,
    ledger: &mut crate::ledger::Ledger,
    progress: std::sync::Arc<Progress>,
    held: &crate::ledger::locks::Held,
) -> Result<Pulled, PullError> {
    holds(held, &host.name).map_err(PullError::NotHeld)?;
    let previous = ledger.latest_pull_id(&host.name)?.map(|(id, _)| id);
    let protected = protected(ledger.protected_files(&host.name)?, spec).await?;
    let job = PullJob {
        host: &host.name,
        instance_id: host.instance_id.as_deref(),
        spec,
        previous: None,
        protected,
    };
    let book = booked(ledger, previous, &job)?;
    let (head, tally, book) = engine::pull_into(session, &job, progress, book).await?;
    Ok(ended(book, head, tally)?)
}

/// Err(the target's name, for [`PullError::NotHeld`]) when `held` is another target's lock.
fn holds(held: &crate::ledger::locks::Held, name: &str) -> Result<(), String> {
    match held.covers(name) {
        true => Ok(()),
        false => Err(crate::sanitize::line(name, 80)),
    }
}

/// The pull's book: a connection of its own to `ledger`'s file, for the book's own thread.
fn booked(
    ledger: &crate::ledger::Ledger,
    previous: Option<i64>,
    job: &PullJob<'_>,
) -> Result<book::Booked, crate::ledger::LedgerError> {
    let now = chrono::Utc::now();
    Ok(book::Booked {
        ledger: crate::ledger::Ledger::open(ledger.path())?,
        previous,
        head: crate::ledger::PullRecord {
            id: 0,
            host: job.host.to_string(),
            started: now,
            finished: now,
            paths: job.spec.paths.clone(),
            unmatched: Vec::new(),
            instance_id: job.instance_id.map(String::from),
            files: Vec::new(),
            local_disk_full: false,
        },
        id: None,
    })
}

fn ended(
    mut book: book::Booked,
    head: crate::ledger::PullRecord,
    tally: Tally,
) -> Result<Pulled, crate::ledger::LedgerError> {
    Ok(Pulled {
        id: book.end(&head)?,
        host: head.host,
        unmatched: head.unmatched,
        local_disk_full: head.local_disk_full,
        tally,
    })
}

/// The local copies a pull must not overwrite: the ledger's `claims`, looked at on disk.
async fn protected(
    claims: Vec<(String, String)>,
    spec: &crate::config::PullConfig,
) -> Result<protect::Protected, PullError> {
    tokio::task::spawn_blocking(move || protect::Protected::of(claims))
        .await
        .map_err(|e| PullError::Local {
            path: spec.dest.clone(),
            source: std::io::Error::other(e.to_string()),
        })
}

/// A Kubernetes Job's pull: its newest running pod's files under `[kubernetes.pull]`, copied
/// through `kubectl exec` (no SFTP there) and recorded under the cluster's name with the Job
/// as the instance. Only the cluster's last pull of this same Job (whatever was pulled of other
/// Jobs since) lets files be skipped as unchanged.
pub async fn pull_job_and_record(
    cluster: &crate::config::KubeConfig,
    job: &str,
    spec: &crate::config::PullConfig,
    ledger: &mut crate::ledger::Ledger,
    progress: std::sync::Arc<Progress>,
    held: &crate::ledger::locks::Held,
) -> Result<Pulled, PullError> {
    holds(held, &cluster.name).map_err(PullError::NotHeld)?;
    let pod = crate::transport::KubectlBox::of_job(cluster, job, recheck::FIND_POD).await?;
    let previous = ledger.latest_pull_of(&cluster.name, job)?.map(|p| p.id);
    let protected = protected(ledger.protected_files(&cluster.name)?, spec).await?;
    let pull_job = PullJob {
        host: &cluster.name,
        instance_id: Some(job),
        spec,
        previous: None,
        protected,
    };
    // A pod has no SFTP: every file goes by tar batches or `tail` over exec, with the same
    // hashing, proof and promotion as a box's.
    let none: channel::Opening<'_> = Box::pin(std::future::ready(Err(
        crate::transport::TransportError::Kubectl("no SFTP in a pod: files go over exec".into()),
    )));
    let unpaced = std::future::ready(pace::Budget::unpaced());
    let book = booked(ledger, previous, &pull_job)?;
    let (head, tally, book) =
        engine::pull_over(&pod, (none, unpaced), &pull_job, progress, book).await?;
    Ok(ended(book, head, tally)?)
}
