//! Keeps data flowing one way: the module map in src/lib.rs is read as an allow-list. Each
//! module may import exactly the modules its `Imports:` line names, all of them above it in the
//! map; an import the map does not name, a name it does not use, a module missing from the map
//! or an upward import fails here, not in review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The map: each module in order, with the modules it says it imports.
fn module_map(lib: &str) -> Vec<(String, BTreeSet<String>)> {
    let doc: Vec<&str> = lib
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .collect();
    let text = doc.join(" ");
    let mut out = Vec::new();
    for entry in text.split(" - `").skip(1) {
        let name = entry.split('`').next().unwrap_or_default().to_string();
        let imports = entry
            .rsplit_once("Imports:")
            .map(|(_, list)| list)
            .unwrap_or_else(|| panic!("map entry `{name}` has no Imports: line"));
        // Only the backticked names before the first parenthesis-free full stop count; a
        // parenthesis may say why (`probe` (a Slurm job's times)).
        let mut names = BTreeSet::new();
        let mut depth = 0;
        let mut rest = imports;
        while let Some(c) = rest.chars().next() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                '.' if depth == 0 => break,
                '`' if depth == 0 => {
                    let (n, after) = rest[1..].split_once('`').unwrap_or(("", ""));
                    names.insert(n.to_string());
                    rest = after;
                    continue;
                }
                _ => {}
            }
            rest = &rest[c.len_utf8()..];
        }
        out.push((name, names));
    }
    out
}

/// The crate modules a module's files name (`crate::x`, `crate::{x, y::z}` over any number of
/// lines, or a `super::` chain that climbs to the crate root), itself left out.
fn imports_of(src: &Path, module: &str) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    let dir = src.join(module);
    if dir.is_dir() {
        rust_files(&dir, &mut files);
    } else {
        files.push(src.join(format!("{module}.rs")));
    }
    let mut found = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let depth = module_depth(src, &file);
        for (other, n) in names_in(&text, depth) {
            if other != module {
                found
                    .entry(other)
                    .or_insert_with(|| format!("{}:{n}", file.display()));
            }
        }
    }
    found
}

/// How many modules deep a file's top level sits below its top module: `src/m.rs` and
/// `src/m/mod.rs` 0, `src/m/a.rs` 1. A `*_tests.rs` or `*_proptest.rs` file is its parent's
/// `#[path]` child, one deeper than where it lies.
fn module_depth(src: &Path, file: &Path) -> usize {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let parts = rel.components().count();
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let mut depth = parts.saturating_sub(1);
    if name == "mod.rs" {
        depth = depth.saturating_sub(1);
    }
    if name.ends_with("_tests.rs") || name.ends_with("_proptest.rs") {
        depth += 1;
    }
    depth
}

/// Each crate module named in `text` with its line: `crate::x`, every top-level name of a
/// `crate::{…}` group, and the module a `super::` chain lands on when it climbs past the top
/// module (`depth` plus the inline `mod … {` blocks open at that point).
fn names_in(text: &str, depth: usize) -> Vec<(String, usize)> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect()
    };
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut level = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => break,
                    '}' => level -= 1,
                    ',' if level == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start => {
                        let name = ident(&group[j..]);
                        if !name.is_empty() && name != "self" {
                            out.push((name, line_of(i + 8 + j)));
                        }
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.push((name, line_of(i)));
            }
        }
    }
    let mut inline = 0usize;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        if t.starts_with("mod ") && t.trim_end().ends_with('{') {
            inline += 1;
        }
        let mut at = 0;
        while let Some(i) = line[at..].find("super::") {
            let start = at + i;
            // Only the start of a chain: `super::super::x` counts once.
            let before = &line[..start];
            if before.ends_with("::") {
                at = start + 7;
                continue;
            }
            let mut chain = 0;
            let mut rest = &line[start..];
            while let Some(r) = rest.strip_prefix("super::") {
                chain += 1;
                rest = r;
            }
            if chain > depth + inline {
                let name = ident(rest);
                if !name.is_empty() {
                    out.push((name, n + 1));
                }
            }
            at = start + 7 * chain;
        }
    }
    out
}

#[test]
fn the_import_reader_takes_grouped_imports_and_super_chains_to_the_root() {
    let grouped = "use crate::{\n    alerts::Severity,\n    config::{Host, Fleet},\n    self,\n};\nuse crate::pull;\n";
    let names: Vec<(String, usize)> = names_in(grouped, 1);
    assert_eq!(
        names,
        vec![
            ("alerts".to_string(), 2),
            ("config".to_string(), 3),
            ("pull".to_string(), 6)
        ]
    );
    // From src/m/a.rs (depth 1): two supers reach the crate root, one stays inside `m`.
    let climbs = "use super::super::ledger::Ledger;\nuse super::sibling::X;\n";
    assert_eq!(names_in(climbs, 1), vec![("ledger".to_string(), 1)]);
    // Inside an inline `mod tests {`, one more super is still inside the module.
    let tests = "mod tests {\n    use super::super::frame::Frame;\n}\n";
    assert_eq!(names_in(tests, 1), Vec::<(String, usize)>::new());
    assert_eq!(
        module_depth(Path::new("src"), Path::new("src/m/a_tests.rs")),
        2
    );
    assert_eq!(module_depth(Path::new("src"), Path::new("src/m/mod.rs")), 0);
}

/// The teardown dialog is a pure state machine: it may name only the values it is told
/// (`pull`'s currentness, `target`) and `sanitize`; nothing that does I/O, spawns or sleeps.
#[test]
fn the_teardown_dialog_is_pure() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let text = std::fs::read_to_string(src.join("teardown/driver.rs")).expect("driver.rs");
    let named: BTreeSet<String> = names_in(&text, 1).into_iter().map(|(n, _)| n).collect();
    let pure: BTreeSet<String> = ["pull", "target", "sanitize"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let extra: Vec<&String> = named.difference(&pure).collect();
    assert!(extra.is_empty(), "teardown::driver names {extra:?}");
    for io in [
        "tokio::",
        "std::fs",
        "std::process",
        "std::net",
        "std::thread",
        "reqwest",
    ] {
        assert!(!text.contains(io), "teardown::driver uses {io}");
    }
}

#[test]
fn every_module_imports_exactly_what_the_map_in_lib_rs_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let map = module_map(&lib);
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(String::from)
        .collect();
    let mapped: BTreeSet<String> = map.iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(declared, mapped, "every module in the map, and only those");
    let mut wrong = Vec::new();
    for (i, (module, allowed)) in map.iter().enumerate() {
        let above: BTreeSet<&String> = map[..i].iter().map(|(m, _)| m).collect();
        for name in allowed {
            if !above.contains(name) {
                wrong.push(format!(
                    "the map lets {module} import {name}, which is not above it"
                ));
            }
        }
        let found = imports_of(&src, module);
        for (other, at) in &found {
            if !allowed.contains(other) {
                wrong.push(format!(
                    "{at}: {module} imports {other}, which the map does not name"
                ));
            }
        }
        for name in allowed {
            if !found.contains_key(name) {
                wrong.push(format!("the map says {module} imports {name}; it does not"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_map_reader_takes_the_imports_line_and_skips_the_reasons() {
    let lib = "//! Map.\n//! - `a` — first. Imports: nothing.\n//! - `b` — uses `x` in prose.\n//!   Imports: `a` (for `c`'s sake), `d`.\n";
    let map = module_map(lib);
    assert_eq!(map[0], ("a".to_string(), BTreeSet::new()));
    assert_eq!(
        map[1],
        (
            "b".to_string(),
            ["a", "d"].iter().map(|s| s.to_string()).collect()
        )
    );
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_the_ui_touches_the_terminal_libraries() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(src.join("ui")))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.contains("ratatui::") || text.contains("crossterm::")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "ratatui/crossterm outside src/ui: {offenders:?}"
    );
}

#[test]
fn only_the_cli_prints() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(src.join("cli")) && !f.ends_with("main.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.contains("println!(") || text.contains("eprintln!(")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "print outside cli (the TUI owns the screen): {offenders:?}"
    );
}

/// No behaviour depends on the words of a message: an outcome, a link state, a profile or an
/// error is a value, compared as one. Each pattern here is one that was found doing it (a file
/// recorded UNPROVEN read off its words, `status`'s exit code off "up", a locale's "No such
/// file", a crate's "entire block") or that shows a person Rust's debug text of an exit status.
#[test]
fn no_behaviour_reads_the_words_of_a_message() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let forbidden = [
        "starts_with(\"unproven",
        "== \"up\"",
        "!= \"up\"",
        "== \"connecting\"",
        "\"up\" if",
        "contains(\"No such file",
        "contains(\"entire block",
        "profile != \"local\"",
        "exit {status:?}",
        "exited {status:?}",
        "exited {:?}",
        "ended with {:?}",
    ];
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            // This test's own list is not a use.
            if let Some(p) = forbidden.iter().find(|p| line.contains(*p)) {
                found.push(format!("{}:{}: {p}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every source file past 400 lines says why in its first comment (STYLE.md: a file is read in
/// one sitting; past ~400 lines, split it or say why not).
#[test]
fn a_file_past_400_lines_says_why_in_its_first_comment() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let silent: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).expect("source");
            let lines = text.lines().count();
            let first: Vec<&str> = text
                .lines()
                .take_while(|l| l.starts_with("//"))
                .map(|l| l.trim_start_matches("//!").trim_start_matches("//").trim())
                .collect();
            let says = first.join(" ").to_lowercase().contains("past 400 lines");
            (lines > 400 && !says).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(silent.is_empty(), "split these or say why: {silent:#?}");
}
