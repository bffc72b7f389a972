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

/// The crate modules a module's files name (`crate::x`), itself left out.
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
        for (n, line) in text.lines().enumerate() {
            for (i, _) in line.match_indices("crate::") {
                let other: String = line[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                if !other.is_empty() && other != module {
                    found
                        .entry(other)
                        .or_insert_with(|| format!("{}:{}", file.display(), n + 1));
                }
            }
        }
    }
    found
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
