//! `[[kubernetes]]`: a Kubernetes namespace read through the real `kubectl`, and which of its
//! Jobs are watched (a label selector). Every value goes to kubectl as one argument of an
//! argument list, never through a shell; even so an empty value or a control character is
//! refused here, so a typo fails at load with file:line:col rather than as kubectl's error.
//!
//! `[kubernetes.pull]` has the keys of `[host.pull]`; its paths are inside a Job's pod's main
//! (first) container, read through `kubectl exec` (`pull::pull_pod`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::PullConfig;
use super::paths::expand_tilde;
use super::pull::{Place, RawPull};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKube {
    name: Spanned<String>,
    context: Spanned<String>,
    kubeconfig: Option<Spanned<String>>,
    namespace: Spanned<String>,
    selector: Spanned<String>,
    period_secs: Option<Spanned<f64>>,
    checkpoints: Option<Spanned<String>>,
    nvidia_smi: Option<bool>,
    pull: Option<Spanned<RawPull>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KubeConfig {
    pub name: String,
    /// The kubeconfig context (`kubectl --context`).
    pub context: String,
    /// `kubectl --kubeconfig`; None is kubectl's own default (`$KUBECONFIG`, `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// `kubectl -n`.
    pub namespace: String,
    /// The label selector of the watched Jobs (`kubectl get jobs -l`).
    pub selector: String,
    /// How often the Jobs and their pods are read: two kubectl calls per period.
    pub period: Duration,
    /// Where the job writes checkpoints inside its container; read against the pod's volumes.
    pub checkpoints: Option<String>,
    /// Read each running pod's GPUs inside it (`kubectl exec POD -- nvidia-smi`): off by
    /// default, as it runs a process in the user's pods and needs the `pods/exec` right.
    pub nvidia_smi: bool,
    /// What a Job's results are and where they go: paths inside its pod's first container.
    pub pull: Option<PullConfig>,
}

/// A value that becomes one kubectl argument: printable, non-empty text.
fn argument(value: &Spanned<String>, key: &str) -> Result<String, (usize, String)> {
    let text = value.get_ref();
    if text.trim().is_empty() || text.chars().any(char::is_control) {
        return Err((
            value.span().start,
            format!("{key} = {text:?} must be non-empty printable text"),
        ));
    }
    Ok(text.clone())
}

/// A namespace is a DNS-1123 label: lowercase letters, digits and '-', at most 63.
fn namespace(value: &Spanned<String>) -> Result<String, (usize, String)> {
    let text = value.get_ref();
    let fine = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if text.is_empty()
        || text.len() > 63
        || !text.chars().all(fine)
        || text.starts_with('-')
        || text.ends_with('-')
    {
        return Err((
            value.span().start,
            format!(
                "namespace = {text:?} must be a Kubernetes name (lowercase letters, digits, '-')"
            ),
        ));
    }
    Ok(text.clone())
}

pub(super) fn build(
    raw: Vec<RawKube>,
    taken: &[&str],
    places: &mut Vec<(String, Place)>,
) -> Result<Vec<KubeConfig>, (usize, String)> {
    let mut out: Vec<KubeConfig> = Vec::with_capacity(raw.len());
    for k in raw {
        let name = argument(&k.name, "name")?.trim().to_string();
        if taken.contains(&name.as_str()) || out.iter().any(|c| c.name == name) {
            return Err((
                k.name.span().start,
                format!(
                    "duplicate name {name:?}; each [[host]], [[slurm]] and [[kubernetes]] needs \
                     a unique name"
                ),
            ));
        }
        let checkpoints = match &k.checkpoints {
            Some(path) => {
                let text = argument(path, "checkpoints")?;
                // It is compared with mount paths as written: "/ckpt/../x" is not under /ckpt.
                let dots = text.split('/').any(|part| part == "." || part == "..");
                if !text.starts_with('/') || dots {
                    return Err((
                        path.span().start,
                        format!(
                            "checkpoints = {text:?} must be an absolute path in the container, \
                             without '.' or '..'"
                        ),
                    ));
                }
                Some(text)
            }
            None => None,
        };
        let period = match &k.period_secs {
            Some(v) => {
                Duration::from_secs_f64(super::ranges::checked(v, "kubernetes.period_secs")?)
            }
            None => Duration::from_secs(30),
        };
        // A pod is never this machine: its dest is checked as a remote box's is.
        let pull = super::connection::pull(&name, k.pull, false, places)?;
        out.push(KubeConfig {
            pull,
            context: argument(&k.context, "context")?,
            kubeconfig: k
                .kubeconfig
                .as_ref()
                .map(|p| argument(p, "kubeconfig").map(|p| expand_tilde(&p)))
                .transpose()?,
            namespace: namespace(&k.namespace)?,
            selector: argument(&k.selector, "selector")?,
            period,
            checkpoints,
            nvidia_smi: k.nvidia_smi.unwrap_or(false),
            name,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "kubernetes_tests.rs"]
mod tests;
