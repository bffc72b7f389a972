//! `[host.pull]`: what to bring home from a box, and the user's own proofs that it loads.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::paths::expand_tilde;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPull {
    paths: Vec<Spanned<String>>,
    dest: Option<Spanned<String>>,
    verify: Option<Spanned<RawVerify>>,
}

/// The most the pull paths may add to the listing's command line.
const LISTING_BYTES: usize = 64 * 1024;
/// `verify = "cmd {file}"` (every file, the old form) or `[host.pull.verify]` with a glob per
/// command.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawVerify {
    EveryFile(String),
    ByPattern(std::collections::BTreeMap<String, String>),
}

/// The user's own proofs that pulled files load, run besides the built-in checks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyCommands {
    /// `[host.pull.verify]`: a glob over the file's name, and its command. Every pattern that
    /// matches a file runs on it; no command runs on a file no pattern matches.
    pub by_pattern: Vec<(String, String)>,
    /// The old `verify = "…{file}…"`: runs on every file. Kept working; the table is preferred.
    pub every_file: Option<String>,
}

impl VerifyCommands {
    /// What to tell a user still on the old form: it runs on every file, so a torch.load
    /// command fails every JSON and log beside the checkpoints.
    pub fn deprecation(&self, host: &str) -> Option<String> {
        let command = self.every_file.as_ref()?;
        Some(format!(
            "note: {host}: `verify = \"{command}\"` runs on every pulled file and is deprecated; \
             name the files it is for under [host.pull.verify], e.g. \"*.bin\" = \"{command}\" \
             (the built-in checks already cover JSON, logs, images and the common checkpoints)"
        ))
    }

    /// The commands for a file named `name` (its last path component).
    pub fn for_file(&self, name: &str) -> Vec<&str> {
        self.every_file
            .iter()
            .map(String::as_str)
            .chain(
                self.by_pattern
                    .iter()
                    .filter(|(glob, _)| crate::glob::matches(glob, name))
                    .map(|(_, command)| command.as_str()),
            )
            .collect()
    }
}

/// `[host.pull]`: what to bring home from the box before it may be torn down.
#[derive(Debug, Clone, PartialEq)]
pub struct PullConfig {
    /// Files, folders or globs on the box.
    pub paths: Vec<String>,
    /// Local folder; `{host}` becomes the host's name.
    pub dest: PathBuf,
    /// Run locally per pulled file (`{file}` becomes its path); exit 0 means it loads.
    pub verify: VerifyCommands,
}

pub(super) fn pull_config(
    host: &str,
    table: usize,
    raw: RawPull,
) -> Result<PullConfig, (usize, String)> {
    if raw.paths.is_empty() {
        return Err((table, format!("host {host:?}: [host.pull] paths is empty")));
    }
    // Each pull path is a stanza of the listing's one command (about 1 KiB with the path), which
    // sshd hands to the login shell as one argument that Linux caps at 128 KiB: past half of
    // that the listing is refused here, not left to a box that cannot start it.
    let listing: usize = raw.paths.iter().map(|p| p.get_ref().len() + 1024).sum();
    if listing > LISTING_BYTES {
        return Err((
            table,
            format!(
                "host {host:?}: [host.pull] paths lists {} pull paths, more than one listing \
                 command carries (at most {} KiB: about 60 paths); pull a folder above them",
                raw.paths.len(),
                LISTING_BYTES / 1024
            ),
        ));
    }
    for p in &raw.paths {
        let path = p.get_ref();
        if !path.starts_with('/') && !path.starts_with("~/") {
            return Err((
                p.span().start,
                format!("pull path {path:?} must be absolute (or start with ~/)"),
            ));
        }
        if path
            .chars()
            .any(|c| c.is_control() || c == '\'' || c == '`' || c == '$')
        {
            return Err((
                p.span().start,
                format!("pull path {path:?} holds a control character, quote, backtick or $"),
            ));
        }
    }
    let mut verify = VerifyCommands::default();
    if let Some(v) = &raw.verify {
        let commands: Vec<(&str, &str)> = match v.get_ref() {
            RawVerify::EveryFile(command) => vec![("verify", command.as_str())],
            RawVerify::ByPattern(table) => table
                .iter()
                .map(|(glob, command)| (glob.as_str(), command.as_str()))
                .collect(),
        };
        if let Some((key, _)) = commands.iter().find(|(_, c)| !c.contains("{file}")) {
            return Err((
                v.span().start,
                format!(
                    "{key}: a verify command must name the pulled file as {{file}}, e.g. \
                     \"*.bin\" = \"python -c 'import torch,sys; torch.load(sys.argv[1])' {{file}}\""
                ),
            ));
        }
        match v.get_ref() {
            RawVerify::EveryFile(command) => verify.every_file = Some(command.clone()),
            RawVerify::ByPattern(table) => {
                verify.by_pattern = table.iter().map(|(g, c)| (g.clone(), c.clone())).collect();
            }
        }
    }
    let dest = raw
        .dest
        .map_or_else(
            || "~/rigwatch-results/{host}".to_string(),
            Spanned::into_inner,
        )
        .replace("{host}", host);
    Ok(PullConfig {
        paths: raw.paths.into_iter().map(Spanned::into_inner).collect(),
        dest: expand_tilde(&dest),
        verify,
    })
}

/// Where a local path really leads: its longest existing part with every link and `..`
/// resolved, then the rest with `.` and `..` taken as written (what `create_dir_all` would make).
pub fn real_location(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The device and inode of a folder and of each folder above it, as far as they exist.
fn ids_up_from(path: &Path) -> Vec<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    path.ancestors()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect()
}

/// Where a dest really is, worked out once per host (config load compares every pair): its
/// real path, and the device and inode of it and of each folder above it.
pub(super) struct Place {
    written: PathBuf,
    real: PathBuf,
    up: Vec<(u64, u64)>,
    /// Its own (device, inode) when it exists (then also `up`'s first entry).
    own: Option<(u64, u64)>,
}

impl Place {
    pub(super) fn of(dest: &Path) -> Place {
        let real = real_location(dest);
        let up = ids_up_from(&real);
        let own = std::fs::metadata(&real).ok().and(up.first().copied());
        Place {
            written: dest.to_path_buf(),
            real,
            up,
            own,
        }
    }

    /// Whether two folders share files: one is the other or inside it, judged by where the
    /// paths really lead (links and `..` resolved), and by device and inode so that one folder
    /// mounted at two places is seen as one.
    fn overlaps(&self, other: &Place) -> bool {
        self.real.starts_with(&other.real)
            || other.real.starts_with(&self.real)
            || self.own.is_some_and(|id| other.up.contains(&id))
            || other.own.is_some_and(|id| self.up.contains(&id))
    }
}

/// On a host that is this machine, the pull path whose folder holds `dest`: every pull would
/// copy the last one's copy into itself, one level deeper each time.
pub fn dest_inside_pull_path(pull: &PullConfig) -> Option<&str> {
    let dest = real_location(&pull.dest);
    pull.paths
        .iter()
        .find(|p| {
            let parts: Vec<&str> = p.trim_end_matches('/').split('/').collect();
            let literal = parts
                .iter()
                .position(|c| crate::glob::is_path_pattern(c))
                .unwrap_or(parts.len());
            let root = crate::glob::unescape(&parts[..literal].join("/"));
            let root = if root.is_empty() { "/".into() } else { root };
            dest.starts_with(real_location(&expand_tilde(&root)))
        })
        .map(String::as_str)
}

/// Why `pull`'s dest cannot be used, if it cannot. Two hosts pulling into one folder overwrite
/// each other's copies (pulling B after tearing down A would destroy A's only copy), compared
/// where the folders really lead; and on a box that is this machine, a dest inside its own
/// pull path would nest a copy of the last pull at every pull.
pub(super) fn dest_problem(
    pull: &PullConfig,
    place: &Place,
    this_machine: bool,
    others: &[(String, Place)],
) -> Result<(), String> {
    if let Some(path) = this_machine.then(|| dest_inside_pull_path(pull)).flatten() {
        return Err(format!(
            "pull dest {} is inside pull path {path:?} on this same machine: each pull would \
             copy the last one's copy into itself; put dest outside it",
            pull.dest.display()
        ));
    }
    match others.iter().find(|(_, theirs)| theirs.overlaps(place)) {
        Some((other, theirs)) => Err(format!(
            "pull dest {} overlaps {other}'s {}: each host needs its own folder (put {{host}} in \
             dest)",
            pull.dest.display(),
            theirs.written.display()
        )),
        None => Ok(()),
    }
}
