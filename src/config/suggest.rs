//! "Did you mean": a misspelt key named with the real key it is closest to, in the words of
//! serde's own "unknown field `x`, expected one of `a`, `b`" message.

/// How alike two keys must be (Jaro-Winkler, as clap's suggestions use) to be suggested.
const ALIKE: f64 = 0.8;

/// `message` with the closest expected key suggested, when one is close enough.
pub fn did_you_mean(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((typed, expected)) = rest.split_once("`, expected one of ") else {
        return message.to_string();
    };
    let best = expected
        .split(", ")
        .map(|k| k.trim_matches('`'))
        .map(|k| (strsim::jaro_winkler(typed, k), k))
        .filter(|(score, _)| *score >= ALIKE)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, key)) => {
            format!("unknown field `{typed}`: did you mean `{key}`? (expected one of {expected})")
        }
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn a_close_key_is_suggested_and_a_far_one_is_not() {
        let m = "unknown field `ckpt_dri`, expected one of `name`, `ssh`, `ckpt_dir`, `log`";
        assert_eq!(
            did_you_mean(m),
            "unknown field `ckpt_dri`: did you mean `ckpt_dir`? (expected one of `name`, `ssh`, \
             `ckpt_dir`, `log`)"
        );
        let far = "unknown field `hostname`, expected one of `name`, `ssh`, `log`";
        assert_eq!(did_you_mean(far), far);
        assert_eq!(did_you_mean("invalid type"), "invalid type");
    }
}
