//! Tests of `chunk`, beside it so the module reads in one sitting.

use super::*;

/// The look that came with a file's hash stands for a copy only when the copy hashes as the
/// box did; a copy that hashes otherwise (changed while it was copied) is looked at again.
#[test]
fn a_hash_s_look_stands_for_a_copy_only_when_the_copy_hashes_as_the_box_did() {
    type Hashes = Result<std::collections::BTreeMap<String, String>, String>;
    let file = RemoteFile {
        path: "/w/ckpt.pt".to_string(),
        size: 10,
        ..RemoteFile::default()
    };
    let copy = |sha: &str, seen: Option<(u64, String)>| -> Result<Option<Copied>, NotCopied> {
        Ok(Some(Copied {
            sent: 10,
            sha256: sha.to_string(),
            box_sha256: None,
            seen,
            unnamed: None,
        }))
    };
    let hashes: Hashes = Ok([(file.path.clone(), "aa".to_string())]
        .into_iter()
        .collect());
    let looked: Looked = [(file.path.clone(), Some((10, "1 2 3".to_string())))].into();
    let brought = |c: &Result<Option<Copied>, NotCopied>, h: &Hashes, l: &Looked| {
        second_look_brought(&file, c, h, l)
    };
    assert!(brought(&copy("aa", None), &hashes, &looked));
    assert!(
        !brought(&copy("bb", None), &hashes, &looked),
        "hashed otherwise"
    );
    assert!(
        !brought(&copy("aa", None), &Err("no".into()), &looked),
        "no hashes"
    );
    assert!(
        !brought(&copy("aa", None), &hashes, &Looked::new()),
        "no look"
    );
    assert!(
        brought(&Ok(None), &hashes, &looked),
        "unchanged: nothing copied"
    );
    let by_tar = copy("bb", Some((10, "1 2 3".to_string())));
    assert!(
        brought(&by_tar, &hashes, &Looked::new()),
        "a tar batch's own look"
    );
}
