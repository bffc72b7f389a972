//! Shell completion that knows the fleet: clap_complete's dynamic engine. The shell's script
//! calls `COMPLETE=<shell> rigwatch -- <words>` at each Tab, so a host argument (`pull`,
//! `teardown`, `ledger`, `silence`) completes to the names in the fleet.toml of that moment,
//! which a script generated once could not know.

use std::ffi::OsString;
use std::path::PathBuf;

use clap_complete::CompletionCandidate;
use clap_complete::env::EnvCompleter;

use crate::config;

/// The variable that turns a run of rigwatch into a completion request (clap_complete's name).
pub const VAR: &str = "COMPLETE";

/// The names a host argument takes: the fleet's hosts and its `[[slurm]]` and `[[kubernetes]]`
/// clusters. The fleet is the one the command being completed names with `--config`, else the
/// usual one; a fleet that does not load offers nothing (a completion never prints an error
/// into the person's command line).
pub fn fleet_names() -> Vec<CompletionCandidate> {
    let words: Vec<OsString> = std::env::args_os().collect();
    let explicit = config_flag(&words);
    let Some(fleet) = config::paths::locate_fleet(explicit.as_deref())
        .ok()
        .and_then(|path| config::fleet::load(&path).ok())
    else {
        return Vec::new();
    };
    let clusters = fleet.slurm.iter().map(|c| c.name.clone());
    let kube = fleet.kubernetes.iter().map(|c| c.name.clone());
    let kaggle = fleet.kaggle.iter().map(|c| c.name.clone());
    fleet
        .hosts
        .iter()
        .map(|h| h.name.clone())
        .chain(clusters)
        .chain(kube)
        .chain(kaggle)
        .map(CompletionCandidate::new)
        .collect()
}

/// `--config PATH` or `--config=PATH` among the words being completed (after the `--` that
/// separates them from rigwatch's own command line).
fn config_flag(words: &[OsString]) -> Option<PathBuf> {
    let completed = words.iter().skip_while(|w| *w != "--").skip(1);
    let mut words = completed.map(|w| w.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        if word == "--config" {
            return words.next().map(PathBuf::from);
        }
        if let Some(path) = word.strip_prefix("--config=") {
            return Some(PathBuf::from(path));
        }
    }
    None
}

/// `rigwatch completions SHELL`: the same script `COMPLETE=SHELL rigwatch` prints, calling back
/// into this very binary, so it can be written to a completions folder once.
pub fn registration(
    shell: clap_complete::Shell,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use clap_complete::Shell;
    let completer: &dyn EnvCompleter = match shell {
        Shell::Bash => &clap_complete::env::Bash,
        Shell::Elvish => &clap_complete::env::Elvish,
        Shell::Fish => &clap_complete::env::Fish,
        Shell::PowerShell => &clap_complete::env::Powershell,
        Shell::Zsh => &clap_complete::env::Zsh,
        other => {
            return Err(std::io::Error::other(format!(
                "no completion that knows the fleet for {other}"
            )));
        }
    };
    let exe = std::env::current_exe().map_or_else(
        |_| "rigwatch".to_string(),
        |p| p.to_string_lossy().into_owned(),
    );
    completer.write_registration(VAR, "rigwatch", "rigwatch", &exe, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fleet_is_the_one_the_completed_command_names() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            config_flag(&words(&[
                "rigwatch", "--", "rigwatch", "--config", "f.toml", "pull", ""
            ])),
            Some(PathBuf::from("f.toml"))
        );
        assert_eq!(
            config_flag(&words(&[
                "rigwatch",
                "--",
                "rigwatch",
                "pull",
                "--config=g.toml",
                "x"
            ])),
            Some(PathBuf::from("g.toml"))
        );
        assert_eq!(
            config_flag(&words(&[
                "rigwatch",
                "--config",
                "mine.toml",
                "--",
                "rigwatch",
                "pull"
            ])),
            None,
            "rigwatch's own words are not the command being completed"
        );
    }
}
