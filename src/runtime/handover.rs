//! `s`, `l` and `L` for any target, as the person's own command (shown before it runs): on a
//! box, `ssh` to it (a shell, its log in `less +F`, its tmux pane); on a Slurm job, `ssh` to
//! the cluster's login node (a shell, the job's output file as `scontrol show job` names it, a
//! shell inside the job's allocation with `srun --overlap`); on a Kubernetes Job, the user's
//! `kubectl` with the config's context, kubeconfig and namespace (`logs -f`, `exec -it` into
//! its newest pod).

use std::ffi::OsString;

use super::Runtime;
use crate::cluster::{ClusterReading, PodRow};
use crate::config::{FleetConfig, KubeConfig};
use crate::sanitize::shell_quote;
use crate::target::{JobRef, Target};
use crate::transport::Handover;
use crate::transport::openssh::{argv, ssh_argv};

impl Runtime {
    /// The command line for `what` on `target`; why there is none, in a line.
    pub fn handover(&self, target: &Target, what: Handover) -> Result<Vec<OsString>, String> {
        let Some(fleet) = self.fleet() else {
            return Err(format!(
                "the demo's {}s are replays: there is no {} to open",
                target.kind().noun(),
                what.word()
            ));
        };
        match target {
            Target::Box(host) => {
                let config = fleet
                    .hosts
                    .iter()
                    .find(|h| &h.name == host)
                    .ok_or_else(|| format!("{host}: not a box of the fleet"))?;
                argv(fleet, config, what)
            }
            Target::Job(job) => job_argv(fleet, self.state.cluster(&job.cluster), job, what),
        }
    }
}

/// The scheduler's own way in to `job`.
pub fn job_argv(
    fleet: &FleetConfig,
    reading: Option<&ClusterReading>,
    job: &JobRef,
    what: Handover,
) -> Result<Vec<OsString>, String> {
    if let Some(slurm) = fleet.slurm.iter().find(|c| c.name == job.cluster) {
        let id = shell_quote(&job.id);
        let remote = match what {
            Handover::Shell => None,
            // StdOut is printed on a line of its own in scontrol's multi-line form, whole,
            // spaces and all.
            Handover::Log => Some(format!(
                "f=$(scontrol show job {id} | sed -n 's/^ *StdOut=//p'); \
                 if [ -z \"$f\" ]; then echo \"scontrol shows no StdOut for job \"{id} >&2; \
                 exit 1; fi; exec less +F -- \"$f\""
            )),
            Handover::Pane => Some(format!("srun --jobid={id} --overlap --pty bash -l")),
        };
        return Ok(ssh_argv(fleet, &slurm.login, remote));
    }
    if fleet.kaggle.iter().any(|c| c.name == job.cluster) {
        return Err(format!(
            "{}: a Kaggle commit runs on Kaggle's machine, with no shell to open; its log comes \
             home with its output (p)",
            crate::sanitize::line(&job.id, 80)
        ));
    }
    let Some(kube) = fleet.kubernetes.iter().find(|c| c.name == job.cluster) else {
        return Err(format!("{}: not a cluster of the fleet", job.cluster));
    };
    let pods: &[PodRow] = reading
        .and_then(|r| r.jobs.iter().find(|j| j.id == job.id))
        .map_or(&[], |j| &j.pods);
    let running = pods.iter().rev().find(|p| p.phase == "Running");
    match what {
        Handover::Log => {
            // The newest pod's log; before any pod was read, kubectl's own pick of the Job's.
            let source = pods
                .last()
                .map_or_else(|| format!("job/{}", job.id), |p| p.name.clone());
            Ok(kubectl(kube, &["logs", "-f", &source]))
        }
        Handover::Shell => match running {
            Some(pod) => Ok(kubectl(kube, &["exec", "-it", &pod.name, "--", "sh"])),
            None => Err(format!(
                "Job {} on {} has no running pod to open a shell in",
                job.id, job.cluster
            )),
        },
        Handover::Pane => Err(format!(
            "a Kubernetes Job has no tmux pane: l follows Job {}'s log, s opens a shell in its pod",
            job.id
        )),
    }
}

fn kubectl(cluster: &KubeConfig, rest: &[&str]) -> Vec<OsString> {
    std::iter::once("kubectl".to_string())
        .chain(crate::transport::kubectl::arguments(cluster, rest))
        .map(OsString::from)
        .collect()
}
