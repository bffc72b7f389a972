//! What an action is about: a box, a Slurm job of a cluster, or a Kubernetes Job of a
//! namespace. Every key and command that acts (detail, pull, teardown, shell, log, silence)
//! takes one, so none can fall through to a selection the person cannot see; and every word a
//! dialog or a refusal says about it (cancel a job, delete a Job, destroy a box) comes from
//! its kind here, not from the screen that asked.

/// Which scheduler a job is of: part of what names a job target.
pub use crate::cluster::Scheduler;

/// One thing of the fleet an action can be aimed at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// A box, by its `[[host]]` name.
    Box(String),
    /// A job of a `[[slurm]]` or `[[kubernetes]]` member.
    Job(JobRef),
}

/// A cluster's job: the cluster's name, its scheduler, and the job's id (Slurm's number, a
/// Kubernetes Job's name).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobRef {
    pub cluster: String,
    pub scheduler: Scheduler,
    pub id: String,
}

/// The kinds of target, for the words said about one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Box,
    SlurmJob,
    KubernetesJob,
    /// A Kaggle notebook's latest version: it runs on Kaggle's machine and nothing of
    /// rigwatch's tears it down.
    KaggleCommit,
}

impl Kind {
    /// "box", "Slurm job", "Kubernetes Job".
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Box => "box",
            Kind::SlurmJob => "Slurm job",
            Kind::KubernetesJob => "Kubernetes Job",
            Kind::KaggleCommit => "Kaggle commit",
        }
    }

    /// What a teardown does to it: a box is destroyed, a Slurm job cancelled (`scancel`), a
    /// Kubernetes Job deleted with its pods.
    pub fn teardown_verb(self) -> &'static str {
        match self {
            Kind::Box => "destroy",
            Kind::SlurmJob => "cancel",
            Kind::KubernetesJob => "delete",
            Kind::KaggleCommit => "stop",
        }
    }

    /// The caution before tearing down something still alive.
    pub fn still_alive(self) -> &'static str {
        match self {
            Kind::Box => "the run still looks alive on this box",
            Kind::SlurmJob | Kind::KubernetesJob | Kind::KaggleCommit => {
                "the job has not ended: it still runs or waits in the queue"
            }
        }
    }
}

impl Target {
    pub fn job(cluster: &str, scheduler: Scheduler, id: &str) -> Target {
        Target::Job(JobRef {
            cluster: cluster.to_string(),
            scheduler,
            id: id.to_string(),
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            Target::Box(_) => Kind::Box,
            Target::Job(j) => match j.scheduler {
                Scheduler::Slurm => Kind::SlurmJob,
                Scheduler::Kubernetes => Kind::KubernetesJob,
                Scheduler::Kaggle => Kind::KaggleCommit,
            },
        }
    }

    /// The fleet member the runtime knows it by: the box, or the job's cluster (whose session,
    /// lock and ledger name the job shares).
    pub fn member(&self) -> &str {
        match self {
            Target::Box(host) => host,
            Target::Job(j) => &j.cluster,
        }
    }

    /// Its own name: the box's, or the job's id. What is typed to confirm a teardown, and what
    /// a person copies.
    pub fn name(&self) -> &str {
        match self {
            Target::Box(host) => host,
            Target::Job(j) => &j.id,
        }
    }

    /// The job, for a job.
    pub fn as_job(&self) -> Option<&JobRef> {
        match self {
            Target::Box(_) => None,
            Target::Job(j) => Some(j),
        }
    }
}

impl std::fmt::Display for Target {
    /// "box gpu-1", "Slurm job 4242 on hpc", "Kubernetes Job train on gke".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Box(host) => write!(f, "box {host}"),
            Target::Job(j) => write!(f, "{} {} on {}", self.kind().noun(), j.id, j.cluster),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_named_and_torn_down_in_its_own_words() {
        let b = Target::Box("gpu-1".into());
        let s = Target::job("hpc", Scheduler::Slurm, "4242");
        let k = Target::job("gke", Scheduler::Kubernetes, "train-a");
        assert_eq!(b.to_string(), "box gpu-1");
        assert_eq!(s.to_string(), "Slurm job 4242 on hpc");
        assert_eq!(k.to_string(), "Kubernetes Job train-a on gke");
        assert_eq!(
            [b.kind(), s.kind(), k.kind()].map(Kind::teardown_verb),
            ["destroy", "cancel", "delete"]
        );
        assert_eq!((s.member(), s.name()), ("hpc", "4242"));
        assert_eq!((b.member(), b.name()), ("gpu-1", "gpu-1"));
        assert!(b.as_job().is_none() && k.as_job().is_some());
    }
}
