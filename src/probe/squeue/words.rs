//! Slurm's words made types: job states, durations with their special words, exit codes, and
//! the pending reasons a user can act on, in plain words.

use std::time::Duration;

use serde::{Serialize, Serializer};

use super::parse_slurm_duration;

/// A job's state as squeue prints it (the long form). A word rigwatch does not know is kept
/// as printed, never guessed into a known state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    Completing,
    Completed,
    Failed,
    Timeout,
    Preempted,
    OutOfMemory,
    NodeFail,
    Cancelled,
    /// Brief: a requeued job shows PENDING again, with RestartCnt one higher.
    Requeued,
    Suspended,
    Other(String),
}

impl JobState {
    pub fn parse(text: &str) -> JobState {
        // `CANCELLED by 0` on some versions: the first word is the state.
        let word = text.split_whitespace().next().unwrap_or_default();
        match word {
            "PENDING" => JobState::Pending,
            "RUNNING" => JobState::Running,
            "COMPLETING" => JobState::Completing,
            "COMPLETED" => JobState::Completed,
            "FAILED" => JobState::Failed,
            "TIMEOUT" => JobState::Timeout,
            "PREEMPTED" => JobState::Preempted,
            "OUT_OF_MEMORY" => JobState::OutOfMemory,
            "NODE_FAIL" => JobState::NodeFail,
            "CANCELLED" => JobState::Cancelled,
            "REQUEUED" => JobState::Requeued,
            "SUSPENDED" => JobState::Suspended,
            _ => JobState::Other(crate::sanitize::line(text.trim(), 40)),
        }
    }

    pub fn word(&self) -> &str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::Preempted => "PREEMPTED",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Cancelled => "CANCELLED",
            JobState::Requeued => "REQUEUED",
            JobState::Suspended => "SUSPENDED",
            JobState::Other(text) => text,
        }
    }

    /// The job holds (or may soon hold) its nodes: pending, running, being requeued.
    pub fn is_live(&self) -> bool {
        matches!(
            self,
            JobState::Pending
                | JobState::Running
                | JobState::Completing
                | JobState::Requeued
                | JobState::Suspended
        )
    }
}

impl Serialize for JobState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.word())
    }
}

/// A duration field: a time, or one of Slurm's words for "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlurmTime {
    Known(Duration),
    Unlimited,
    NotSet,
    Invalid,
}

impl SlurmTime {
    /// `M:SS`, `H:MM:SS`, `D-HH:MM:SS` or a word; None for anything else.
    pub fn parse(text: &str) -> Option<SlurmTime> {
        match text.trim() {
            "UNLIMITED" | "INFINITE" => Some(SlurmTime::Unlimited),
            "NOT_SET" | "N/A" => Some(SlurmTime::NotSet),
            "INVALID" => Some(SlurmTime::Invalid),
            t => parse_slurm_duration(t).map(SlurmTime::Known),
        }
    }

    pub fn known(&self) -> Option<Duration> {
        match self {
            SlurmTime::Known(d) => Some(*d),
            _ => None,
        }
    }
}

/// Seconds for a known time, else the word.
impl Serialize for SlurmTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SlurmTime::Known(d) => s.serialize_u64(d.as_secs()),
            SlurmTime::Unlimited => s.serialize_str("UNLIMITED"),
            SlurmTime::NotSet => s.serialize_str("NOT_SET"),
            SlurmTime::Invalid => s.serialize_str("INVALID"),
        }
    }
}

/// How a job's batch script ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExitCode {
    pub code: u32,
    /// The signal that ended it, when one did.
    pub signal: Option<u32>,
}

impl ExitCode {
    /// `3:0` (code:signal), or a bare number: 22.05's squeue prints the raw wait status
    /// (exit 3 is 768, a kill by SIGKILL is 9).
    pub fn parse(text: &str) -> Option<ExitCode> {
        let text = text.trim();
        if let Some((code, signal)) = text.split_once(':') {
            let signal: u32 = signal.parse().ok()?;
            return Some(ExitCode {
                code: code.parse().ok()?,
                signal: (signal != 0).then_some(signal),
            });
        }
        let status: u32 = text.parse().ok()?;
        let signal = status & 0x7f;
        Some(ExitCode {
            code: (status >> 8) & 0xff,
            signal: (signal != 0).then_some(signal),
        })
    }
}

/// A reason code in plain words; None for a code not known here (shown as printed).
pub fn reason_words(code: &str) -> Option<&'static str> {
    Some(match code {
        "Priority" => "waiting behind jobs of higher priority",
        "Resources" => "waiting for nodes, CPUs or GPUs to free up",
        "BeginTime" => "held until its start time (--begin, or a requeue's delay)",
        "Dependency" => "waiting for a job it depends on",
        "DependencyNeverSatisfied" => "will never start: a job it depends on failed",
        "JobHeldUser" => "held by its owner (scontrol release to start it)",
        "JobHeldAdmin" => "held by an administrator",
        "ReqNodeNotAvail" => "a node it needs is down, drained or reserved",
        "PartitionTimeLimit" => "asks for more time than the partition allows",
        "PartitionNodeLimit" => "asks for more nodes than the partition allows",
        "PartitionDown" => "its partition is down",
        "PartitionInactive" => "its partition is inactive",
        "Reservation" => "waiting for its reservation to start",
        "NodeDown" => "a node it needs is down",
        "BadConstraints" => "no node can ever satisfy what it asks for",
        "QOSMaxGRESPerUser" | "AssocGrpGRES" | "QOSGrpGRES" => {
            "the user's or account's GPU limit is reached"
        }
        "QOSMaxJobsPerUserLimit" | "AssocMaxJobsLimit" => "the user's running-job limit is reached",
        "AssocGrpCPULimit" | "QOSGrpCpuLimit" => "the account's CPU limit is reached",
        "launch_failed_requeued_held" => "its launch failed; requeued and held",
        "NonZeroExitCode" => "its script exited with a non-zero code",
        "TimeLimit" => "ran past its time limit",
        "Prolog" => "its prolog is running",
        _ => return None,
    })
}
