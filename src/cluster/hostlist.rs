//! Slurm's compressed host lists (`gpu[01-03,07],login1`) expanded to node names, as
//! `scontrol show hostnames` would print them. Bounded: a list that would expand past `max`
//! names is cut there (the caller probes a few nodes per job, never a whole partition).

/// The names in `list`, at most `max` of them; None for a list this reader does not follow
/// (nested brackets, a range running backwards), which the caller says rather than guesses.
pub fn expand(list: &str, max: usize) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for part in split_top(list.trim()) {
        if part.is_empty() {
            continue;
        }
        match part.find('[') {
            None => out.push(part.to_string()),
            Some(open) => {
                let close = part.rfind(']')?;
                let (prefix, suffix) = (&part[..open], &part[close + 1..]);
                let inner = part.get(open + 1..close)?;
                if inner.contains(['[', ']']) || suffix.contains(['[', ']']) {
                    return None;
                }
                for range in inner.split(',') {
                    let (low, high) = range.split_once('-').unwrap_or((range, range));
                    let width = low.len();
                    let (a, b): (u64, u64) = (low.parse().ok()?, high.parse().ok()?);
                    if b < a {
                        return None;
                    }
                    for n in a..=b {
                        if out.len() >= max {
                            return Some(out);
                        }
                        out.push(format!("{prefix}{n:0width$}{suffix}"));
                    }
                }
            }
        }
        if out.len() >= max {
            out.truncate(max);
            return Some(out);
        }
    }
    Some(out)
}

/// Splits on the commas that are outside brackets.
fn split_top(list: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn lists_expand_as_scontrol_prints_them() {
        let names = |l: &str| expand(l, 100);
        assert_eq!(names("vm"), Some(vec!["vm".to_string()]));
        assert_eq!(
            names("gpu[01-03,07],login1"),
            Some(
                ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(
            names("a[9-10]-ib"),
            Some(["a9-ib", "a10-ib"].map(String::from).to_vec())
        );
        assert_eq!(
            expand("n[1-100000]", 3).map(|v| v.len()),
            Some(3),
            "bounded"
        );
        assert_eq!(names("n[3-1]"), None, "a backwards range is not guessed");
        assert_eq!(names("n[1-2"), None);
        assert_eq!(names(""), Some(Vec::new()));
    }
}
