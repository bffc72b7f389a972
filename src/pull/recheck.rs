//! The fresh look the teardown guard needs: list the box again, re-hash and re-verify every
//! local copy of the last pull, and judge. The look taken after the last confirmation also
//! re-hashes the box's files ([`Depth::Content`]): stat cannot see a write through a memory map.

use std::collections::BTreeMap;

use super::box_hash::remote_hashes;
use super::check::verify;
use super::current::{Currentness, LocalNow, NotCurrent, judge, judge_content};
use super::engine::list_remote;
use super::local::sha256_file;
use super::{PullError, names};
use crate::config::{HostConfig, KubeConfig, PullConfig};
use crate::ledger::PullRecord;
use crate::transport::{BoxExec, KubectlBox, Session};

/// How deep a look goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The box listed (sizes, times, inodes), the local copies re-hashed and re-verified: the
    /// check shown when the dialog opens.
    Stat,
    /// As `Stat`, and every file the pull proved re-hashed on the box and compared with the
    /// pulled hash: the final check, after the last confirmation.
    Content,
    /// As `Content`, but each file's bytes streamed home and hashed here (`strict`): the final
    /// check for those who do not take the box's hashing tools at their word.
    Strict,
}

impl Depth {
    /// The final check's depth for `[teardown] final_check`.
    pub fn last(check: crate::config::FinalCheck) -> Depth {
        match check {
            crate::config::FinalCheck::OnBox => Depth::Content,
            crate::config::FinalCheck::Strict => Depth::Strict,
        }
    }
}

pub async fn recheck<B: BoxExec>(
    session: &B,
    host: &str,
    spec: &PullConfig,
    last: Option<&PullRecord>,
    depth: Depth,
) -> Result<Currentness, PullError> {
    let fresh = list_remote(session, host, spec).await?;
    let mut local = BTreeMap::new();
    for f in last.map(|p| p.files.as_slice()).unwrap_or_default() {
        if !f.is_good() {
            continue;
        }
        let path = names::to_path(&f.local_path);
        let owned = path.clone();
        let sha256 = tokio::task::spawn_blocking(move || sha256_file(&owned).ok())
            .await
            .ok()
            .flatten();
        let loads = if sha256.is_some() {
            let v = verify(&path, &spec.verify).await;
            if v.passed { Ok(()) } else { Err(v.how) }
        } else {
            Err("missing".to_string())
        };
        local.insert(f.local_path.clone(), LocalNow { sha256, loads });
    }
    let judged = judge(&spec.paths, last, &fresh, &local);
    if depth == Depth::Stat || !judged.is_current() {
        return Ok(judged);
    }
    let proven = last
        .map(|p| p.files.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|f| f.is_good());
    let by_path: std::collections::HashMap<&str, _> =
        fresh.files.iter().map(|f| (f.path.as_str(), f)).collect();
    let on_box: Vec<_> = proven
        .filter_map(|f| by_path.get(f.remote_path.as_str()).copied())
        .collect();
    let rehashed = match depth {
        Depth::Strict => super::strict::streamed_hashes(session, &on_box).await,
        _ => remote_hashes(session, on_box.into_iter()).await,
    };
    Ok(judge_content(
        judged,
        last,
        rehashed.as_ref().map_err(String::as_str),
    ))
}

/// What the final check will cost, said before it starts.
pub struct FinalCheckCost {
    pub files: usize,
    pub bytes: u64,
    /// With openssl on the box (0.87 s per GiB measured by `cargo bench --bench final_check`
    /// on 2 cores, BENCHMARKS.md).
    pub likely: std::time::Duration,
    /// On a box with only `sha256sum` (5.6 s per GiB in the same run).
    pub at_most: std::time::Duration,
}

pub fn final_check_cost(last: &PullRecord) -> FinalCheckCost {
    let proven = last.files.iter().filter(|f| f.is_good());
    let (files, bytes) = proven.fold((0, 0u64), |(n, b), f| (n + 1, b + f.size));
    let gib = bytes as f64 / f64::from(1u32 << 30);
    // Each file also costs a process start on the box.
    let at =
        |per_gib: f64| std::time::Duration::from_secs_f64(gib * per_gib + files as f64 * 0.002);
    FinalCheckCost {
        files,
        bytes,
        likely: at(0.87),
        at_most: at(5.6),
    }
}

/// The guard's view of a host: no pull paths, no link, or a box that cannot be listed are all
/// "not current", each with its reason.
pub async fn check_host(
    session: Option<&Session>,
    host: &HostConfig,
    last: Option<&PullRecord>,
    depth: Depth,
) -> Currentness {
    let not_listed = |why: String| {
        Currentness::NotCurrent(vec![NotCurrent::Failed {
            path: "the box".into(),
            why,
        }])
    };
    let judged = match (session, &host.pull) {
        (_, None) => Currentness::NotCurrent(vec![NotCurrent::NoPullPaths]),
        (None, Some(_)) => not_listed("its link is down, so it cannot be listed".into()),
        (Some(s), Some(spec)) => recheck(s, &host.name, spec, last, depth)
            .await
            .unwrap_or_else(|e| not_listed(format!("cannot list it: {e}"))),
    };
    same_instance(judged, host.instance_id.as_deref(), last)
}

/// How long finding a Job's running pod may take.
pub const FIND_POD: std::time::Duration = std::time::Duration::from_secs(30);

/// The guard's view of a Kubernetes Job: the same look as a box's, run in the Job's newest
/// running pod through `kubectl exec`. The last pull must be of this Job (its instance id);
/// no pull paths, no running pod or a pod that cannot be listed are "not current".
pub async fn check_job(
    cluster: &KubeConfig,
    job: &str,
    last: Option<&PullRecord>,
    depth: Depth,
) -> Currentness {
    let not_listed = |why: String| {
        Currentness::NotCurrent(vec![NotCurrent::Failed {
            path: "the pod".into(),
            why,
        }])
    };
    let judged = match &cluster.pull {
        None => Currentness::NotCurrent(vec![NotCurrent::NoPullPaths]),
        Some(spec) => match KubectlBox::of_job(cluster, job, FIND_POD).await {
            Err(e) => not_listed(e.to_string()),
            Ok(pod) => recheck(&pod, &cluster.name, spec, last, depth)
                .await
                .unwrap_or_else(|e| not_listed(format!("cannot list it: {e}"))),
        },
    };
    same_instance(judged, Some(job), last)
}

/// A pull proves something only about the instance it was taken on: an `instance_id` changed
/// since (a copy-pasted id, a re-rented box under the same name, another Job of the cluster)
/// refuses.
fn same_instance(judged: Currentness, now: Option<&str>, last: Option<&PullRecord>) -> Currentness {
    let Some(last) = last else {
        return judged;
    };
    if last.instance_id.as_deref() == now {
        return judged;
    }
    let other = NotCurrent::OtherInstance {
        pulled: last.instance_id.clone(),
        now: now.map(String::from),
    };
    match judged {
        Currentness::Current { .. } => Currentness::NotCurrent(vec![other]),
        Currentness::NotCurrent(mut why) => {
            why.push(other);
            Currentness::NotCurrent(why)
        }
    }
}
