//! What a pull of a target takes, decided in one place for `rigwatch pull`, the dashboard's
//! `p` and `:pull` alike: where its paths are configured, which lock it holds and the words
//! for it, or why there is nothing to pull. The front ends differ only in how they say it (the
//! CLI adds the TOML to write) and in whether they wait for a busy lock.

use crate::config::{FleetConfig, HostConfig, KaggleConfig, KubeConfig, PullConfig};
use crate::ledger::locks;
use crate::target::Target;

/// Where a pull reads from.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A box, or a Slurm cluster's login node (its pull is the cluster's, on the shared
    /// filesystem, whatever the job).
    Member(&'a HostConfig),
    /// A Kubernetes Job's running pod.
    Job(&'a KubeConfig, &'a str),
    /// A Kaggle kernel's latest commit: its output, through the kaggle CLI.
    Kaggle(&'a KaggleConfig, &'a str),
}

/// A pull ready to take its lock and start.
#[derive(Debug, Clone)]
pub struct Setup<'a> {
    pub source: Source<'a>,
    pub spec: &'a PullConfig,
    /// The lock's key: the member's name (a Job's pull holds its cluster).
    pub key: String,
    /// What the lock is said to hold ("box gpu-1", "Job train-a on gke").
    pub what: String,
}

/// Why there is nothing to pull.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPull {
    #[error("{0:?} is not a box or cluster of this fleet")]
    NotInFleet(String),
    #[error("{name}: no {section} paths in fleet.toml say what to bring home")]
    NoPaths { name: String, section: &'static str },
}

impl NoPull {
    /// The TOML that would give it paths, for a front end with room to show it.
    pub fn example(&self) -> Option<String> {
        let NoPull::NoPaths { section, .. } = self else {
            return None;
        };
        let path = match *section {
            "[kubernetes.pull]" => "/out/final_ckpts",
            "[kaggle.pull]" => "/kaggle/working",
            _ => "/workspace/run/final_ckpts",
        };
        Some(format!(
            "  {section}\n  paths = [\"{path}\"]\n  dest = \"~/results/{{host}}\""
        ))
    }
}

/// What a pull of `target` takes in `fleet`.
pub fn setup<'a>(fleet: &'a FleetConfig, target: &'a Target) -> Result<Setup<'a>, NoPull> {
    let missing = |name: &str, section| NoPull::NoPaths {
        name: crate::sanitize::line(name, 80),
        section,
    };
    let (source, spec, section) = match target {
        Target::Job(job) if fleet.kubernetes.iter().any(|c| c.name == job.cluster) => {
            let cluster = fleet
                .kubernetes
                .iter()
                .find(|c| c.name == job.cluster)
                .ok_or_else(|| NoPull::NotInFleet(job.cluster.clone()))?;
            let source = Source::Job(cluster, job.id.as_str());
            (source, cluster.pull.as_ref(), "[kubernetes.pull]")
        }
        Target::Job(job) if fleet.kaggle.iter().any(|c| c.name == job.cluster) => {
            let member = fleet
                .kaggle
                .iter()
                .find(|c| c.name == job.cluster)
                .ok_or_else(|| NoPull::NotInFleet(job.cluster.clone()))?;
            if !member.kernels.contains(&job.id) {
                return Err(NoPull::NotInFleet(crate::sanitize::line(&job.id, 80)));
            }
            let source = Source::Kaggle(member, job.id.as_str());
            (source, member.pull.as_ref(), "[kaggle.pull]")
        }
        _ => {
            let name = target.member();
            let host = fleet.hosts.iter().find(|h| h.name == name);
            let login = fleet
                .slurm
                .iter()
                .find(|c| c.name == name)
                .map(|c| &c.login);
            let section = if host.is_some() {
                "[host.pull]"
            } else {
                "[slurm.pull]"
            };
            let host = host
                .or(login)
                .ok_or_else(|| NoPull::NotInFleet(crate::sanitize::line(name, 80)))?;
            (Source::Member(host), host.pull.as_ref(), section)
        }
    };
    let spec = spec.ok_or_else(|| missing(target.member(), section))?;
    let (key, what) = match source {
        Source::Job(cluster, job) => (
            cluster.name.clone(),
            format!("Job {} on {}", crate::sanitize::line(job, 80), cluster.name),
        ),
        Source::Kaggle(member, kernel) => (
            member.name.clone(),
            format!(
                "Kaggle commit {} on {}",
                crate::sanitize::line(kernel, 80),
                member.name
            ),
        ),
        Source::Member(host) => (host.name.clone(), locks::target_words(fleet, &host.name)),
    };
    Ok(Setup {
        source,
        spec,
        key,
        what,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Scheduler;

    const FLEET: &str = r#"
[[host]]
name = "bare"
ssh = "root@203.0.113.5:22"

[[host]]
name = "gpu-1"
ssh = "root@203.0.113.6:22"
[host.pull]
paths = ["/w/final"]
dest = "/tmp/results/{host}"

[[kubernetes]]
name = "gke"
context = "lab"
namespace = "ml"
selector = "team=a"
"#;

    /// The dashboard and the CLI ask here; each kind of target gets its source, lock and
    /// words, or the one reason there is nothing to pull.
    #[test]
    fn each_target_gets_its_source_and_lock_or_why_not() {
        let fleet = crate::config::fleet::parse(std::path::Path::new("f.toml"), FLEET)
            .expect("valid fleet");
        let gpu = Target::Box("gpu-1".into());
        let set = setup(&fleet, &gpu).expect("a pull");
        assert!(matches!(set.source, Source::Member(h) if h.name == "gpu-1"));
        assert_eq!(
            (set.key.as_str(), set.what.as_str()),
            ("gpu-1", "box gpu-1")
        );
        let bare = Target::Box("bare".into());
        let no = setup(&fleet, &bare).expect_err("no paths");
        assert_eq!(
            no.to_string(),
            "bare: no [host.pull] paths in fleet.toml say what to bring home"
        );
        assert!(
            no.example()
                .is_some_and(|e| e.starts_with("  [host.pull]\n  paths = ["))
        );
        let job = Target::job("gke", Scheduler::Kubernetes, "train-a");
        assert_eq!(
            setup(&fleet, &job).expect_err("no paths").to_string(),
            "gke: no [kubernetes.pull] paths in fleet.toml say what to bring home"
        );
        let gone = Target::Box("nosuch".into());
        assert_eq!(
            setup(&fleet, &gone).expect_err("not in the fleet"),
            NoPull::NotInFleet("nosuch".into())
        );
    }
}
