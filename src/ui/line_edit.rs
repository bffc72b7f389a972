//! The one line editor of every prompt (`:`, `/`, and the names typed to confirm a teardown or
//! a kill), with the keys people bring from a shell
//! (readline's emacs mode): ← → or Ctrl-B/F a character, Alt-B/F a word, Ctrl-A/Home and
//! Ctrl-E/End the ends; Backspace/Ctrl-H erase before the cursor, Delete/Ctrl-D at it, Ctrl-W
//! the word before it, Ctrl-U all before it, Ctrl-K all after it. No other Ctrl or Alt key types
//! its letter. The cursor is a character index; None is the end, where typing usually happens.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// `line` split at `cursor` (None: the end), for drawing the cursor between the halves.
pub fn split(line: &str, cursor: Option<usize>) -> (&str, &str) {
    let at = byte_at(line, cursor);
    line.split_at(at)
}

/// `line` as a prompt shows it: the cursor `▏` between the characters where typing goes.
pub fn with_cursor(line: &str, cursor: Option<usize>) -> String {
    let (before, after) = split(line, cursor);
    format!("{before}▏{after}")
}

fn byte_at(line: &str, cursor: Option<usize>) -> usize {
    cursor
        .and_then(|c| line.char_indices().nth(c).map(|(i, _)| i))
        .unwrap_or(line.len())
}

/// The cursor as a character index (the end when None).
fn index(line: &str, cursor: Option<usize>) -> usize {
    let len = line.chars().count();
    cursor.map_or(len, |c| c.min(len))
}

/// The cursor at character `at`: None at the end, so typing at the end stays the plain case.
fn place(line: &str, at: usize) -> Option<usize> {
    (at < line.chars().count()).then_some(at)
}

/// Where the word before `at` starts (shell word motion: skip spaces, then the word).
fn word_back(chars: &[char], at: usize) -> usize {
    let mut i = at;
    while i > 0 && chars[i - 1].is_whitespace() {
        i -= 1;
    }
    while i > 0 && !chars[i - 1].is_whitespace() {
        i -= 1;
    }
    i
}

/// Where the word after `at` ends.
fn word_forward(chars: &[char], at: usize) -> usize {
    let mut i = at;
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    while i < chars.len() && !chars[i].is_whitespace() {
        i += 1;
    }
    i
}

/// `key` applied to `line` at `cursor`; the line holds at most `max` characters.
pub fn edit(line: &mut String, cursor: &mut Option<usize>, key: KeyEvent, max: usize) {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let chars: Vec<char> = line.chars().collect();
    let at = index(line, *cursor);
    let (back, forward, end) = (word_back(&chars, at), word_forward(&chars, at), chars.len());
    // The new text and cursor index; a key that changes nothing returns early.
    let (text, to): (Vec<char>, usize) = match key.code {
        KeyCode::Left => (chars, at.saturating_sub(1)),
        KeyCode::Char('b') if ctrl => (chars, at.saturating_sub(1)),
        KeyCode::Right => (chars, (at + 1).min(end)),
        KeyCode::Char('f') if ctrl => (chars, (at + 1).min(end)),
        KeyCode::Char('b') if alt => (chars, back),
        KeyCode::Char('f') if alt => (chars, forward),
        KeyCode::Home => (chars, 0),
        KeyCode::Char('a') if ctrl => (chars, 0),
        KeyCode::End => (chars, end),
        KeyCode::Char('e') if ctrl => (chars, end),
        KeyCode::Backspace if ctrl => cut(chars, back, at),
        KeyCode::Char('w') if ctrl => cut(chars, back, at),
        KeyCode::Backspace => cut(chars, at.saturating_sub(1), at),
        KeyCode::Char('h') if ctrl => cut(chars, at.saturating_sub(1), at),
        KeyCode::Delete => cut(chars, at, (at + 1).min(end)),
        KeyCode::Char('d') if ctrl => cut(chars, at, (at + 1).min(end)),
        KeyCode::Char('u') if ctrl => cut(chars, 0, at),
        KeyCode::Char('k') if ctrl => cut(chars, at, end),
        KeyCode::Char(_) if ctrl || alt => return,
        KeyCode::Char(c) if !c.is_control() && chars.len() < max => {
            let mut text = chars;
            text.insert(at, c);
            (text, at + 1)
        }
        _ => return,
    };
    *line = text.into_iter().collect();
    *cursor = place(line, to);
}

/// `chars` without `from..to`, the cursor where the cut began.
fn cut(mut chars: Vec<char>, from: usize, to: usize) -> (Vec<char>, usize) {
    chars.drain(from.min(to)..to);
    (chars, from.min(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: KeyModifiers = KeyModifiers::NONE;
    const CTRL: KeyModifiers = KeyModifiers::CONTROL;
    const ALT: KeyModifiers = KeyModifiers::ALT;

    fn run(keys: &[(KeyCode, KeyModifiers)]) -> (String, Option<usize>) {
        let (mut line, mut cursor) = (String::new(), None);
        for (code, mods) in keys {
            edit(&mut line, &mut cursor, KeyEvent::new(*code, *mods), 40);
        }
        (line, cursor)
    }

    fn typing(text: &str) -> Vec<(KeyCode, KeyModifiers)> {
        text.chars().map(|c| (KeyCode::Char(c), NONE)).collect()
    }

    fn shown(keys: &[(KeyCode, KeyModifiers)]) -> String {
        let (line, cursor) = run(keys);
        let (before, after) = split(&line, cursor);
        format!("{before}|{after}")
    }

    #[test]
    fn erasing_keys_work_as_in_a_shell_and_no_chord_types_its_letter() {
        let mut keys = typing("pull gpu-1 ");
        keys.push((KeyCode::Char('w'), CTRL));
        assert_eq!(shown(&keys), "pull |", "Ctrl-W erases the last word");
        keys.push((KeyCode::Char('h'), CTRL));
        assert_eq!(shown(&keys), "pull|", "Ctrl-H erases a character");
        keys.push((KeyCode::Char('u'), CTRL));
        assert_eq!(
            shown(&keys),
            "|",
            "Ctrl-U erases the line before the cursor"
        );
        keys.push((KeyCode::Char('x'), ALT));
        keys.push((KeyCode::Char('z'), CTRL));
        assert_eq!(shown(&keys), "|", "no chord types its letter");
        let long: Vec<_> = (0..50).map(|_| (KeyCode::Char('é'), NONE)).collect();
        assert_eq!(run(&long).0.chars().count(), 40, "bounded");
    }

    #[test]
    fn the_cursor_moves_by_character_word_and_end_and_typing_goes_there() {
        let mut keys = typing("ssh gpu-1");
        keys.push((KeyCode::Char('a'), CTRL));
        assert_eq!(shown(&keys), "|ssh gpu-1", "Ctrl-A: the start");
        keys.push((KeyCode::Char('f'), ALT));
        assert_eq!(shown(&keys), "ssh| gpu-1", "Alt-F: after the word");
        keys.extend(typing("x"));
        assert_eq!(shown(&keys), "sshx| gpu-1", "typed at the cursor");
        keys.push((KeyCode::Backspace, NONE));
        keys.push((KeyCode::Char('e'), CTRL));
        assert_eq!(shown(&keys), "ssh gpu-1|", "Ctrl-E: the end");
        keys.push((KeyCode::Char('b'), ALT));
        assert_eq!(shown(&keys), "ssh |gpu-1", "Alt-B: the word's start");
        keys.push((KeyCode::Left, NONE));
        keys.push((KeyCode::Char('k'), CTRL));
        assert_eq!(shown(&keys), "ssh|", "Ctrl-K: all after the cursor");
        keys.push((KeyCode::Home, NONE));
        keys.push((KeyCode::Delete, NONE));
        keys.push((KeyCode::Right, NONE));
        assert_eq!(shown(&keys), "s|h");
        keys.push((KeyCode::Char('u'), CTRL));
        assert_eq!(shown(&keys), "|h", "Ctrl-U: all before the cursor");
        keys.push((KeyCode::End, NONE));
        keys.push((KeyCode::Right, NONE));
        assert_eq!(shown(&keys), "h|", "never past the end");
    }

    proptest::proptest! {
        /// Any keys keep the cursor inside the line and the line within its bound.
        #[test]
        fn any_keys_keep_the_cursor_in_the_line(keys in proptest::collection::vec(
            (0u8..14, proptest::char::range('a', 'é'), 0u8..3), 0..60)) {
            let (mut line, mut cursor) = (String::new(), None);
            for (k, c, m) in keys {
                let code = match k {
                    0 => KeyCode::Left, 1 => KeyCode::Right, 2 => KeyCode::Home,
                    3 => KeyCode::End, 4 => KeyCode::Backspace, 5 => KeyCode::Delete,
                    6 => KeyCode::Char(' '), _ => KeyCode::Char(c),
                };
                let mods = [NONE, CTRL, ALT][usize::from(m)];
                edit(&mut line, &mut cursor, KeyEvent::new(code, mods), 40);
                proptest::prop_assert!(line.chars().count() <= 40);
                proptest::prop_assert!(cursor.is_none_or(|c| c < line.chars().count()));
                let (a, b) = split(&line, cursor);
                proptest::prop_assert_eq!(format!("{a}{b}"), line.clone());
            }
        }
    }
}
