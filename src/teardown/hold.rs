//! A teardown's hold on its target (`ledger::locks`): taken by the final check, so that no pull,
//! kill or other teardown of the target can start between the check that allows the destroy
//! and the destroy itself; kept through the destroy, whose command inherits it (a destroy that
//! outlives a killed rigwatch still holds its target); given up when the destroy has ended,
//! when the dialog's I/O is dropped, or when the check it followed no longer counts (a dialog
//! closed after its final check holds nothing for longer than that).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::Utc;

use super::driver::CHECK_MAX_AGE;
use crate::ledger::locks::{Act, Held, default_dir, holder_of, try_take};

/// How long a hold taken by a final check is kept without a destroy: past the check's own age
/// limit the dialog must check again, and takes the hold again with it.
const UNUSED_FOR: Duration = CHECK_MAX_AGE.saturating_add(Duration::from_secs(5));

#[derive(Debug, Default)]
struct Inner {
    held: Option<Held>,
    /// Bumped at every take, so an expiry timer only drops the hold it was started for.
    taken: u64,
    destroying: bool,
}

#[derive(Debug)]
pub struct Hold {
    dir: Option<PathBuf>,
    /// The ledger's name for the target's copy at home (a host's, or a cluster's).
    key: String,
    /// The target in words, for others' messages: "box gpu-1", "job 4242 on hpc".
    what: String,
    inner: Arc<Mutex<Inner>>,
}

impl Hold {
    pub fn new(key: &str, what: String) -> Hold {
        Hold::in_dir(default_dir(), key, what)
    }

    pub fn in_dir(dir: Option<PathBuf>, key: &str, what: String) -> Hold {
        Hold {
            dir,
            key: key.to_string(),
            what,
            inner: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Who else acts on the target now, in words; None when no one does (or this hold has it).
    pub fn other(&self) -> Option<String> {
        if self.lock().held.is_some() {
            return None;
        }
        let dir = self.dir.as_deref()?;
        holder_of(dir, &self.key, &self.what).map(|busy| busy.to_string())
    }

    /// Takes the target for this teardown (kept if already held): Err says who holds it.
    pub fn take(&self) -> Result<(), String> {
        let mut inner = self.lock();
        if inner.held.is_some() {
            return Ok(());
        }
        let dir = self.dir.as_deref().ok_or(
            "no state folder to hold the target in: without it nothing keeps a pull from \
             overlapping the destroy",
        )?;
        let held = try_take(dir, &self.key, Act::Teardown, &self.what, Utc::now())
            .map_err(|busy| busy.to_string())?;
        inner.held = Some(held);
        inner.taken += 1;
        let (taken, weak) = (inner.taken, Arc::downgrade(&self.inner));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                tokio::time::sleep(UNUSED_FOR).await;
                if let Some(inner) = weak.upgrade() {
                    let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
                    if inner.taken == taken && !inner.destroying {
                        inner.held = None;
                    }
                }
            });
        }
        Ok(())
    }

    /// Takes the target for the destroy (the final check's hold, or a new one): a descriptor of
    /// the lock for the destroy command to inherit. Err says who holds it.
    pub fn for_destroy(&self) -> Result<Option<std::fs::File>, String> {
        self.take()?;
        let mut inner = self.lock();
        inner.destroying = true;
        Ok(inner.held.as_ref().and_then(|h| h.inherit().ok()))
    }

    /// The destroy has ended: the target is free again (for what its record allows).
    pub fn release(&self) {
        let mut inner = self.lock();
        inner.held = None;
        inner.destroying = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_final_check_s_hold_keeps_pulls_out_until_the_destroy_ends() {
        let dir = tempfile::tempdir().expect("dir");
        let hold = Hold::in_dir(Some(dir.path().into()), "gpu-1", "box gpu-1".into());
        assert_eq!(hold.other(), None);
        hold.take().expect("free");
        let pull = try_take(dir.path(), "gpu-1", Act::Pull, "box gpu-1", Utc::now());
        assert!(
            matches!(&pull, Err(e) if e.to_string().starts_with("a teardown of box gpu-1")),
            "{pull:?}"
        );
        let fd = hold.for_destroy().expect("still ours");
        assert!(fd.is_some());
        hold.release();
        drop(fd);
        assert!(try_take(dir.path(), "gpu-1", Act::Pull, "box gpu-1", Utc::now()).is_ok());
    }

    #[tokio::test]
    async fn a_teardown_finds_a_running_pull_and_names_it() {
        let dir = tempfile::tempdir().expect("dir");
        let _pull =
            try_take(dir.path(), "hpc", Act::Pull, "job 7 on hpc", Utc::now()).expect("free");
        let hold = Hold::in_dir(Some(dir.path().into()), "hpc", "job 8 on hpc".into());
        let other = hold.other().unwrap_or_default();
        assert!(
            other.starts_with("a pull of job 7 on hpc is running in pid"),
            "{other}"
        );
        let refused = hold.take().expect_err("held by the pull");
        assert_eq!(refused, other);
        assert!(
            hold.for_destroy().is_err(),
            "no destroy while the pull runs"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_no_destroy_used_is_let_go_once_its_check_no_longer_counts() {
        let dir = tempfile::tempdir().expect("dir");
        let hold = Hold::in_dir(Some(dir.path().into()), "gpu-1", "box gpu-1".into());
        hold.take().expect("free");
        tokio::time::sleep(UNUSED_FOR + Duration::from_secs(1)).await;
        assert!(try_take(dir.path(), "gpu-1", Act::Pull, "box gpu-1", Utc::now()).is_ok());
        // One the destroy uses is kept however long it runs.
        hold.for_destroy().expect("free again");
        tokio::time::sleep(UNUSED_FOR * 3).await;
        assert!(try_take(dir.path(), "gpu-1", Act::Pull, "box gpu-1", Utc::now()).is_err());
    }
}
