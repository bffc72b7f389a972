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
    /// Every claim on a file, its owner's first: the claim recorded at the file's own path,
    /// before any recorded through a link to it (a dest folder swapped for a link into another
    /// host's folder makes a second claim on that host's files, which is not theirs).
    by_id: HashMap<FileId, Vec<(bool, String)>>,
}

/// Whether `path`'s folders are what they say: no link and no `..` on the way to it.
fn direct(path: &Path) -> bool {
    path.parent()
        .is_some_and(|dir| std::fs::canonicalize(dir).is_ok_and(|real| real == dir))
}

impl Protected {
    /// `claims`: (local path as the ledger keeps it, why it is protected). Paths that are gone
    /// protect nothing (there is nothing left to overwrite). Blocking: it stats every claim.
    pub fn of(claims: impl IntoIterator<Item = (String, String)>) -> Protected {
        let mut by_id: HashMap<FileId, Vec<(bool, String)>> = HashMap::new();
        for (path, why) in claims {
            let path = names::to_path(&path);
            if let Some(id) = id_of(&path) {
                by_id.entry(id).or_default().push((direct(&path), why));
            }
        }
        for whys in by_id.values_mut() {
            // Stable: among claims alike, the ledger's order stays.
            whys.sort_by_key(|(direct, _)| !direct);
            whys.dedup_by(|a, b| a.1 == b.1);
        }
        Protected { by_id }
    }

    /// Why writing `local` would destroy a protected copy, if it would: its owner's claim, then
    /// any other.
    pub fn refuses(&self, local: &Path) -> Option<String> {
        if self.by_id.is_empty() {
            return None;
        }
        let whys = self.by_id.get(&id_of(local)?)?;
        let whys: Vec<&str> = whys.iter().map(|(_, why)| why.as_str()).collect();
        Some(format!(
            "{} {}",
            crate::sanitize::line(&local.display().to_string(), 200),
            whys.join("; also ")
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

    /// A dest subfolder swapped for a link into another host's folder: the file there is
    /// claimed twice, and the refusal names its real owner first, whatever the ledger's order.
    #[test]
    fn a_file_claimed_through_a_link_names_its_real_owner_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let vast = dir.path().join("vast/ckpts");
        std::fs::create_dir_all(&vast).expect("mkdir");
        let owned = vast.join("model.pt");
        std::fs::write(&owned, b"vast's only copy").expect("write");
        std::fs::create_dir_all(dir.path().join("touchd")).expect("mkdir");
        let swapped = dir.path().join("touchd/ckpts");
        std::os::unix::fs::symlink(&vast, &swapped).expect("symlink");
        let vast_why = "holds vast's pulled copy".to_string();
        let touchd_why = "holds the copy of touchd that the teardown of t relied on".to_string();
        let claims = [
            (names::of_path(&owned), vast_why.clone()),
            (
                names::of_path(&swapped.join("model.pt")),
                touchd_why.clone(),
            ),
        ];
        for order in [claims.clone(), [claims[1].clone(), claims[0].clone()]] {
            let why = Protected::of(order).refuses(&owned).expect("refused");
            assert!(
                why.ends_with(&format!("{vast_why}; also {touchd_why}")),
                "{why}"
            );
        }
    }
}
