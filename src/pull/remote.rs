//! What the box holds under the pull paths, and its SHA-256 of each file: the shell commands
//! rigwatch runs for them and the pure parsers of what they print.

use std::collections::{BTreeMap, BTreeSet};

/// One regular file on the box under a configured pull path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub path: String,
    pub size: u64,
    /// Seconds since the epoch.
    pub mtime: i64,
    /// Which configured path matched it.
    pub root: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub files: Vec<RemoteFile>,
    /// Configured paths that matched nothing on the box.
    pub unmatched: Vec<String>,
    /// Lines that were not understood, with their line number.
    pub garbled: Vec<String>,
}

const ROOT_MARK: &str = "@root ";

/// A configured path as one shell word: everything quoted except the glob characters, so
/// `/w/run/*.pt` still expands and nothing else in it is interpreted; `~/` stays a tilde prefix.
pub fn glob_word(path: &str) -> String {
    let (prefix, rest) = match path.strip_prefix("~/") {
        Some(rest) => ("~/", rest),
        None => ("", path),
    };
    let mut word = String::from(prefix);
    for c in rest.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '/' | '.' | '_' | '-') || c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            word.push('\\');
            word.push(c);
        }
    }
    word
}

/// Lists every regular file under each path with size and mtime. Each path's block starts with
/// a `@root N` line so a path that matched nothing is told apart from an empty listing.
pub fn listing_command(paths: &[String]) -> String {
    let mut script = String::from("LC_ALL=C; export LC_ALL\n");
    for (i, p) in paths.iter().enumerate() {
        script.push_str(&format!(
            "echo '{ROOT_MARK}{i}'\nfor f in {}; do [ -e \"$f\" ] && find \"$f\" -type f -exec stat -c '%s %Y %n' {{}} + 2>/dev/null; done\n",
            glob_word(p)
        ));
    }
    script
}

pub fn parse_listing(paths: &[String], text: &str) -> Listing {
    let mut listing = Listing::default();
    let mut matched = vec![false; paths.len()];
    let mut root: Option<usize> = None;
    let mut seen = BTreeSet::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(i) = line.strip_prefix(ROOT_MARK) {
            root = i.trim().parse().ok().filter(|i| *i < paths.len());
            continue;
        }
        let parsed = root.and_then(|r| parse_stat_line(line).map(|f| (r, f)));
        match parsed {
            Some((r, (size, mtime, path))) => {
                matched[r] = true;
                // Overlapping paths (a folder and a glob inside it) list a file twice.
                if seen.insert(path.to_string()) {
                    listing.files.push(RemoteFile {
                        path: path.to_string(),
                        size,
                        mtime,
                        root: r,
                    });
                }
            }
            None if line.trim().is_empty() => {}
            None => listing.garbled.push(format!(
                "line {}: {}",
                n + 1,
                crate::sanitize::line(line, 120)
            )),
        }
    }
    listing.unmatched = paths
        .iter()
        .zip(&matched)
        .filter(|(_, m)| !**m)
        .map(|(p, _)| p.clone())
        .collect();
    listing
}

fn parse_stat_line(line: &str) -> Option<(u64, i64, &str)> {
    let mut parts = line.splitn(3, ' ');
    let size = parts.next()?.parse().ok()?;
    let mtime = parts.next()?.parse().ok()?;
    let path = parts.next()?;
    path.starts_with('/').then_some((size, mtime, path))
}

/// Hashes the given files with whichever SHA-256 tool the box has; prints `@nohash` if none.
pub fn hash_command(paths: &[&str]) -> String {
    let quoted: Vec<String> = paths.iter().map(|p| shell_quote(p)).collect();
    format!(
        "if command -v sha256sum >/dev/null 2>&1; then H='sha256sum'; \
         elif command -v shasum >/dev/null 2>&1; then H='shasum -a 256'; \
         else echo '@nohash'; exit 3; fi; $H -- {}",
        quoted.join(" ")
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashOutput {
    /// Remote path → lowercase hex SHA-256.
    Hashes(BTreeMap<String, String>),
    /// The box has neither sha256sum nor shasum.
    NoTool,
}

pub fn parse_hashes(text: &str) -> HashOutput {
    if text.lines().any(|l| l.trim() == "@nohash") {
        return HashOutput::NoTool;
    }
    let mut out = BTreeMap::new();
    for line in text.lines() {
        // GNU tools prefix the line with `\` and escape the name when it holds `\` or a newline.
        let (escaped, line) = match line.strip_prefix('\\') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        let Some((hash, name)) = line.split_once("  ").or_else(|| line.split_once(" *")) else {
            continue;
        };
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let name = if escaped {
            name.replace("\\n", "\n").replace("\\\\", "\\")
        } else {
            name.to_string()
        };
        out.insert(name, hash.to_ascii_lowercase());
    }
    HashOutput::Hashes(out)
}

pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_word_keeps_globs_and_quotes_the_rest() {
        assert_eq!(glob_word("/w/a b;c/*.pt"), "/w/a\\ b\\;c/*.pt");
        assert_eq!(glob_word("~/x y"), "~/x\\ y");
    }

    #[test]
    fn listing_groups_files_by_root_and_names_unmatched_paths() {
        let paths = vec!["/w/ckpt".to_string(), "/w/none/*.json".to_string()];
        let text = "@root 0\n10 1700000000 /w/ckpt/a.pt\n0 1700000001 /w/ckpt/sub/b c.json\n\
                    @root 1\nnonsense\n";
        let l = parse_listing(&paths, text);
        assert_eq!(l.files.len(), 2);
        assert_eq!(l.files[1].path, "/w/ckpt/sub/b c.json");
        assert_eq!(l.files[1].mtime, 1_700_000_001);
        assert_eq!(l.unmatched, vec!["/w/none/*.json".to_string()]);
        assert_eq!(l.garbled, vec!["line 5: nonsense".to_string()]);
    }

    #[test]
    fn a_file_listed_under_two_roots_counts_once() {
        let paths = vec!["/w".to_string(), "/w/*.pt".to_string()];
        let l = parse_listing(&paths, "@root 0\n1 2 /w/a.pt\n@root 1\n1 2 /w/a.pt\n");
        assert_eq!(l.files.len(), 1);
        assert!(l.unmatched.is_empty());
    }

    #[test]
    fn hashes_parse_plain_escaped_and_missing_tool() {
        let h = "a".repeat(64);
        let text = format!("{h}  /w/a.pt\n\\{h}  /w/odd\\nname\nshort  /w/x\n");
        let HashOutput::Hashes(map) = parse_hashes(&text) else {
            panic!("expected hashes");
        };
        assert_eq!(map.get("/w/a.pt"), Some(&h));
        assert_eq!(map.get("/w/odd\nname"), Some(&h));
        assert_eq!(map.len(), 2);
        assert_eq!(parse_hashes("@nohash\n"), HashOutput::NoTool);
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
