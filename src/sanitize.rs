//! Remote text made safe for a terminal: escape sequences and control characters removed,
//! length capped. Everything a box says passes through here before it is shown.

/// One line of remote text: ESC and every other control character dropped, at most `max_chars`.
pub fn line(text: &str, max_chars: usize) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .take(max_chars)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_dropped_and_length_capped() {
        assert_eq!(line("a\x1b]0;pwned\x07b\r\n\tc", 100), "a]0;pwnedbc");
        assert_eq!(line("abcdef", 3), "abc");
        assert_eq!(line("\u{9b}31m", 10), "31m");
    }
}
