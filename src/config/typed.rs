//! What a person types on the command line as a duration (`rigwatch silence box 2h`,
//! `rigwatch watch --digest 30m`): one parser for all of them, pure and fuzzed
//! (`fuzz_targets/duration.rs`), that never panics on any text (a multi-byte last character
//! included) and says what it wanted.

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

    proptest! {
        #[test]
        fn any_text_is_an_answer_never_a_panic(text in "\\PC{0,12}") {
            let _ = duration(&text);
        }

        #[test]
        fn a_count_and_unit_read_back(n in 1u64..=MOST, unit in prop::sample::select(vec!['s', 'm', 'h', 'd'])) {
            let secs = match unit { 's' => 1, 'm' => 60, 'h' => 3600, _ => 86_400 };
            prop_assert_eq!(duration(&format!("{n}{unit}")), Ok(Duration::from_secs(n * secs)));
        }
    }
}
