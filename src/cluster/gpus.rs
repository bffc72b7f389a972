//! GPU truth on a running Slurm job's nodes: nvidia-smi run inside the job's allocation with
//! `srun --jobid=N --overlap -N1 -n1 -w NODE` (22.05+: `--overlap` shares the job's GPUs and
//! memory; without it srun waits forever for "busy" nodes), bounded by `timeout` on the login
//! node and by ours, and named so it is recognisable in accounting. One node per call; a job's
//! first few nodes only, never a whole partition.

use std::time::Duration;

use serde::Serialize;

use super::hostlist;
use crate::probe::{GPU_QUERY_FIELDS_LEGACY, GpuSample, parse_gpu_csv};
use crate::transport::{ExecLimits, Session};

/// The most nodes of one job asked each period.
pub const MAX_NODES: usize = 4;

/// What nvidia-smi said on one node of the job, or why it could not be asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeGpus {
    pub node: String,
    pub gpus: Vec<GpuSample>,
    pub error: Option<String>,
}

/// A job id or node name goes into the login node's shell: only the characters Slurm uses.
fn plain(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// The command for one node, [`super::bounded`] as every login-node command: its `timeout`
/// ends srun (and its step) if the node never answers within `timeout`, and so does the
/// channel's end.
pub fn srun_command(job: &str, node: &str, timeout: Duration) -> String {
    let srun = format!(
        "srun --jobid={job} --overlap -N1 -n1 -w {node} -J rigwatch-probe --quiet \
         nvidia-smi --query-gpu={} --format=csv,nounits",
        GPU_QUERY_FIELDS_LEGACY.join(",")
    );
    super::bounded(
        &srun,
        timeout.max(Duration::from_secs(1)) + Duration::from_secs(1),
    )
}

/// nvidia-smi on each of the job's first nodes, one after another, each within `timeout`.
pub async fn read(
    session: &Session,
    job: &str,
    node_list: &str,
    timeout: Duration,
) -> Vec<NodeGpus> {
    let Some(nodes) = hostlist::expand(node_list, MAX_NODES) else {
        return vec![NodeGpus {
            node: crate::sanitize::line(node_list, 80),
            gpus: Vec::new(),
            error: Some("a node list this reader does not follow".into()),
        }];
    };
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        let gpus = if !plain(job) || !plain(&node) {
            Err("not a plain job id or node name: not put in a command".to_string())
        } else {
            one(session, job, &node, timeout).await
        };
        out.push(match gpus {
            Ok(gpus) => NodeGpus {
                node,
                gpus,
                error: None,
            },
            Err(why) => NodeGpus {
                node,
                gpus: Vec::new(),
                error: Some(crate::sanitize::line(&why, 300)),
            },
        });
    }
    out
}

async fn one(
    session: &Session,
    job: &str,
    node: &str,
    timeout: Duration,
) -> Result<Vec<GpuSample>, String> {
    let limits = ExecLimits {
        // Ours a little after the login node's `timeout`, so its answer is the one seen.
        timeout: timeout + Duration::from_secs(2),
        max_output: 256 * 1024,
    };
    let out = session
        .exec(&srun_command(job, node, timeout), limits)
        .await
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.exit_status {
        Some(0) => parse_gpu_csv(&stdout).map_err(|e| e.to_string()),
        Some(124) => Err(format!(
            "srun on {node} did not answer within {}s",
            timeout.as_secs()
        )),
        _ => Err(format!(
            "srun on {node}: {}: {}",
            out.status_words(),
            out.stderr_line(400)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_names_the_step_and_is_bounded() {
        let c = srun_command("4242", "gpu01", Duration::from_secs(20));
        assert!(c.contains("timeout -k 2 20 sh -c"), "{c}");
        assert!(
            c.contains("srun --jobid=4242 --overlap -N1 -n1 -w gpu01 "),
            "{c}"
        );
        assert!(c.contains("-J rigwatch-probe"), "{c}");
        assert!(plain("4242_7") && plain("gpu-01.ib"));
        assert!(!plain("n1;reboot") && !plain("$(x)") && !plain(""));
    }
}
