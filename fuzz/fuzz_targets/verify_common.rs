//! The pulled-file checks take a file, as a pull leaves one: each input is written to a scratch
//! file under the format's name (so the name-based choice is exercised too), then verified.
//! Any verdict is fine; only a panic (or an I/O error on a readable file) is a finding.

pub fn check(name: &str, data: &[u8]) {
    let dir = std::env::temp_dir().join(format!("rigwatch-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(name);
    if std::fs::write(&path, data).is_err() {
        return;
    }
    assert!(rigwatch::pull::verify::verify_file(&path).is_ok());
}
