//! `rigwatch check` for the fleet's clusters: a Slurm cluster's login node (reached, squeue
//! answers, whether sacct has accounting) and a Kubernetes context (reached, and what the
//! user may do: `kubectl auth can-i` for each verb rigwatch uses). Each finding is a line with
//! a fix, as for boxes; a missing right that only costs one feature is a warning, not a failure.
//! A Kaggle member: the CLI found, its kernels and quota read.

use std::time::Duration;

use serde::Serialize;

use crate::config::{FleetConfig, KaggleConfig, KubeConfig, SlurmConfig};
use crate::transport::{ExecLimits, LinkState, Session};

/// How much a finding matters: `Fail` makes `check` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub what: String,
    pub level: Level,
    pub detail: String,
    /// What to do about it; None when nothing needs doing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClusterCheck {
    pub name: String,
    pub scheduler: &'static str,
    pub via: String,
    pub findings: Vec<Finding>,
}

impl ClusterCheck {
    pub fn ok(&self) -> bool {
        self.findings.iter().all(|f| f.level != Level::Fail)
    }
}

fn finding(what: &str, level: Level, detail: String, fix: Option<String>) -> Finding {
    Finding {
        what: what.to_string(),
        level,
        detail: crate::sanitize::line(&detail, 600),
        fix,
    }
}

/// A Slurm cluster: its login node's link (from the pool `check` settled), then squeue and
/// sacct run there, bounded as the runtime runs them.
pub async fn slurm(
    cluster: &SlurmConfig,
    link: Option<&LinkState>,
    session: Option<&Session>,
    timeout: Duration,
) -> ClusterCheck {
    let mut findings = Vec::new();
    let via = cluster.login.target.to_string();
    match (link, session) {
        (Some(link), Some(session)) if link.is_usable() => {
            findings.push(finding(
                "login node",
                Level::Ok,
                format!("{} ({via})", link.word()),
                None,
            ));
            let reading = crate::cluster::slurm::read(cluster, Some(session), timeout).await;
            findings.push(match &reading.error {
                None => finding(
                    "squeue",
                    Level::Ok,
                    format!("{} watched jobs in the queue", reading.jobs.len()),
                    None,
                ),
                Some(why) => finding(
                    "squeue",
                    Level::Fail,
                    why.clone(),
                    Some(
                        "run `squeue --me` in a non-interactive shell on the login node (ssh \
                         LOGIN squeue --me): the Slurm clients must be on the PATH sshd's shell \
                         sets"
                            .into(),
                    ),
                ),
            });
            findings.push(sacct(session, timeout).await);
        }
        (link, _) => {
            let why = link.map_or("not reached".to_string(), |l| match l {
                LinkState::Down { reason, .. }
                | LinkState::AuthRefused { reason, .. }
                | LinkState::HostkeyRefused { reason, .. }
                | LinkState::Degraded { reason, .. } => format!("{}: {reason}", l.word()),
                other => other.word().to_string(),
            });
            findings.push(finding(
                "login node",
                Level::Fail,
                format!("{via}: {why}"),
                Some(format!(
                    "ssh {via} must log in without a prompt: the fleet's identity, user and \
                     known_hosts apply to [slurm] login nodes as to boxes"
                )),
            ));
        }
    }
    ClusterCheck {
        name: cluster.name.clone(),
        scheduler: "slurm",
        via,
        findings,
    }
}

/// Whether sacct has accounting: without it, a job purged from the queue is read from the job
/// completion log, or said to have ended with its state unknown.
async fn sacct(session: &Session, timeout: Duration) -> Finding {
    let command = crate::cluster::bounded("sacct -X -n -P -o JobID -S now-1hours", timeout);
    let limits = ExecLimits {
        timeout,
        max_output: 64 * 1024,
    };
    match session.exec(&command, limits).await {
        Ok(out) if out.exit_status == Some(0) => {
            finding("sacct", Level::Ok, "accounting answers".into(), None)
        }
        Ok(out) => {
            let said = out.stderr_line(300);
            finding(
                "sacct",
                Level::Warn,
                format!(
                    "no accounting ({}): a job purged from the queue is read from the job \
                     completion log (sacct -c) where there is one, else shown as ended, state \
                     unknown",
                    if said.is_empty() {
                        "sacct failed".to_string()
                    } else {
                        said
                    }
                ),
                Some(
                    "ask the cluster's admins whether slurmdbd or a job completion log is kept"
                        .into(),
                ),
            )
        }
        Err(e) => finding("sacct", Level::Warn, format!("not asked: {e}"), None),
    }
}

/// What rigwatch asks of a Kubernetes namespace, and what is lost without each right.
const RIGHTS: [(&str, &[&str], Level, &str); 4] = [
    (
        "list jobs",
        &["list", "jobs.batch"],
        Level::Fail,
        "the Jobs cannot be read at all",
    ),
    (
        "list pods",
        &["list", "pods"],
        Level::Fail,
        "no pod, restart or node is seen",
    ),
    (
        "delete jobs",
        &["delete", "jobs.batch"],
        Level::Warn,
        "T cannot delete a Job here",
    ),
    (
        "exec into pods",
        &["create", "pods", "--subresource=exec"],
        Level::Warn,
        "no pull from a Job's pod, no nvidia-smi inside it, and s on a Job fails",
    ),
];

/// A Kubernetes context: the Jobs read once, then `kubectl auth can-i` for each right.
pub async fn kubernetes(cluster: &KubeConfig, timeout: Duration) -> ClusterCheck {
    let via = format!(
        "context {}, namespace {}",
        cluster.context, cluster.namespace
    );
    let mut findings = Vec::new();
    let reading = crate::runtime::clusters::read_kubernetes(cluster, timeout).await;
    findings.push(match &reading.error {
        None => finding(
            "reached",
            Level::Ok,
            format!("{} watched Jobs", reading.jobs.len()),
            None,
        ),
        Some(why) => finding(
            "reached",
            Level::Fail,
            why.clone(),
            Some(format!(
                "kubectl --context={} get jobs -n {} must work from this shell (kubeconfig, \
                 credentials plugin, network)",
                cluster.context, cluster.namespace
            )),
        ),
    });
    if reading.error.is_none() {
        let asks = RIGHTS.iter().map(|(what, args, level, lost)| async move {
            let mut rest = vec!["auth", "can-i"];
            rest.extend_from_slice(args);
            let said = crate::transport::kubectl::kubectl(cluster, &rest, timeout).await;
            match said {
                Ok(answer) if answer.trim() == "yes" => {
                    finding(&format!("can {what}"), Level::Ok, "yes".into(), None)
                }
                Ok(answer) => denied(cluster, what, args, *level, lost, answer.trim()),
                // `auth can-i` answers "no" on stdout with exit status 1, nothing on stderr.
                Err(crate::transport::kubectl::KubectlError::Failed { stderr, .. })
                    if stderr.is_empty() =>
                {
                    denied(
                        cluster,
                        what,
                        args,
                        *level,
                        lost,
                        "kubectl auth can-i said no",
                    )
                }
                Err(e) => denied(cluster, what, args, *level, lost, &e.to_string()),
            }
        });
        findings.extend(futures::future::join_all(asks).await);
    }
    ClusterCheck {
        name: cluster.name.clone(),
        scheduler: "kubernetes",
        via,
        findings,
    }
}

fn denied(
    cluster: &KubeConfig,
    what: &str,
    args: &[&str],
    level: Level,
    lost: &str,
    said: &str,
) -> Finding {
    finding(
        &format!("can {what}"),
        level,
        format!("no: {lost} ({said})"),
        Some(format!(
            "ask the namespace's admins for `{}` in {} (kubectl auth can-i {} -n {})",
            args[..2].join(" "),
            cluster.namespace,
            args.join(" "),
            cluster.namespace
        )),
    )
}

/// A Kaggle member: the CLI's version, then one read of its kernels and quota, as `watch`
/// reads them.
pub async fn kaggle(member: &KaggleConfig, timeout: Duration) -> ClusterCheck {
    let version = crate::transport::kaggle::version(member, timeout).await;
    let mut findings = vec![match version.starts_with("Kaggle ") {
        true => finding("the kaggle CLI", Level::Ok, version, None),
        false => finding(
            "the kaggle CLI",
            Level::Fail,
            version,
            Some(format!(
                "pip install kaggle (or set kaggle = \"/path/to/kaggle\" in [[kaggle]] {:?})",
                member.name
            )),
        ),
    }];
    if findings[0].level == Level::Ok {
        let reading = crate::runtime::clusters::read_kaggle(
            member,
            timeout,
            crate::runtime::clusters::Remember::Nothing,
        )
        .await;
        findings.push(match &reading.error {
            None => finding(
                "kernels read",
                Level::Ok,
                format!("{} of {}", reading.jobs.len(), member.kernels.len()),
                None,
            ),
            Some(why) => finding(
                "kernels read",
                Level::Fail,
                why.clone(),
                Some(format!(
                    "kaggle kernels status {} must work from this shell (credentials, the \
                     kernel's owner/slug, network)",
                    member.kernels.first().map_or("", String::as_str)
                )),
            ),
        });
        findings.push(match &reading.quota {
            Some(q) if q.lower_bound => finding(
                "GPU quota",
                Level::Warn,
                format!(
                    "not reported by the account: rigwatch counts the GPU runs it sees (at least \
                     {:.1} h used this week)",
                    q.used_hours
                ),
                Some("kaggle quota --csv needs kaggle 2.x: pip install -U kaggle".into()),
            ),
            Some(q) => finding(
                "GPU quota",
                Level::Ok,
                format!(
                    "{:.1} h left of {:.1} h this week",
                    q.remaining_hours, q.total_hours
                ),
                None,
            ),
            None => finding(
                "GPU quota",
                Level::Warn,
                "not reported: the commit limits are still watched, the quota is not".into(),
                Some("kaggle quota --csv needs kaggle 2.x: pip install -U kaggle".into()),
            ),
        });
    }
    ClusterCheck {
        name: member.name.clone(),
        scheduler: "kaggle",
        via: format!("kaggle CLI, {} kernels", member.kernels.len()),
        findings,
    }
}

/// Every cluster of the fleet checked; the Slurm login nodes' links come from `logins`.
pub async fn all(
    fleet: &FleetConfig,
    logins: &crate::transport::Pool,
    links: &[(String, LinkState)],
    timeout: Duration,
) -> Vec<ClusterCheck> {
    let slurm = fleet.slurm.iter().map(|c| {
        let link = links
            .iter()
            .find(|(name, _)| *name == c.login.name)
            .map(|(_, l)| l);
        let session = logins.get(&c.login.name).and_then(|l| l.session());
        async move { slurm(c, link, session.as_deref(), timeout).await }
    });
    let kube = fleet.kubernetes.iter().map(|c| kubernetes(c, timeout));
    let kaggle = fleet.kaggle.iter().map(|c| kaggle(c, timeout));
    let (mut out, kube, kaggle) = tokio::join!(
        futures::future::join_all(slurm),
        futures::future::join_all(kube),
        futures::future::join_all(kaggle)
    );
    out.extend(kube);
    out.extend(kaggle);
    out
}

/// The clusters as lines under the hosts' table.
pub fn table(checks: &[ClusterCheck]) -> String {
    let mut out = String::new();
    for c in checks {
        out.push_str(&format!(
            "cluster {} ({}, {})\n",
            crate::sanitize::line(&c.name, 64),
            c.scheduler,
            crate::sanitize::line(&c.via, 200)
        ));
        for f in &c.findings {
            let mark = match f.level {
                Level::Ok => "✓",
                Level::Warn => "!",
                Level::Fail => "✗",
            };
            out.push_str(&format!("  {mark} {}: {}\n", f.what, f.detail));
            if let Some(fix) = &f.fix {
                out.push_str(&format!("    fix: {}\n", crate::sanitize::line(fix, 600)));
            }
        }
    }
    out
}
