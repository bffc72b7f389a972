//! Shell-style globbing with `*` (any run, including empty) and `?` (one character); nothing
//! else is special. One matcher for every pattern a user writes: queue `done` files,
//! known_hosts host patterns, `init --from-ssh-config` Host names. Linear-time two pointers, so
//! a hostile pattern cannot blow up. Also the two facts about pull paths that config and pull
//! both need: which component is a shell pattern, and the literal text behind backslashes.

/// Whether one component of a pull path is a shell pattern: it holds `*`, `?` or `[` that no
/// backslash makes literal.
pub fn is_path_pattern(component: &str) -> bool {
    let mut chars = component.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// A pull path's literal text: each backslash dropped, the character after it kept.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}
