//! Where rigwatch finds its files, following the XDG base directory rules.

use std::path::{Path, PathBuf};

use super::error::ConfigError;

pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

pub fn expand_tilde(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" => home_dir().unwrap_or_else(|| PathBuf::from(path)),
        _ => PathBuf::from(path),
    }
}

/// `--config`, then `$RIGWATCH_CONFIG`, then `$XDG_CONFIG_HOME/rigwatch/fleet.toml`.
pub fn locate_fleet(explicit: Option<&Path>) -> Result<PathBuf, ConfigError> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("RIGWATCH_CONFIG").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let default = config_dir().map(|d| d.join("fleet.toml"));
    match default {
        Some(path) if path.exists() => Ok(path),
        other => Err(ConfigError::NotFound {
            searched: other.into_iter().collect(),
        }),
    }
}

pub fn config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| home_dir().map(|h| h.join(".config")))
        .map(|d| d.join("rigwatch"))
}

/// `$XDG_STATE_HOME/rigwatch`: what rigwatch remembers (hosts memory, the ledger).
pub fn state_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| home_dir().map(|h| h.join(".local/state")))
        .map(|d| d.join("rigwatch"))
}

/// The folder of one of rigwatch's files, made private (0700) if missing. rigwatch's own state
/// folder is made private even when an older rigwatch left it open: what a box is called, where
/// its results went and the commands that destroy it are nobody else's business on a shared
/// machine. A folder the user named (an events file's) is otherwise left as it is.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if state_dir().is_some_and(|s| s == dir) {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Opens (creating if missing) one of rigwatch's own files for appending, private (0600) in a
/// private folder; an existing file that was readable to others is made private.
pub fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

/// Replaces one of rigwatch's own files whole: written to a private temporary file beside it
/// and renamed, so a crash never leaves half a file and no one else can read it meanwhile.
pub fn save_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    let tmp = path.with_file_name(name);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(bytes)?;
    // On disk before it takes the old file's place, and the rename itself on disk: what was
    // written before an alert was sent survives a power cut as well as a kill.
    file.sync_all()?;
    std::fs::rename(tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn rigwatch_files_are_private_even_where_they_were_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state/rigwatch");
        save_private(&state.join("hosts.json"), b"{}").expect("save");
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&state.join("hosts.json")), 0o600);
        let log = state.join("rigwatch.log");
        std::fs::write(&log, b"old\n").expect("write");
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        private_file(&log).expect("open");
        assert_eq!(mode(&log), 0o600);
        assert_eq!(
            std::fs::read(&log).expect("read"),
            b"old\n",
            "appended, not cut"
        );
    }
}
