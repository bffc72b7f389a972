//! Platform profiles: what stop and destroy mean on each rental platform, what survives and
//! what keeps billing, its timers and commands — as data. The shipped profiles are compiled in;
//! a file of the same name in `<config dir>/profiles/` overrides the fields it sets.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, Located};

/// The profiles rigwatch ships, by name.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "generic-ssh",
        include_str!("../../profiles/generic-ssh.toml"),
    ),
    ("runpod", include_str!("../../profiles/runpod.toml")),
    ("vastai", include_str!("../../profiles/vastai.toml")),
    ("lambda", include_str!("../../profiles/lambda.toml")),
    ("paperspace", include_str!("../../profiles/paperspace.toml")),
    ("autodl", include_str!("../../profiles/autodl.toml")),
    ("china", include_str!("../../profiles/china.toml")),
    ("slurm", include_str!("../../profiles/slurm.toml")),
    ("kubernetes", include_str!("../../profiles/kubernetes.toml")),
    ("colab", include_str!("../../profiles/colab.toml")),
    ("kaggle", include_str!("../../profiles/kaggle.toml")),
    ("local", include_str!("../../profiles/local.toml")),
];

fn rented() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub title: String,
    pub summary: String,
    /// Whether time on it is paid by the hour (false for a machine the user owns): an idle
    /// GPU then costs money, and is said to.
    #[serde(default = "rented")]
    pub rented: bool,
    #[serde(default)]
    pub durable_paths: Vec<String>,
    #[serde(default)]
    pub warnings: Vec<String>,
    pub stop: StopState,
    pub destroy: Destroy,
    #[serde(default)]
    pub timers: Timers,
    #[serde(default)]
    pub inode_caps: Vec<InodeCap>,
    #[serde(default)]
    pub commands: Commands,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopState {
    pub exists: bool,
    pub verb: Option<String>,
    pub reversible: Option<bool>,
    #[serde(default)]
    pub survives: Vec<String>,
    #[serde(default)]
    pub lost: Vec<String>,
    pub bills: Option<String>,
    /// Fraction of the running hourly price that keeps billing while stopped.
    pub billing_fraction: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Destroy {
    pub verb: String,
    pub reversible: bool,
    #[serde(default)]
    pub survives: Vec<String>,
    #[serde(default)]
    pub lost: Vec<String>,
    pub bills: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timers {
    pub auto_release_days_after_stop: Option<u32>,
    pub idle_timeout_minutes: Option<u32>,
    pub max_session_hours: Option<u32>,
    pub weekly_gpu_hours: Option<u32>,
    /// The job runs under a walltime limit (Slurm); its value comes from the scheduler.
    pub walltime: Option<bool>,
    /// The provider stops the rental at a date it reports (vast.ai's host lifetime end); the
    /// date comes from the provider's CLI.
    pub lifetime_end: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InodeCap {
    pub path: String,
    pub inodes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commands {
    pub list: Option<String>,
    pub stop: Option<String>,
    pub destroy: Option<String>,
}

fn located(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let offset = e.span().map_or(0, |s| s.start);
    ConfigError::At(Located::at_offset(
        path,
        text,
        offset,
        e.message().trim().to_string(),
    ))
}

/// Overlays `user` onto `base`: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Value, user: toml::Value) {
    match (base, user) {
        (toml::Value::Table(b), toml::Value::Table(u)) => {
            for (key, value) in u {
                match b.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        b.insert(key, value);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

/// Every profile: the shipped ones with the user's overrides, plus the user's own new ones.
pub fn load_all(config_dir: Option<&Path>) -> Result<Vec<Profile>, ConfigError> {
    let user_dir = config_dir.map(|d| d.join("profiles"));
    let mut profiles = Vec::new();
    for (name, text) in SHIPPED {
        let shipped = PathBuf::from(format!("profiles/{name}.toml"));
        let mut value: toml::Value =
            toml::from_str(text).map_err(|e| located(&shipped, text, &e))?;
        let mut source = (shipped, text.to_string());
        if let Some(path) = user_dir
            .as_ref()
            .map(|d| d.join(format!("{name}.toml")))
            .filter(|p| p.exists())
        {
            let user_text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            let user: toml::Value =
                toml::from_str(&user_text).map_err(|e| located(&path, &user_text, &e))?;
            merge(&mut value, user);
            source = (path, user_text);
        }
        profiles.push(finish(value, &source.0, &source.1, name)?);
    }
    if let Some(dir) = user_dir.filter(|d| d.is_dir()) {
        let mut extra: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|source| ConfigError::Read {
                path: dir.clone(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .filter(|p| {
                !SHIPPED
                    .iter()
                    .any(|(n, _)| p.file_stem().is_some_and(|s| s == *n))
            })
            .collect();
        extra.sort();
        for path in extra {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            let value: toml::Value =
                toml::from_str(&text).map_err(|e| located(&path, &text, &e))?;
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            profiles.push(finish(value, &path, &text, &stem)?);
        }
    }
    Ok(profiles)
}

/// Deserializes a merged profile. A merged value has no positions, so an error is placed at
/// the key it names in the file read last (the user's override, when there is one).
fn finish(
    value: toml::Value,
    path: &Path,
    text: &str,
    file_name: &str,
) -> Result<Profile, ConfigError> {
    let at = |message: String| {
        let offset = message
            .split('`')
            .nth(1)
            .and_then(|key| text.find(key))
            .unwrap_or(0);
        ConfigError::At(Located::at_offset(path, text, offset, message))
    };
    let profile: Profile = value
        .try_into()
        .map_err(|e: toml::de::Error| at(e.message().trim().to_string()))?;
    if profile.name != file_name {
        return Err(at(format!(
            "`name` {:?} must match the file name {file_name:?}",
            profile.name
        )));
    }
    Ok(profile)
}

pub fn find<'a>(profiles: &'a [Profile], name: &str) -> Option<&'a Profile> {
    profiles.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_loads_and_round_trips() {
        let profiles = load_all(None).expect("shipped profiles load");
        assert_eq!(profiles.len(), SHIPPED.len());
        for p in &profiles {
            let text = toml::to_string(p).expect("serialises");
            let back: Profile = toml::from_str(&text).expect("reads back");
            assert_eq!(&back, p, "{}", p.name);
            assert!(
                !p.summary.is_empty() && !p.destroy.verb.is_empty(),
                "{}",
                p.name
            );
        }
        let autodl = find(&profiles, "autodl").expect("autodl");
        assert_eq!(autodl.timers.auto_release_days_after_stop, Some(15));
        assert_eq!(autodl.stop.reversible, Some(true));
        assert!(find(&profiles, "lambda").is_some_and(|p| !p.stop.exists));
        assert_eq!(
            find(&profiles, "kaggle").and_then(|p| p.timers.weekly_gpu_hours),
            Some(30)
        );
    }

    #[test]
    fn a_user_file_overrides_only_what_it_sets_and_adds_new_profiles() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("profiles")).expect("dir");
        std::fs::write(
            dir.path().join("profiles/autodl.toml"),
            "[timers]\nauto_release_days_after_stop = 7\n",
        )
        .expect("write");
        let own = SHIPPED[0]
            .1
            .replace("name = \"generic-ssh\"", "name = \"myhpc\"");
        std::fs::write(dir.path().join("profiles/myhpc.toml"), own).expect("write");
        let profiles = load_all(Some(dir.path())).expect("loads");
        let autodl = find(&profiles, "autodl").expect("autodl");
        assert_eq!(autodl.timers.auto_release_days_after_stop, Some(7));
        assert_eq!(
            autodl.stop.reversible,
            Some(true),
            "untouched fields keep the shipped value"
        );
        assert!(find(&profiles, "myhpc").is_some());
    }

    #[test]
    fn a_bad_user_file_is_an_error_with_its_position() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("profiles")).expect("dir");
        let file = dir.path().join("profiles/runpod.toml");
        std::fs::write(&file, "[timers]\nauto_release_days = 3\n").expect("write");
        let err = load_all(Some(dir.path()))
            .expect_err("unknown key")
            .to_string();
        assert!(
            err.contains("runpod.toml:2:1:") && err.contains("auto_release_days"),
            "{err}"
        );
        std::fs::write(&file, "[timers\n").expect("write");
        let err = load_all(Some(dir.path())).expect_err("syntax").to_string();
        assert!(err.contains("runpod.toml:1:"), "{err}");
    }
}
