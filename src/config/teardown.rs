//! `[teardown]` in fleet.toml: how long a destroy may run and how long rigwatch asks the
//! provider afterwards whether the instance is gone. None of it touches the guard: a short
//! timeout only makes a destroy end as FAILED sooner, and no value lets one run unconfirmed.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTeardown {
    destroy_timeout_secs: Option<Spanned<f64>>,
    confirm_within_secs: Option<Spanned<f64>>,
    confirm_every_secs: Option<Spanned<f64>>,
    final_check: Option<Spanned<String>>,
}

/// Whose tools the final check's re-hash trusts. Either way it is taken after the last
/// confirmation and must match the pull; only how the box's bytes are hashed differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinalCheck {
    /// On the box, by its own `openssl` and `sha256sum`: fast, and as true as those tools.
    #[default]
    OnBox,
    /// Every proven file's bytes streamed home over the open connection (`cat`) and hashed
    /// here: trusts no hashing tool of the box; every byte crosses the link again.
    Strict,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TeardownTuning {
    /// A destroy command still running after this is ended with its process group: FAILED.
    pub destroy_timeout: Duration,
    /// After the command, the provider is asked until the instance is gone or this has passed.
    pub confirm_within: Duration,
    /// How often the provider is asked meanwhile.
    pub confirm_every: Duration,
    /// `final_check = "box"` (default) or `"strict"`.
    pub final_check: FinalCheck,
}

impl Default for TeardownTuning {
    fn default() -> Self {
        TeardownTuning {
            destroy_timeout: Duration::from_secs(120),
            confirm_within: Duration::from_secs(60),
            confirm_every: Duration::from_secs(3),
            final_check: FinalCheck::OnBox,
        }
    }
}

/// The tuning, each value checked against its bounds; Err is (offset, message).
pub(super) fn build(raw: &RawTeardown) -> Result<TeardownTuning, (usize, String)> {
    let defaults = TeardownTuning::default();
    let within = |value: &Option<Spanned<f64>>, key: &str, low: f64, high: f64, default| {
        let Some(v) = value else {
            return Ok(default);
        };
        let secs = *v.get_ref();
        if secs.is_finite() && (low..=high).contains(&secs) {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err((
                v.span().start,
                format!("teardown.{key} = {secs} must be between {low} and {high} seconds"),
            ))
        }
    };
    let final_check = match &raw.final_check {
        None => FinalCheck::OnBox,
        Some(v) => match v.get_ref().as_str() {
            "box" => FinalCheck::OnBox,
            "strict" => FinalCheck::Strict,
            other => {
                return Err((
                    v.span().start,
                    format!(
                        "teardown.final_check = {:?}: say \"box\" (re-hashed by the box's own \
                         tools) or \"strict\" (the bytes streamed home and hashed here)",
                        other.chars().take(40).collect::<String>()
                    ),
                ));
            }
        },
    };
    Ok(TeardownTuning {
        final_check,
        destroy_timeout: within(
            &raw.destroy_timeout_secs,
            "destroy_timeout_secs",
            1.0,
            3600.0,
            defaults.destroy_timeout,
        )?,
        confirm_within: within(
            &raw.confirm_within_secs,
            "confirm_within_secs",
            0.0,
            600.0,
            defaults.confirm_within,
        )?,
        confirm_every: within(
            &raw.confirm_every_secs,
            "confirm_every_secs",
            0.1,
            60.0,
            defaults.confirm_every,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TeardownTuning, String> {
        crate::config::fleet::parse(std::path::Path::new("f.toml"), text)
            .map(|f| f.teardown)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_bounds_and_where_a_bad_value_is() {
        assert_eq!(parse(""), Ok(TeardownTuning::default()));
        let fast = parse("[teardown]\ndestroy_timeout_secs = 2\nconfirm_within_secs = 0\n");
        assert_eq!(
            fast.map(|t| (t.destroy_timeout, t.confirm_within)),
            Ok((Duration::from_secs(2), Duration::ZERO))
        );
        let why = parse("[teardown]\ndestroy_timeout_secs = 0\n").expect_err("too short");
        assert!(
            why.contains("f.toml:2:") && why.contains("between 1 and 3600 seconds"),
            "{why}"
        );
        assert!(
            parse("[teardown]\nguard = false\n").is_err(),
            "no unknown keys"
        );
        let strict = parse("[teardown]\nfinal_check = \"strict\"\n").map(|t| t.final_check);
        assert_eq!(strict, Ok(FinalCheck::Strict));
        let why = parse("[teardown]\nfinal_check = \"off\"\n").expect_err("no way off");
        assert!(
            why.contains("f.toml:2:") && why.contains("\"strict\""),
            "{why}"
        );
    }
}
