//! The fresh look the teardown guard needs: list the box again, re-hash and re-verify every
//! local copy of the last pull, and judge.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::PullError;
use super::check::verify;
use super::current::{Currentness, LocalNow, judge};
use super::engine::list_remote;
use super::local::sha256_file;
use crate::config::PullConfig;
use crate::ledger::PullRecord;
use crate::transport::Session;

pub async fn recheck(
    session: &Session,
    host: &str,
    spec: &PullConfig,
    last: Option<&PullRecord>,
) -> Result<Currentness, PullError> {
    let (fresh, _) = list_remote(session, host, spec).await?;
    let mut local = BTreeMap::new();
    for f in last.map(|p| p.files.as_slice()).unwrap_or_default() {
        if !f.is_good() {
            continue;
        }
        let path = PathBuf::from(&f.local_path);
        let owned = path.clone();
        let sha256 = tokio::task::spawn_blocking(move || sha256_file(&owned).ok())
            .await
            .ok()
            .flatten();
        let loads = if sha256.is_some() {
            let v = verify(&path, spec.verify.as_deref()).await;
            if v.passed { Ok(()) } else { Err(v.how) }
        } else {
            Err("missing".to_string())
        };
        local.insert(f.local_path.clone(), LocalNow { sha256, loads });
    }
    Ok(judge(&spec.paths, last, &fresh, &local))
}
