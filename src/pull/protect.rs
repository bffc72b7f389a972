//! Local copies a pull must never write over: another host's pulled files, and every file of a
//! pull that a teardown relied on (the box it came from is gone, or going: this is its only
//! copy, and a re-rented box under the same name must not replace it).
//!
//! Compared by where a path really leads, not by its text: a `dest` spelled with `..` or
//! reached through a symlinked folder names the same directory entries, so each claimed file is
//! known by its device and inode, and each file a pull is about to replace is looked up the same
//! way right before the rename. `symlink_metadata` resolves every folder on the way (links and
//! `..` included) but not the last component, which is exactly the entry a rename replaces.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::names;

/// One local file's identity on disk.
type FileId = (u64, u64);

fn id_of(path: &Path) -> Option<FileId> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// The claimed files present on this machine, each with why it must not be overwritten.
#[derive(Debug, Default, Clone)]
pub struct Protected {
    by_id: HashMap<FileId, String>,
}

impl Protected {
    /// `claims`: (local path as the ledger keeps it, why it is protected). Paths that are gone
    /// protect nothing (there is nothing left to overwrite). Blocking: it stats every claim.
    pub fn of(claims: impl IntoIterator<Item = (String, String)>) -> Protected {
        let by_id = claims
            .into_iter()
            .filter_map(|(path, why)| Some((id_of(&names::to_path(&path))?, why)))
            .collect();
        Protected { by_id }
    }

    /// Why writing `local` would destroy a protected copy, if it would.
    pub fn refuses(&self, local: &Path) -> Option<String> {
        if self.by_id.is_empty() {
            return None;
        }
        let why = self.by_id.get(&id_of(local)?)?;
        Some(format!(
            "{} {why}",
            crate::sanitize::line(&local.display().to_string(), 200)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_file_is_found_through_dotdot_and_a_linked_folder_but_a_new_name_is_free() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a");
        std::fs::create_dir_all(a.join("ckpts")).expect("mkdir");
        let owned = a.join("ckpts/model.pt");
        std::fs::write(&owned, b"only copy").expect("write");
        std::os::unix::fs::symlink(&a, dir.path().join("alias")).expect("symlink");
        let protected =
            Protected::of([(names::of_path(&owned), "holds a's pulled copy".to_string())]);
        let by_dots = dir.path().join("b/../a/ckpts/model.pt");
        std::fs::create_dir_all(dir.path().join("b")).expect("mkdir");
        let by_link = dir.path().join("alias/ckpts/model.pt");
        for alias in [&owned, &by_dots, &by_link] {
            let why = protected.refuses(alias).expect("refused");
            assert!(why.ends_with("holds a's pulled copy"), "{why}");
        }
        assert_eq!(
            protected.refuses(&dir.path().join("alias/ckpts/new.pt")),
            None
        );
        let gone = Protected::of([("/nonexistent/x".to_string(), "y".to_string())]);
        assert!(gone.by_id.is_empty());
    }
}
