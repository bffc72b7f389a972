//! One file's record judged without touching local disk: the box's second look at it, its
//! hashes on both ends, and what is left to do for it (`Step`).

use std::path::Path;

use super::super::NotCopied;
use super::super::check::Verification;
use super::super::copy::Copied;
use super::super::engine::failed_file;
use super::super::promote::builtin_only;
use super::super::remote::RemoteFile;
use super::super::settled::Carry;
use super::{Landings, Step, settle};
use crate::ledger::PulledFile;

/// What the box's second look said of a file.
enum Seen {
    Same,
    /// Changed or gone: a copy of it is of no use to any later pull.
    Changed(String),
    /// Not known (the box could not be listed again): a copy is kept to resume from.
    Unknown(String),
}

/// What was known of an unchanged file before its finish: the hash the last pull recorded of
/// its local copy, and what the built-in check said of it as it was hashed again (`None` where
/// it was not checked then: a user command applies, or it is not unchanged).
pub(super) struct Earlier {
    pub(super) recorded: Option<String>,
    pub(super) checked: Option<Verification>,
    /// Unchanged by stat on both ends: the record it carries over, unhashed.
    pub(super) settled: Option<Carry>,
}

/// A file's record as far as it can be judged without touching local disk, and what is left
/// to do for it (None: the record is final).
pub(super) fn judge(
    file: &RemoteFile,
    local: &Path,
    outcome: Result<Option<Copied>, NotCopied>,
    placed: Option<&Verification>,
    earlier: Earlier,
    all: &Landings<'_>,
) -> (PulledFile, Option<Step>) {
    let copied = match outcome {
        Err(e) => return (failed_file(file, local, e.why), None),
        Ok(copied) => copied,
    };
    let fresh = copied.is_some();
    // Not copied means unchanged: its bytes were just hashed equal to the record.
    let copied = copied.unwrap_or(Copied {
        sent: 0,
        sha256: earlier.recorded.unwrap_or_default(),
        box_sha256: None,
        seen: None,
        unnamed: None,
    });
    let seen = second_look(file, placed, &copied, earlier.settled.is_some(), all);
    let mut record = failed_file(file, local, String::new());
    record.sent = copied.sent;
    record.local_sha256 = Some(copied.sha256);
    let carried = earlier.settled.as_ref().map(|c| c.remote_sha256.clone());
    record.remote_sha256 = copied.box_sha256.or(carried).or_else(|| {
        all.hashes
            .as_ref()
            .ok()
            .and_then(|h| h.get(&file.path).cloned())
    });
    let mut useless = false;
    record.error = match seen {
        Seen::Same => None,
        Seen::Changed(why) => {
            useless = true;
            Some(why)
        }
        Seen::Unknown(why) => Some(why),
    }
    .or_else(|| match all.hashes {
        _ if record.remote_sha256.is_some() => None,
        Err(e) => Some(e.clone()),
        Ok(_) => Some("the box printed no hash for it".to_string()),
    });
    if record.error.is_none() && record.local_sha256 != record.remote_sha256 {
        useless = true;
        record.error = Some(format!(
            "hash mismatch: box {} local {}",
            record.remote_sha256.as_deref().unwrap_or("none"),
            record.local_sha256.as_deref().unwrap_or("unreadable")
        ));
    }
    if record.error.is_some() {
        return (record, (fresh && useless).then_some(Step::Discard));
    }
    if let Some(verification) = placed {
        settle(&mut record, verification.clone(), None);
        return (record, Some(Step::Placed));
    }
    if fresh {
        let step = match builtin_only(local, all.verify, all.protected) {
            true => Step::InPlace,
            false => Step::Staged,
        };
        return (record, Some(step));
    }
    unchanged(record, earlier.checked, earlier.settled)
}

/// What the box's second look said of `file`. A copy its batch proved was looked at again by
/// that batch, and is judged by that look alone, as the batch judged it; a settled file was
/// not read in this pull, and the listing was its look.
fn second_look(
    file: &RemoteFile,
    placed: Option<&Verification>,
    copied: &Copied,
    settled: bool,
    all: &Landings<'_>,
) -> Seen {
    let look = match (placed, &copied.seen) {
        (Some(_), Some(look)) => Ok(Some(look)),
        _ => all.relisted.as_ref().map(|now| now.get(&file.path)),
    };
    match look {
        _ if settled => Seen::Same,
        Err(e) => Seen::Unknown(e.clone()),
        Ok(None) => Seen::Changed("vanished from the box during the pull".to_string()),
        Ok(Some((size, stamp))) if *size != file.size || *stamp != file.stamp => {
            Seen::Changed("changed on the box during the pull; pull again".to_string())
        }
        Ok(Some(_)) => Seen::Same,
    }
}

/// An unchanged copy whose hashes agree: its earlier check stands (a settled one says since
/// which pull), else it is checked again.
fn unchanged(
    mut record: PulledFile,
    checked: Option<Verification>,
    settled: Option<Carry>,
) -> (PulledFile, Option<Step>) {
    match (checked, settled) {
        (Some(checked), Some(carry)) => {
            settle(&mut record, checked, None);
            let note = format!(" (unchanged since pull #{}, by stat)", carry.since);
            if !record.verification.ends_with(&note) {
                record.verification.push_str(&note);
            }
            record.settled_since = Some(carry.since);
            record.local_stat = Some(carry.local_stat);
            (record, None)
        }
        (Some(checked), None) => {
            settle(&mut record, checked, None);
            (record, None)
        }
        (None, _) => (record, Some(Step::Verify)),
    }
}
