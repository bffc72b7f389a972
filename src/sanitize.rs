//! Remote text made safe for a terminal: escape sequences and control characters removed,
//! length capped. Everything a box says passes through here before it is shown.

/// One line of remote text: ESC and every other control character dropped, and so is every
/// invisible formatting character that can reorder or hide what is shown (bidi overrides and
/// isolates, zero-width characters, the BOM, tag characters); at most `max_chars`.
pub fn line(text: &str, max_chars: usize) -> String {
    text.chars()
        .filter(|c| !c.is_control() && !is_format(*c))
        .take(max_chars)
        .collect()
}

/// Unicode's format characters (general category Cf) that terminals render invisibly.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{070F}' | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_dropped_and_length_capped() {
        assert_eq!(line("a\x1b]0;pwned\x07b\r\n\tc", 100), "a]0;pwnedbc");
        assert_eq!(line("abcdef", 3), "abc");
        assert_eq!(line("\u{9b}31m", 10), "31m");
        // A right-to-left override would show `gpj.exe` as `exe.jpg`; zero-width and BOM hide.
        assert_eq!(
            line("a\u{202e}b\u{200b}c\u{feff}d\u{2066}e\u{e0041}", 20),
            "abcde"
        );
    }
}
