//! `[[slurm]]`: a Slurm cluster reached through its login node, and which of its jobs are
//! watched. The connection keys are a `[[host]]`'s, parsed by the same code
//! (`config::connection`), so the login node goes through the same pool, `~/.ssh/config` and
//! ProxyJump as any box.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::connection::connection;
use super::fleet::{Billing, HostConfig};
use super::pull::{Place, RawPull};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSlurm {
    name: Spanned<String>,
    ssh: Spanned<String>,
    identity: Option<Spanned<String>>,
    accept_new: Option<bool>,
    user: Option<Spanned<String>>,
    jobs: Option<Vec<Spanned<JobId>>>,
    names: Option<Vec<Spanned<String>>>,
    partition: Option<Spanned<String>>,
    period_secs: Option<Spanned<f64>>,
    checkpoints: Option<Spanned<String>>,
    pull: Option<Spanned<RawPull>>,
}

impl RawSlurm {
    pub(super) fn identity(&self) -> Option<&Spanned<String>> {
        self.identity.as_ref()
    }
}

/// `jobs = [4242, "4243_7"]`: a number, or text for an array task.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum JobId {
    Number(u64),
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SlurmConfig {
    pub name: String,
    /// The login node, as a host the pool connects to (profile `slurm`); it carries the
    /// cluster's `[slurm.pull]`.
    pub login: HostConfig,
    /// Whose jobs: None is the login user (`squeue --me`).
    pub user: Option<String>,
    /// Job ids to watch; with `names` empty too, every job of the user.
    pub jobs: Vec<String>,
    /// Glob patterns over job names.
    pub names: Vec<String>,
    pub partition: Option<String>,
    /// How often squeue is asked: one call for all of the user's jobs.
    pub period: Duration,
    /// Where a job writes its checkpoints on the cluster filesystem (`{job}` and `{name}`
    /// filled in): the newest file's age is set against the walltime left.
    pub checkpoints: Option<String>,
}

impl SlurmConfig {
    /// Whether a job with this id and name is one the user asked to watch.
    pub fn watches(&self, id: &str, name: &str) -> bool {
        (self.jobs.is_empty() && self.names.is_empty())
            || self.jobs.iter().any(|j| j == id)
            || self.names.iter().any(|p| crate::glob::matches(p, name))
    }
}

/// A user or partition name goes into squeue's command line: only the characters Slurm and
/// Unix names use (a partition list is comma-separated).
fn plain_name(value: &Spanned<String>, key: &str, commas: bool) -> Result<String, (usize, String)> {
    let text = value.get_ref();
    let fine = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c) || (commas && c == ',');
    if text.is_empty() || !text.chars().all(fine) {
        return Err((
            value.span().start,
            format!("{key} = {text:?} must be a plain name (letters, digits, '.', '_', '-')"),
        ));
    }
    Ok(text.clone())
}

pub(super) fn build(
    raw: Vec<RawSlurm>,
    hosts: &[HostConfig],
    places: &mut Vec<(String, Place)>,
    fleet_accept_new: bool,
) -> Result<Vec<SlurmConfig>, (usize, String)> {
    let mut out: Vec<SlurmConfig> = Vec::with_capacity(raw.len());
    for s in raw {
        let taken: Vec<&str> = hosts
            .iter()
            .map(|h| h.name.as_str())
            .chain(out.iter().map(|c| c.name.as_str()))
            .collect();
        let conn = connection(
            &s.name,
            &s.ssh,
            s.identity.as_ref(),
            s.accept_new,
            fleet_accept_new,
            &taken,
        )?;
        let pull = super::connection::pull(&conn.name, s.pull, conn.target.is_loopback(), places)?;
        let jobs = s
            .jobs
            .unwrap_or_default()
            .into_iter()
            .map(|j| {
                let at = j.span().start;
                let id = match j.into_inner() {
                    JobId::Number(n) => n.to_string(),
                    JobId::Text(t) => t,
                };
                let array = id.split_once('_');
                let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
                match array {
                    None if digits(&id) => Ok(id),
                    Some((job, task)) if digits(job) && digits(task) => Ok(id),
                    _ => Err((
                        at,
                        format!("job id {id:?} must be a number like 4242 or 4242_7"),
                    )),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let names = s
            .names
            .unwrap_or_default()
            .into_iter()
            .map(|n| match n.get_ref().trim() {
                "" => Err((
                    n.span().start,
                    "a name pattern must not be empty".to_string(),
                )),
                _ => Ok(n.into_inner()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let period = match &s.period_secs {
            Some(v) => Duration::from_secs_f64(super::ranges::checked(v, "slurm.period_secs")?),
            None => Duration::from_secs(30),
        };
        let checkpoints = match &s.checkpoints {
            Some(c) if !c.get_ref().starts_with('/') || c.get_ref().contains(['\n', '\0']) => {
                return Err((
                    c.span().start,
                    format!(
                        "checkpoints = {:?} must be an absolute path on the cluster \
                         ({{job}} and {{name}} are filled in)",
                        c.get_ref()
                    ),
                ));
            }
            c => c.as_ref().map(|c| c.get_ref().clone()),
        };
        out.push(SlurmConfig {
            checkpoints,
            user: s
                .user
                .as_ref()
                .map(|u| plain_name(u, "user", false))
                .transpose()?,
            partition: s
                .partition
                .as_ref()
                .map(|p| plain_name(p, "partition", true))
                .transpose()?,
            jobs,
            names,
            period,
            login: HostConfig {
                name: conn.name.clone(),
                target: conn.target,
                identity: conn.identity,
                profile: "slurm".into(),
                accept_new: conn.accept_new,
                mounts: Vec::new(),
                run: None,
                run_process: None,
                log: None,
                ckpt_dir: None,
                billing: Billing::default(),
                instance_id: None,
                teardown: None,
                pull,
                queue: None,
                walltime: false,
            },
            name: conn.name,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "slurm_tests.rs"]
mod tests;
