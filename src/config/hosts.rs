//! A `[[host]]` of `fleet.toml`: its keys as written, and the box they make, each value
//! checked where it is written (file:line:col).

use serde::Deserialize;
use toml::Spanned;

use super::connection::connection;
use super::error::ConfigError;
use super::fleet::{Billing, HostConfig, QueueConfig};
use super::pull::RawPull;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    pub(super) name: Spanned<String>,
    ssh: Spanned<String>,
    pub(super) identity: Option<Spanned<String>>,
    profile: Option<Spanned<String>>,
    accept_new: Option<bool>,
    mounts: Option<Vec<String>>,
    run: Option<Spanned<String>>,
    run_process: Option<String>,
    log: Option<String>,
    ckpt_dir: Option<String>,
    price_per_hour: Option<Spanned<f64>>,
    stopped_price_per_hour: Option<Spanned<f64>>,
    currency: Option<String>,
    mtbi_hours: Option<Spanned<f64>>,
    ckpt_write_secs: Option<Spanned<f64>>,
    instance_id: Option<String>,
    teardown: Option<Spanned<String>>,
    pull: Option<Spanned<RawPull>>,
    queue: Option<String>,
    final_dir: Option<String>,
    cell_log: Option<String>,
    progress: Option<Vec<Spanned<String>>>,
}

/// What a host takes from the fleet's top level where it says nothing itself.
pub(super) struct Defaults<'a> {
    /// The profiles that exist, where they are known (a checked load).
    pub profiles: Option<&'a [String]>,
    pub accept_new: bool,
    pub currency: Option<&'a str>,
}

/// Each `[[host]]` as the box it makes, in order; the first mistake is the error.
pub(super) fn build(
    raw: Vec<RawHost>,
    defaults: &Defaults<'_>,
    places: &mut Vec<(String, super::pull::Place)>,
    at: &dyn Fn(usize, String) -> ConfigError,
) -> Result<Vec<HostConfig>, ConfigError> {
    let mut hosts: Vec<HostConfig> = Vec::with_capacity(raw.len());
    for h in raw {
        let taken: Vec<&str> = hosts.iter().map(|o| o.name.as_str()).collect();
        let host = one(h, &taken, defaults, places, at)?;
        hosts.push(host);
    }
    Ok(hosts)
}

fn one(
    h: RawHost,
    taken: &[&str],
    defaults: &Defaults<'_>,
    places: &mut Vec<(String, super::pull::Place)>,
    at: &dyn Fn(usize, String) -> ConfigError,
) -> Result<HostConfig, ConfigError> {
    let conn = connection(
        &h.name,
        &h.ssh,
        h.identity.as_ref(),
        h.accept_new,
        defaults.accept_new,
        taken,
    )
    .map_err(|(offset, m)| at(offset, m))?;
    let (name, target) = (conn.name, conn.target);
    let profile = profile(h.profile.as_ref(), defaults.profiles).map_err(|(o, m)| at(o, m))?;
    let this_machine = profile == "local" || target.is_loopback();
    let pull = super::connection::pull(&name, h.pull, this_machine, places)
        .map_err(|(offset, m)| at(offset, m))?;
    let carried = [
        ("run", h.run.as_ref().map(|r| r.get_ref().as_str())),
        ("instance_id", h.instance_id.as_deref()),
        ("log", h.log.as_deref()),
        ("ckpt_dir", h.ckpt_dir.as_deref()),
        ("run_process", h.run_process.as_deref()),
        ("queue", h.queue.as_deref()),
        ("final_dir", h.final_dir.as_deref()),
        ("cell_log", h.cell_log.as_deref()),
    ];
    let carried = carried.into_iter().filter_map(|(k, v)| Some((k, v?)));
    super::ranges::probe_paths(carried, h.mounts.as_deref().unwrap_or_default())
        .map_err(|m| at(h.name.span().start, format!("host {name:?}: {m}")))?;
    let queue = queue(h.queue, h.final_dir, h.cell_log, h.progress).map_err(|e| match e {
        Some((offset, m)) => at(offset, m),
        None => at(
            h.name.span().start,
            format!("host {name:?}: `queue` and `final_dir` go together; set both"),
        ),
    })?;
    if let Some(r) = &h.run {
        session_name(r.get_ref()).map_err(|m| at(r.span().start, m))?;
    }
    if let Some(t) = &h.teardown {
        if t.get_ref().trim().is_empty() {
            return Err(at(t.span().start, "teardown must be a command".into()));
        }
    }
    let money = |v: &Option<Spanned<f64>>, key: &str| amount(v, key).map_err(|(o, m)| at(o, m));
    Ok(HostConfig {
        name,
        target,
        identity: conn.identity,
        profile,
        accept_new: conn.accept_new,
        mounts: h.mounts.unwrap_or_default(),
        run: h.run.map(Spanned::into_inner).filter(|r| !r.is_empty()),
        run_process: h.run_process.filter(|r| !r.trim().is_empty()),
        log: h.log.filter(|r| !r.is_empty()),
        ckpt_dir: h.ckpt_dir.filter(|r| !r.is_empty()),
        billing: Billing {
            price_per_hour: money(&h.price_per_hour, "price_per_hour")?,
            stopped_price_per_hour: money(&h.stopped_price_per_hour, "stopped_price_per_hour")?,
            currency: h.currency.or_else(|| defaults.currency.map(str::to_string)),
            mtbi_hours: money(&h.mtbi_hours, "mtbi_hours")?,
            ckpt_write_secs: money(&h.ckpt_write_secs, "ckpt_write_secs")?,
        },
        instance_id: h.instance_id.filter(|i| !i.trim().is_empty()),
        teardown: h.teardown.map(Spanned::into_inner),
        pull,
        queue,
        walltime: false,
    })
}

/// The host's profile: `generic-ssh` where it names none; a name that is no profile's is the
/// error, at the name.
fn profile(
    named: Option<&Spanned<String>>,
    known: Option<&[String]>,
) -> Result<String, (usize, String)> {
    let Some(p) = named else {
        return Ok("generic-ssh".to_string());
    };
    let (at, name) = (p.span().start, p.get_ref());
    if !is_profile_name(name) {
        let why =
            format!("profile {name:?} is not a profile name (lowercase letters, digits and '-')");
        return Err((at, why));
    }
    match known {
        Some(known) if !known.contains(name) => Err((
            at,
            format!("unknown profile {name:?}; there are: {}", known.join(", ")),
        )),
        _ => Ok(name.clone()),
    }
}

/// A sweep's queue: `queue` and `final_dir` together or neither (Err(None): one alone), its
/// progress patterns checked (Err at the pattern).
fn queue(
    file: Option<String>,
    final_dir: Option<String>,
    cell_log: Option<String>,
    progress: Option<Vec<Spanned<String>>>,
) -> Result<Option<QueueConfig>, Option<(usize, String)>> {
    match (file, final_dir) {
        (Some(file), Some(final_dir)) => Ok(Some(QueueConfig {
            file,
            final_dir,
            cell_log,
            progress: checked_patterns(progress.unwrap_or_default()).map_err(Some)?,
        })),
        (None, None) => Ok(None),
        _ => Err(None),
    }
}

/// A price or a count of hours: a number of at least 0.
pub(super) fn amount(
    value: &Option<Spanned<f64>>,
    key: &str,
) -> Result<Option<f64>, (usize, String)> {
    match value {
        Some(v) if !v.get_ref().is_finite() || *v.get_ref() < 0.0 => Err((
            v.span().start,
            format!("{key} = {} must be a number of at least 0", v.get_ref()),
        )),
        Some(v) => Ok(Some(*v.get_ref())),
        None => Ok(None),
    }
}

/// Every progress pattern compiles and names the groups rigwatch reads.
fn checked_patterns(raw: Vec<Spanned<String>>) -> Result<Vec<String>, (usize, String)> {
    raw.into_iter()
        .map(|p| {
            let at = p.span().start;
            let text = p.into_inner();
            match regex::Regex::new(&text) {
                Err(e) => Err((at, format!("progress pattern does not compile: {e}"))),
                Ok(re) if !re.capture_names().flatten().any(|n| n == "cur") => Err((
                    at,
                    "progress pattern needs a named group (?P<cur>...) and usually (?P<total>...)"
                        .into(),
                )),
                Ok(_) => Ok(text),
            }
        })
        .collect()
}

fn is_profile_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `run` names a tmux session; tmux turns `.` and `:` into `_`, and a value with spaces was a
/// process pattern in rigwatch's old meaning of `run`, so both are refused with the way out.
fn session_name(run: &str) -> Result<(), String> {
    if run.contains(char::is_whitespace) || run.contains(['.', ':']) {
        return Err(format!(
            "run = {run:?} is not a tmux session name (matched exactly; no spaces, `.` or `:`); \
             for a process pattern write run_process = {run:?}"
        ));
    }
    Ok(())
}
