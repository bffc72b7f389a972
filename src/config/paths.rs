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
