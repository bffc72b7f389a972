//! The fresh look the teardown guard needs: list the box again, re-hash and re-verify every
//! local copy of the last pull, and judge.

use std::collections::BTreeMap;

use super::check::verify;
use super::current::{Currentness, LocalNow, NotCurrent, judge};
use super::engine::list_remote;
use super::local::sha256_file;
use super::{PullError, names};
use crate::config::{HostConfig, PullConfig};
use crate::ledger::PullRecord;
use crate::transport::Session;

pub async fn recheck(
    session: &Session,
    host: &str,
    spec: &PullConfig,
    last: Option<&PullRecord>,
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
    Ok(judge(&spec.paths, last, &fresh, &local))
}

/// The guard's view of a host: no pull paths, no link, or a box that cannot be listed are all
/// "not current", each with its reason.
pub async fn check_host(
    session: Option<&Session>,
    host: &HostConfig,
    last: Option<&PullRecord>,
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
        (Some(s), Some(spec)) => recheck(s, &host.name, spec, last)
            .await
            .unwrap_or_else(|e| not_listed(format!("cannot list it: {e}"))),
    };
    same_instance(judged, host, last)
}

/// A pull proves something only about the instance it was taken on: an `instance_id` changed
/// since (a copy-pasted id, a re-rented box under the same name) refuses.
fn same_instance(judged: Currentness, host: &HostConfig, last: Option<&PullRecord>) -> Currentness {
    let Some(last) = last else {
        return judged;
    };
    if last.instance_id == host.instance_id {
        return judged;
    }
    let other = NotCurrent::OtherInstance {
        pulled: last.instance_id.clone(),
        now: host.instance_id.clone(),
    };
    match judged {
        Currentness::Current { .. } => Currentness::NotCurrent(vec![other]),
        Currentness::NotCurrent(mut why) => {
            why.push(other);
            Currentness::NotCurrent(why)
        }
    }
}
