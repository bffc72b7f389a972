//! A cluster's jobs as fleet rows, whatever the scheduler. Slurm's squeue rows and Kubernetes'
//! Jobs become the same [`JobRow`]: a phase that drives colour, alerts and the guard, the
//! scheduler's own word for the state, the reason in plain words, nodes, GPUs, restarts, the
//! walltime as a danger clock and the dangers (a checkpoint that will not survive). Pure: rows
//! and `now` in; [`ClusterReading::merge`] keeps a job that left the queue as "ended, state
//! unknown", never running.

pub mod gpus;
pub mod hostlist;
pub mod kaggle;
pub mod kaggle_seen;
pub mod kubernetes;
mod login;
pub mod pod_gpus;
pub mod sacct;
pub mod slurm;

pub use login::{bounded, bounded_to_finish};

#[cfg(test)]
mod test_rows;
#[cfg(test)]
mod tests;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::clocks::{Clock, Urgency, walltime_clock};
use crate::probe::SlurmJob;
use crate::signals::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    Slurm,
    Kubernetes,
    /// A Kaggle notebook's commits, read through the `kaggle` CLI.
    Kaggle,
}

impl Scheduler {
    pub fn word(self) -> &'static str {
        match self {
            Scheduler::Slurm => "slurm",
            Scheduler::Kubernetes => "kubernetes",
            Scheduler::Kaggle => "kaggle",
        }
    }
}

/// How a stale-checkpoint danger begins: recomputed at every judgement.
const STALE_CHECKPOINT: &str = "newest checkpoint";

/// Where a job is in its life, the same for every scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Pending,
    Running,
    /// Ending: Slurm's COMPLETING, a Kubernetes Job with `FailureTarget` whose pods still run.
    Ending,
    Succeeded,
    /// Ended badly: a non-zero exit, walltime, memory, a node, preemption, a backoff limit.
    Failed,
    Cancelled,
    /// Left the queue before its end state was read: ended, state unknown.
    Gone,
    /// A state word rigwatch does not know: shown as printed, treated as live.
    Other,
}

impl Phase {
    /// The job has ended (or left the queue): it no longer holds nodes or GPUs.
    pub fn is_over(self) -> bool {
        matches!(
            self,
            Phase::Succeeded | Phase::Failed | Phase::Cancelled | Phase::Gone
        )
    }
}

/// How a job's main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Exit {
    pub code: i64,
    /// The signal that ended it, when one did.
    pub signal: Option<u32>,
}

/// One job, as the overview, the detail, `status --json`, `watch` and `--metrics` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobRow {
    pub id: String,
    pub name: String,
    pub phase: Phase,
    /// The scheduler's own word: RUNNING, TIMEOUT, OUT_OF_MEMORY, Failed, OOMKilled, …
    pub state: String,
    /// The scheduler's reason code as printed (`BeginTime`, `Unschedulable`, `OOMKilled`).
    pub reason: Option<String>,
    /// Why it pends or how it ended, in plain words.
    pub reason_words: Option<String>,
    pub exit: Option<Exit>,
    pub nodes: Option<u32>,
    pub node_list: Option<String>,
    /// GPUs allocated (or asked for, while pending), all nodes together.
    pub gpus: Option<u32>,
    pub elapsed_secs: Option<u64>,
    pub limit_secs: Option<u64>,
    /// Walltime left when the queue was read; only while the job runs.
    #[serde(skip)]
    pub left: Option<Duration>,
    /// Requeues (Slurm) or container restarts and failed pods (Kubernetes).
    pub restarts: Option<u32>,
    /// The most restarts allowed before the job fails (Kubernetes `backoffLimit`).
    pub restart_limit: Option<u32>,
    /// Whether Slurm may requeue it (`--requeue`).
    pub requeue: Option<bool>,
    /// SIGTERM, then SIGKILL after KillWait: recomputed at every judgement.
    pub walltime: Option<Clock>,
    /// Age of the newest checkpoint, where it was read.
    pub checkpoint_age_secs: Option<u64>,
    /// What will cost data, in plain words (a checkpoint path not on a PVC).
    pub dangers: Vec<String>,
    /// nvidia-smi inside the job's allocation, per node, while it runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpu_truth: Vec<gpus::NodeGpus>,
    /// A Kubernetes Job's pods (Slurm: none, and left out of the JSON).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<PodRow>,
}

/// One pod of a Kubernetes Job: its name, phase as the API prints it, and node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PodRow {
    pub name: String,
    pub phase: String,
    pub node: Option<String>,
    /// Its containers' restarts, all together.
    pub restarts: u32,
    /// How a container of it last ended, reason and words ("OOMKilled: killed for using more
    /// than its 16Gi memory limit"), the message kubectl gave added; None while none has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_end: Option<String>,
    /// Its GPUs as nvidia-smi inside it says (`nvidia_smi = true`, running pods only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<pod_gpus::GpuUse>,
    /// Why its GPUs could not be read inside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_error: Option<String>,
}

impl JobRow {
    /// A job known by its id, name and state alone; each reader fills in what it read.
    pub fn new(id: String, name: String, phase: Phase, state: String) -> JobRow {
        JobRow {
            id,
            name,
            phase,
            state,
            reason: None,
            reason_words: None,
            exit: None,
            nodes: None,
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

    /// The walltime clock at `now`, from the queue read at `read_at`.
    pub fn walltime_at(&self, read_at: DateTime<Utc>, now: DateTime<Utc>) -> Option<Clock> {
        if self.phase.is_over() {
            return None;
        }
        let job = SlurmJob {
            id: self.id.clone(),
            name: (!self.name.is_empty()).then(|| self.name.clone()),
            state: self.state.clone(),
            used: self.elapsed_secs.map(Duration::from_secs),
            limit: self.limit_secs.map(Duration::from_secs),
            left: self.left,
        };
        let age = self
            .checkpoint_age_secs
            .and_then(|s| chrono::Duration::from_std(Duration::from_secs(s)).ok())
            .map(|age| age + (now - read_at).max(chrono::Duration::zero()));
        walltime_clock(&job, read_at, age, now)
    }

    /// How loudly the row is shown and alerted on.
    pub fn severity(&self) -> Severity {
        self.judged().0
    }

    /// How loud the row is, and why when its state alone does not say (a walltime near, a
    /// danger): "reaches its walltime in 7m". An event that is loud says its cause.
    pub fn judged(&self) -> (Severity, Option<String>) {
        let clock = self.walltime.as_ref().map(Urgency::of);
        let walltime = || {
            let left = self.walltime.as_ref()?.remaining_secs?;
            Some(format!(
                "reaches its walltime in {}",
                crate::signals::minutes(chrono::Duration::seconds(left))
            ))
        };
        match self.phase {
            Phase::Failed => (Severity::Crit, None),
            _ if clock >= Some(Urgency::TenMinutes) => (Severity::Crit, walltime()),
            Phase::Gone => (Severity::Warn, None),
            _ if clock >= Some(Urgency::Hour) => (Severity::Warn, walltime()),
            _ if !self.dangers.is_empty() => (Severity::Warn, self.dangers.first().cloned()),
            _ => (Severity::Info, None),
        }
    }

    /// The GPUs nvidia-smi saw in the job, in a few words: busy of all, mean SM clock, power.
    pub fn gpu_words(&self) -> Option<String> {
        let gpus: Vec<&crate::probe::GpuSample> =
            self.gpu_truth.iter().flat_map(|n| &n.gpus).collect();
        if gpus.is_empty() {
            return self
                .gpu_truth
                .iter()
                .find_map(|n| n.error.as_ref())
                .map(|e| format!("GPUs not read: {e}"));
        }
        let busy = gpus
            .iter()
            .filter(|g| g.util_gpu_pct.is_some_and(|u| u > 0))
            .count();
        let power: f64 = gpus.iter().filter_map(|g| g.power_draw_w).sum();
        let clocks: Vec<u32> = gpus.iter().filter_map(|g| g.sm_clock_mhz).collect();
        let clock = (!clocks.is_empty())
            .then(|| clocks.iter().map(|c| u64::from(*c)).sum::<u64>() / clocks.len() as u64);
        let mut out = format!("{busy}/{} GPUs busy", gpus.len());
        if let Some(c) = clock {
            out.push_str(&format!(", SM {c} MHz"));
        }
        out.push_str(&format!(", {power:.0} W"));
        Some(out)
    }

    /// The job in one line: state, why, and where.
    pub fn summary(&self) -> String {
        let mut out = self.state.clone();
        if let Some(exit) = self.exit.filter(|e| e.code != 0 || e.signal.is_some()) {
            out.push_str(&format!(" (exit {}", exit.code));
            if let Some(signal) = exit.signal {
                out.push_str(&format!(", signal {signal}"));
            }
            out.push(')');
        }
        if let Some(words) = &self.reason_words {
            out.push_str(": ");
            out.push_str(words);
        }
        out
    }
}

/// One read of a cluster's queue: its watched jobs, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReading {
    pub name: String,
    pub scheduler: Scheduler,
    /// Where it is read from: the login node's ssh target, or the kubeconfig context.
    pub via: String,
    pub jobs: Vec<JobRow>,
    /// Watched ids the queue no longer holds: ended, state unknown.
    pub ended_state_unknown: Vec<String>,
    /// Why the queue could not be read, naming the cluster and the probe; None when it was.
    pub error: Option<String>,
    pub read_at: DateTime<Utc>,
    /// A Kaggle account's weekly GPU quota, where it reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<crate::probe::kaggle::GpuQuota>,
}

impl ClusterReading {
    /// Recomputes every job's walltime clock at `now`, and whether its newest checkpoint is
    /// older than the walltime left (the next may not land before the kill).
    pub fn judge(&mut self, now: DateTime<Utc>) {
        let read_at = self.read_at;
        for job in &mut self.jobs {
            job.walltime = job.walltime_at(read_at, now);
            // The same clock, in Kubernetes' words: the deadline ends the pods and fails the Job.
            if let Some(clock) = job.walltime.as_mut() {
                match self.scheduler {
                    Scheduler::Kubernetes => {
                        clock.message = format!(
                            "Job {} reaches its activeDeadlineSeconds: Kubernetes ends its pods \
                             (SIGTERM, then SIGKILL after terminationGracePeriodSeconds) and \
                             fails it with DeadlineExceeded; checkpoint before then",
                            job.id
                        );
                    }
                    Scheduler::Kaggle => {
                        clock.message = format!(
                            "commit of {} reaches Kaggle's {} h limit in {}: Kaggle stops it \
                             there; write what matters to /kaggle/working before then",
                            job.id,
                            job.limit_secs.unwrap_or(0) / 3600,
                            crate::signals::minutes(chrono::Duration::seconds(
                                clock.remaining_secs.unwrap_or(0).max(0)
                            ))
                        );
                    }
                    Scheduler::Slurm => {}
                }
            }
            job.dangers.retain(|d| !d.starts_with(STALE_CHECKPOINT));
            let left = job.walltime.as_ref().and_then(|c| c.remaining_secs);
            let age = job
                .checkpoint_age_secs
                .map(|a| a as i64 + (now - read_at).num_seconds().max(0));
            if let (Some(left), Some(age)) = (left, age)
                && age > left
            {
                job.dangers.push(format!(
                    "{STALE_CHECKPOINT} {} old, older than the {} of walltime left: the next \
                     may not land before SIGKILL; checkpoint now or extend the job",
                    crate::signals::minutes(chrono::Duration::seconds(age)),
                    crate::signals::minutes(chrono::Duration::seconds(left.max(0)))
                ));
            }
        }
    }

    /// This reading, given what the last one showed: a job the last one showed that this
    /// queue no longer holds stays, as ended, state unknown (a cluster that could not be read
    /// keeps its last jobs as they were: a read error is no news about a job).
    pub fn merge(mut self, last: Option<&ClusterReading>) -> ClusterReading {
        let Some(last) = last else {
            return self;
        };
        if self.error.is_some() {
            self.jobs = last.jobs.clone();
            self.ended_state_unknown = last.ended_state_unknown.clone();
            return self;
        }
        // A row read from accounting carries no name (sacct's is free text): the queue's.
        for job in self.jobs.iter_mut().filter(|j| j.name.is_empty()) {
            if let Some(old) = last.jobs.iter().find(|o| o.id == job.id) {
                job.name = old.name.clone();
            }
        }
        for old in &last.jobs {
            if self.jobs.iter().any(|j| j.id == old.id) {
                continue;
            }
            let mut gone = old.clone();
            if !old.phase.is_over() {
                gone.phase = Phase::Gone;
                gone.state = "ENDED?".into();
                gone.reason = None;
                gone.reason_words = Some(format!(
                    "left the queue while {}; its end state was not read",
                    old.state
                ));
                gone.left = None;
                gone.walltime = None;
                gone.gpu_truth.clear();
            }
            if gone.phase == Phase::Gone && !self.ended_state_unknown.contains(&gone.id) {
                self.ended_state_unknown.push(gone.id.clone());
            }
            self.jobs.push(gone);
        }
        self
    }

    /// The worst row's severity; a queue that could not be read is a warning.
    pub fn severity(&self) -> Severity {
        let worst = self.jobs.iter().map(JobRow::severity).max();
        let unread = self.error.is_some().then_some(Severity::Warn);
        worst.max(unread).unwrap_or(Severity::Info)
    }
}
