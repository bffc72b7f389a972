//! The strict final check: every proven file's bytes streamed home over the open connection
//! (the box's `cat`, one command a file) and hashed here, so no hashing tool of the box is taken
//! at its word. Every byte crosses the link again: chosen with `[teardown] final_check =
//! "strict"`, and the dialog says beforehand how long it may take at the link's measured rate.

use std::collections::BTreeMap;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::local::hex;
use super::names;
use super::remote::RemoteFile;
use crate::transport::BoxExec;

/// A file's stream that stalls this long is given up: the check then proves nothing.
const IDLE: Duration = Duration::from_secs(60);

/// Each file's SHA-256, computed here over the bytes the box sent, by path; Err says which
/// file could not be read whole.
pub(super) async fn streamed_hashes<B: BoxExec>(
    session: &B,
    files: &[&RemoteFile],
) -> Result<BTreeMap<String, String>, String> {
    let mut hashes = BTreeMap::new();
    for file in files {
        let mut hasher = Sha256::new();
        let mut got = 0u64;
        let command = format!("{}exec cat -- \"$1\"", names::as_args(&[&file.path]));
        let name = crate::sanitize::line(&file.path, 200);
        let end = {
            let mut sink = |bytes: &[u8]| {
                hasher.update(bytes);
                got += bytes.len() as u64;
                true
            };
            session.exec_bytes(&command, IDLE, &mut sink).await
        }
        .map_err(|e| format!("{name}: streaming it home failed: {e}"))?;
        if end.exit_status != Some(0) {
            return Err(format!(
                "{name}: cat on the box ended ({}): {}",
                crate::transport::status_words(end.exit_status),
                crate::sanitize::line(&String::from_utf8_lossy(&end.stderr), 200)
            ));
        }
        tracing::debug!("strict final check: {name}: {got} bytes hashed here");
        hashes.insert(file.path.clone(), hex(&hasher.finalize()));
    }
    Ok(hashes)
}
