//! What a person types on the command line as a length of time (`rigwatch silence box 2h`,
//! `rigwatch watch --digest 30m`, `--timeout 10`, `watch --for 2.5`): one parser for all of
//! them, pure and fuzzed (`fuzz_targets/duration.rs`), that never panics on any text (a
//! multi-byte last character, `nan`, `1e400` included) and says what it wanted.

use std::time::Duration;

/// The largest count a duration takes, in any unit (a year and more in seconds).
const MOST: u64 = 999_999;

/// `90s`, `30m`, `2h`, `1d`, or `0` (zero: "lift it"). Err says what was wanted, quoting the
/// text as typed (escaped).
pub fn duration(text: &str) -> Result<Duration, String> {
    let wanted = || format!("{text:?} is not a duration; write it like 90s, 30m, 2h or 1d");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut chars = text.chars();
    let unit = chars.next_back().ok_or_else(wanted)?;
    let digits = chars.as_str();
    // Digits only: `parse` would take a sign ("+1h").
    let count: u64 = Some(digits)
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse().ok())
        .filter(|n| (1..=MOST).contains(n))
        .ok_or_else(wanted)?;
    let secs = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(wanted()),
    };
    Ok(Duration::from_secs(count * secs))
}

/// A number of seconds (`10`, `2.5`) or a [`duration`] (`90s`, `2m`), above zero: what
/// `--timeout` and `watch --for` take. Err says what was wanted, quoting the text as typed.
pub fn seconds(text: &str) -> Result<Duration, String> {
    let wanted =
        || format!("{text:?} is not a number of seconds; write it like 10, 2.5 or 90s, above zero");
    // Digits, at most one point between digits: no sign, exponent, `nan` or `inf` to reach f64.
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let plain = !whole.is_empty() && digits(whole) && digits(fraction) && !text.ends_with('.');
    let parsed = if plain {
        text.parse::<f64>()
            .ok()
            .filter(|s| *s <= (MOST * 86_400) as f64)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
    } else {
        duration(text).ok()
    };
    parsed.filter(|d| !d.is_zero()).ok_or_else(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn units_zero_and_what_is_refused() {
        assert_eq!(duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        // What panicked before (split_at inside a multi-byte character), and its kin.
        for bad in [
            "5é", "2µ", "é", "µ", "", "0s", "-1h", "+1h", "1.5h", "1 h", "h", "1000000s",
        ] {
            let why = duration(bad).expect_err(bad);
            assert!(why.contains("is not a duration"), "{bad}: {why}");
        }
        assert_eq!(
            duration("5é").expect_err("no unit é"),
            "\"5é\" is not a duration; write it like 90s, 30m, 2h or 1d"
        );
    }

    #[test]
    fn seconds_plain_or_with_a_unit_and_what_is_refused() {
        assert_eq!(seconds("10"), Ok(Duration::from_secs(10)));
        assert_eq!(seconds("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(seconds("0.1"), Ok(Duration::from_millis(100)));
        assert_eq!(seconds("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(seconds("2m"), Ok(Duration::from_secs(120)));
        // What reached Duration::from_secs_f64 and panicked before (`watch --for 1e30`), and kin.
        for bad in [
            "nan",
            "NaN",
            "inf",
            "-inf",
            "1e30",
            "1e400",
            "-1",
            "+1",
            "0",
            "0.0",
            "0s",
            ".5",
            "5.",
            "1..2",
            "",
            " 1",
            "5é",
            "1_000",
            "0x10",
            "99999999999999",
        ] {
            let why = seconds(bad).expect_err(bad);
            assert!(why.contains("is not a number of seconds"), "{bad}: {why}");
        }
    }

    proptest! {
        #[test]
        fn any_text_is_an_answer_never_a_panic(text in "\\PC{0,12}") {
            let _ = duration(&text);
            let _ = seconds(&text);
        }

        #[test]
        fn a_count_and_unit_read_back(n in 1u64..=MOST, unit in prop::sample::select(vec!['s', 'm', 'h', 'd'])) {
            let secs = match unit { 's' => 1, 'm' => 60, 'h' => 3600, _ => 86_400 };
            prop_assert_eq!(duration(&format!("{n}{unit}")), Ok(Duration::from_secs(n * secs)));
        }
    }
}
