//! What every entry rigwatch reaches over SSH shares, `[[host]]` and `[[slurm]]` alike: a name
//! unique across the fleet (the pool keys its links by it), how to connect, and a pull whose
//! dest no other entry writes into. One parse for both, so both refuse the same mistakes.

use toml::Spanned;

use super::paths::expand_tilde;
use super::pull::{Place, PullConfig, RawPull, dest_problem, pull_config};
use super::target::SshTarget;

/// The connection keys of one entry, checked.
pub(super) struct Connection {
    pub name: String,
    pub target: SshTarget,
    pub identity: Option<std::path::PathBuf>,
    pub accept_new: bool,
}

/// `name`, `ssh`, `identity`, `accept_new`; `taken` holds the names already in the fleet.
/// Err is (offset, message).
pub(super) fn connection(
    name: &Spanned<String>,
    ssh: &Spanned<String>,
    identity: Option<&Spanned<String>>,
    accept_new: Option<bool>,
    fleet_accept_new: bool,
    taken: &[&str],
) -> Result<Connection, (usize, String)> {
    let checked = name.get_ref().trim().to_string();
    if checked.is_empty() || checked.chars().any(|c| c.is_control()) {
        return Err((
            name.span().start,
            format!(
                "host name {:?} must be non-empty printable text",
                name.get_ref()
            ),
        ));
    }
    if taken.contains(&checked.as_str()) {
        return Err((
            name.span().start,
            format!(
                "duplicate host name {checked:?}; each [[host]] and [[slurm]] needs a unique name"
            ),
        ));
    }
    let target = SshTarget::parse(ssh.get_ref()).map_err(|e| (ssh.span().start, e))?;
    Ok(Connection {
        name: checked,
        target,
        identity: identity.map(|i| expand_tilde(i.get_ref())),
        accept_new: accept_new.unwrap_or(fleet_accept_new),
    })
}

/// A `[….pull]` table checked, its dest compared with every other entry's in `places` (where
/// it is then added).
pub(super) fn pull(
    name: &str,
    raw: Option<Spanned<RawPull>>,
    this_machine: bool,
    places: &mut Vec<(String, Place)>,
) -> Result<Option<PullConfig>, (usize, String)> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let table = raw.span().start;
    let pull = pull_config(name, table, raw.into_inner())?;
    let place = Place::of(&pull.dest);
    dest_problem(&pull, &place, this_machine, places).map_err(|m| (table, m))?;
    places.push((name.to_string(), place));
    Ok(Some(pull))
}
