//! Every number fleet.toml takes, with the range it must fall in: a value outside it stops
//! rigwatch at load with file:line:col, the key and the range. Ranges keep safety on and the
//! machine cool: `keepalive_max = 0` would mean "never give up on a frozen box", `poll_secs =
//! 1e-9` burns a core, `repeat_hours = 0` re-sends an alert every poll. docs/configuration.md lists the table.

use toml::Spanned;

/// (key, lowest, highest, unit) for each number; the key as the error names it.
pub const RANGES: &[(&str, f64, f64, &str)] = &[
    ("poll_secs", 0.5, 3600.0, "seconds"),
    ("connect_timeout_secs", 1.0, 600.0, "seconds"),
    ("keepalive_secs", 0.5, 600.0, "seconds"),
    ("keepalive_max", 1.0, 100.0, "missed keepalives"),
    ("reconnect_max_secs", 1.0, 3600.0, "seconds"),
    ("max_sessions", 1.0, 64.0, "channels"),
    ("providers.poll_secs", 5.0, 86_400.0, "seconds"),
    ("alerts.group_wait_secs", 1.0, 3600.0, "seconds"),
    ("alerts.repeat_hours", 0.1, 720.0, "hours"),
    ("alert.timeout_secs", 1.0, 600.0, "seconds"),
    // One squeue call per period; clusters ask users not to poll the controller hard.
    ("slurm.period_secs", 10.0, 3600.0, "seconds"),
    // Two kubectl calls per period (Jobs, then their pods); the API server is shared too.
    ("kubernetes.period_secs", 10.0, 3600.0, "seconds"),
    // One `kaggle kernels status` per kernel per period, against a rate-limited public API.
    ("kaggle.period_secs", 60.0, 86_400.0, "seconds"),
];

/// `value` checked against `key`'s range in [`RANGES`]; Err is (offset, message).
pub fn checked(value: &Spanned<f64>, key: &str) -> Result<f64, (usize, String)> {
    let x = *value.get_ref();
    // A key missing from the table is refused, never taken unbounded.
    let Some(&(_, low, high, unit)) = RANGES.iter().find(|(k, ..)| *k == key) else {
        return Err((value.span().start, format!("{key} has no stated range")));
    };
    if x.is_finite() && (low..=high).contains(&x) {
        Ok(x)
    } else {
        Err((
            value.span().start,
            format!("{key} = {x} is out of range: from {low} to {high} {unit}"),
        ))
    }
}

/// As `checked`, for a whole number.
pub fn checked_whole(value: &Spanned<u32>, key: &str) -> Result<u32, (usize, String)> {
    let as_float = Spanned::new(value.span(), f64::from(*value.get_ref()));
    checked(&as_float, key).map(|_| *value.get_ref())
}

/// The longest path a box's tools take (Linux's PATH_MAX).
const PATH_BYTES: usize = 4096;
/// Mounts listed for df. They reach the box on the probe's stdin, not its command line, but df
/// takes them as its arguments, which Linux caps at about 2 MiB in all: half of that, so the
/// environment and df's own options always fit.
const MOUNT_BYTES: usize = 1024 * 1024;

/// The paths and patterns a host's probe carries to the box, bounded whatever the config says:
/// `(key, value)` pairs and the mounts. Each goes to the probe as one line of its stdin, so a
/// newline (or NUL, which no path holds) in one is refused. Err says which and the bound.
pub fn probe_paths<'a>(
    single: impl IntoIterator<Item = (&'a str, &'a str)>,
    mounts: &[String],
) -> Result<(), String> {
    let long = |key: &str, value: &str| {
        format!(
            "{key} is {} bytes long; a box takes paths of at most {PATH_BYTES}",
            value.len()
        )
    };
    let single: Vec<(&str, &str)> = single.into_iter().collect();
    let every = single
        .iter()
        .copied()
        .chain(mounts.iter().map(|m| ("a mount", m.as_str())));
    for (key, value) in every {
        if value.len() > PATH_BYTES {
            return Err(long(key, value));
        }
        if value.contains(['\n', '\0']) {
            return Err(format!(
                "{key} {:?} holds a newline or NUL, which the probe cannot carry",
                value.chars().take(200).collect::<String>()
            ));
        }
    }
    let bytes: usize = mounts.iter().map(|m| m.len() + 1).sum();
    if bytes > MOUNT_BYTES {
        return Err(format!(
            "mounts lists {} paths ({bytes} bytes): at most {} KiB, which df takes as its \
             arguments (list the mounts that matter; without `mounts` every filesystem is read)",
            mounts.len(),
            MOUNT_BYTES / 1024
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_a_sane_range_and_the_message_names_it() {
        for (key, low, high, _) in RANGES {
            assert!(0.0 < *low && low < high, "{key}");
        }
        let value = |x| Spanned::new(3..4, x);
        assert_eq!(checked(&value(2.0), "poll_secs"), Ok(2.0));
        for bad in [0.0, 1e-9, 1e7, f64::NAN, -1.0] {
            let (at, why) = checked(&value(bad), "poll_secs").expect_err("refused");
            assert_eq!(at, 3);
            assert!(why.contains("from 0.5 to 3600 seconds"), "{why}");
        }
        let zero = Spanned::new(0..1, 0u32);
        assert!(checked_whole(&zero, "keepalive_max").is_err());
    }
}
