//! `[[kaggle]]`: Kaggle notebooks whose commits ("Save & Run All") are watched as jobs, read
//! through the official `kaggle` CLI with the user's own credentials (which rigwatch never
//! reads, stores or shows). Each kernel is named `owner/slug`, as in its URL.
//!
//! `[kaggle.pull]` has the keys of `[host.pull]`; its paths are under `/kaggle/working`, the one
//! folder a commit keeps as its output.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::PullConfig;
use super::pull::{Place, RawPull};

/// The folder a Kaggle commit keeps: every output file's name is relative to it.
pub const WORKING: &str = "/kaggle/working";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKaggle {
    name: Spanned<String>,
    kernels: Vec<Spanned<String>>,
    period_secs: Option<Spanned<f64>>,
    gpu: Option<bool>,
    kaggle: Option<Spanned<String>>,
    pull: Option<Spanned<RawPull>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KaggleConfig {
    pub name: String,
    /// `owner/slug` of each watched kernel.
    pub kernels: Vec<String>,
    /// How often each kernel's status is read (one CLI call per kernel, plus the list and the
    /// quota once per period).
    pub period: Duration,
    /// The notebooks are meant to run on a GPU: a commit whose notebook is set to no
    /// accelerator is a danger ("runs on CPU"). None: no intent stated, nothing judged.
    pub gpu: Option<bool>,
    /// The CLI: a path, else `kaggle` on PATH.
    pub program: PathBuf,
    /// What a commit's output is and where it goes: paths under `/kaggle/working`.
    pub pull: Option<PullConfig>,
}

/// `owner/slug`: what the CLI accepts as a kernel (its own check: a slug of at least five
/// characters), in the characters a Kaggle URL uses.
fn kernel(value: &Spanned<String>) -> Result<String, (usize, String)> {
    let text = value.get_ref();
    let fine = |s: &str| {
        !s.is_empty()
            && !s.starts_with('-')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    };
    match text.split_once('/') {
        Some((owner, slug)) if fine(owner) && fine(slug) && slug.len() >= 5 => Ok(text.clone()),
        _ => Err((
            value.span().start,
            format!(
                "kernel {text:?} must be owner/slug as in its URL (kaggle.com/code/owner/slug; \
                 the slug has at least five characters)"
            ),
        )),
    }
}

pub(super) fn build(
    raw: Vec<RawKaggle>,
    taken: &[&str],
    places: &mut Vec<(String, Place)>,
) -> Result<Vec<KaggleConfig>, (usize, String)> {
    let mut out: Vec<KaggleConfig> = Vec::with_capacity(raw.len());
    for k in raw {
        let name = k.name.get_ref().trim().to_string();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err((
                k.name.span().start,
                format!("name = {name:?} must be non-empty printable text"),
            ));
        }
        if taken.contains(&name.as_str()) || out.iter().any(|c| c.name == name) {
            return Err((
                k.name.span().start,
                format!(
                    "duplicate name {name:?}; each [[host]], [[slurm]], [[kubernetes]] and \
                     [[kaggle]] needs a unique name"
                ),
            ));
        }
        if k.kernels.is_empty() {
            return Err((
                k.name.span().start,
                format!("[[kaggle]] {name:?}: kernels is empty; name each as \"owner/slug\""),
            ));
        }
        let mut kernels: Vec<String> = Vec::with_capacity(k.kernels.len());
        for value in &k.kernels {
            let checked = kernel(value)?;
            if kernels.contains(&checked) {
                return Err((
                    value.span().start,
                    format!("kernel {checked:?} is listed twice"),
                ));
            }
            kernels.push(checked);
        }
        let period = match &k.period_secs {
            Some(v) => Duration::from_secs_f64(super::ranges::checked(v, "kaggle.period_secs")?),
            None => Duration::from_secs(300),
        };
        let table = k.pull.as_ref().map_or(0, |p| p.span().start);
        let pull = super::connection::pull(&name, k.pull, false, places)?;
        if let Some(pull) = &pull
            && let Some(path) = pull
                .paths
                .iter()
                .find(|p| *p != WORKING && !p.starts_with(&format!("{WORKING}/")))
        {
            return Err((
                table,
                format!(
                    "[[kaggle]] {name:?}: pull path {path:?} is not under {WORKING}, the one \
                     folder a commit keeps"
                ),
            ));
        }
        out.push(KaggleConfig {
            kernels,
            period,
            gpu: k.gpu,
            program: k
                .kaggle
                .map(|p| super::paths::expand_tilde(p.get_ref()))
                .unwrap_or_else(|| PathBuf::from("kaggle")),
            pull,
            name,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "kaggle_tests.rs"]
mod tests;
