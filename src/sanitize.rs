//! Remote text made safe for a terminal: escape sequences and control characters removed,
//! length capped. Everything a box says passes through here before it is shown; every command
//! and its output also passes `mask_secrets` before it is shown, logged or recorded.

mod secrets;

pub use secrets::{MASK, mask_secrets};

/// One line of remote text: every terminal escape sequence dropped whole (CSI `ESC [ … m`,
/// OSC `ESC ] … BEL`, DCS and the other strings, their C1 forms, two- and three-byte escapes),
/// so none leaves a visible remnant (`[31m`, `]52;c;…`); then every other control character,
/// and every invisible formatting character that can reorder or hide what is shown (bidi
/// overrides and isolates, zero-width characters, the BOM, tag characters); at most
/// `max_chars`, cut as `fit` cuts.
pub fn line(text: &str, max_chars: usize) -> String {
    let clean: String = without_sequences(text)
        .chars()
        .filter(|c| !c.is_control() && !is_format(*c))
        .collect();
    fit(&clean, max_chars)
}

/// Free text for people (a message, an error, a command and its output): one [`line`], and a
/// key or token in it masked. Every such text that leaves rigwatch (a view, an event, a sink's
/// payload, the log, a ledger row) is made by this one function or was made by it upstream.
pub fn words(text: &str, max_chars: usize) -> String {
    mask_secrets(&line(text, max_chars))
}

/// `text` with its escape sequences taken out whole, as a terminal would consume them. A
/// sequence left open at the end takes the rest with it: a terminal would swallow it too.
fn without_sequences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let kind = match c {
            '\u{1b}' => match chars.next() {
                Some('[') => Seq::Csi,
                Some(']') => Seq::Str,
                Some('P' | 'X' | '^' | '_') => Seq::Str,
                // ESC, intermediates (space to /), then one final character.
                Some(' '..='/') => {
                    while chars.next_if(|c| matches!(c, ' '..='/')).is_some() {}
                    chars.next();
                    continue;
                }
                _ => continue,
            },
            '\u{9b}' => Seq::Csi,
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => Seq::Str,
            c => {
                out.push(c);
                continue;
            }
        };
        match kind {
            // Parameters and intermediates, then a final byte from @ to ~; anything else ends it.
            Seq::Csi => {
                while chars
                    .next_if(|c| matches!(c, '0'..='?' | ' '..='/'))
                    .is_some()
                {}
                chars.next_if(|c| matches!(c, '@'..='~'));
            }
            // Up to BEL or the string terminator (ESC \ or its C1 form).
            Seq::Str => {
                while let Some(c) = chars.next() {
                    match c {
                        '\u{7}' | '\u{9c}' => break,
                        '\u{1b}' if chars.peek() == Some(&'\\') => {
                            chars.next();
                            break;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

enum Seq {
    Csi,
    Str,
}

/// A command's words (its stderr, say) as one line: each non-empty line trimmed and joined
/// with "; ", secrets masked, then made safe as [`line`] makes it.
pub fn joined(text: &str, max_chars: usize) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    line(&mask_secrets(&joined), max_chars)
}

/// `text` in at most `width` characters: whole, or cut at a word boundary (mid-word only when
/// the last word is longer than half the room) and ended with "…", so a cut never passes for
/// the whole and never leaves half a unit ("down 81" for "down 81m").
pub fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let Some(room) = width.checked_sub(1) else {
        return String::new();
    };
    let head: String = text.chars().take(room).collect();
    let word_ends_here = text.chars().nth(room) == Some(' ');
    let cut = match head.rfind(' ') {
        _ if word_ends_here => head.as_str(),
        Some(i) if head[..i].chars().count() * 2 >= room => &head[..i],
        _ => head.as_str(),
    };
    format!("{}…", cut.trim_end())
}

/// A document for stdout as pretty JSON. serde_json escapes C0 controls but writes DEL, C1
/// controls (a lone 0x9B starts a CSI sequence in many terminals) and invisible formatting
/// raw; here those are `\uXXXX` escapes too. Outside strings JSON is ASCII, so this touches
/// only string contents: a box's text reaches scripts whole and the terminal harmless.
/// `text` as one word for a POSIX shell, whatever it holds: single quotes, each `'` closed,
/// escaped and reopened. For anything remote or user-written that goes into a command line.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

pub fn json<T: serde::Serialize>(value: &T) -> serde_json::Result<String> {
    Ok(escape_invisible(&serde_json::to_string_pretty(value)?))
}

/// `json` on one line, for JSON Lines streams.
pub fn json_line<T: serde::Serialize>(value: &T) -> serde_json::Result<String> {
    Ok(escape_invisible(&serde_json::to_string(value)?))
}

fn escape_invisible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c != '\n' && (c.is_control() || is_format(c)) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
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
    fn a_commands_words_are_one_line_each_kept_apart_and_masked() {
        assert_eq!(
            joined(
                "sacct: error: one\n\n  sacct: fatal: two \ntoken=sk-live0123456789abcdef\n",
                200
            ),
            format!("sacct: error: one; sacct: fatal: two; token={}", MASK)
        );
    }

    #[test]
    fn json_escapes_what_a_terminal_would_act_on_and_keeps_the_text() {
        let text = "a\x1bb\u{9b}c\u{7f}d\u{202e}e\u{e0041}f\nz";
        let out = json(&vec![text]).expect("json");
        assert!(
            out.chars()
                .all(|c| c == '\n' || !(c.is_control() || is_format(c))),
            "{out:?}"
        );
        assert!(
            out.contains(r"\u009b") && out.contains(r"\udb40\udc41"),
            "{out}"
        );
        let back: Vec<String> = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(back, vec![text.to_string()], "nothing lost");
    }

    /// Whole sequences go, as a terminal consumes them: a stripped ESC used to leave `[31m`
    /// and `]52;c;SGVs…` on screen.
    #[test]
    fn escape_sequences_leave_no_remnant() {
        let cases = [
            ("\x1b[31mred\x1b[0m", "red"),
            ("\x1b[1;38;5;196mbold\x1b[m!", "bold!"),
            ("a\x1b]52;c;SGVsbG8=\x07b", "ab"),
            ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
            ("a\x1bP1$r0m\x1b\\b", "ab"),
            ("a\u{9b}2Jb\u{9d}0;t\u{9c}c", "abc"),
            ("a\x1b(Bb\x1bcc\x1b7d", "abcd"),
            ("a\x1b[?25lb", "ab"),
            // Left open at the end: the rest goes, as a terminal would swallow it.
            ("ok\x1b]0;never ended", "ok"),
            ("plain [31m stays", "plain [31m stays"),
        ];
        for (raw, shown) in cases {
            assert_eq!(line(raw, 100), shown, "{raw:?}");
        }
    }

    #[test]
    fn escapes_and_controls_are_dropped_and_length_capped() {
        assert_eq!(line("a\x1b]0;pwned\x07b\r\n\tc", 100), "abc");
        assert_eq!(line("abcdef", 3), "ab…");
        assert_eq!(line("disk almost full", 12), "disk almost…");
        assert_eq!(line("\u{9b}31m", 10), "");
        // A right-to-left override would show `gpj.exe` as `exe.jpg`; zero-width and BOM hide.
        assert_eq!(
            line("a\u{202e}b\u{200b}c\u{feff}d\u{2066}e\u{e0041}", 20),
            "abcde"
        );
    }
}
