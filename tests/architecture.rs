//! Keeps data flowing one way: each module may import only what the module map in src/lib.rs
//! allows. A scan of `use crate::...` and `crate::` paths, so a violation fails here, not in review.

use std::path::Path;

/// module → the crate modules it must never mention.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("config", &["transport", "cli", "probe"]),
    ("transport", &["cli", "probe"]),
    (
        "probe",
        &[
            "transport",
            "cli",
            "config",
            "fleet",
            "signals",
            "monitor",
            "ui",
        ],
    ),
    ("fleet", &["transport", "cli", "signals", "monitor", "ui"]),
    ("signals", &["cli", "monitor", "ui"]),
    ("monitor", &["cli", "ui", "alerts"]),
    ("alerts", &["cli", "ui", "transport"]),
    ("demo", &["cli", "ui"]),
    ("ui", &["cli"]),
    (
        "ledger",
        &["transport", "monitor", "ui", "cli", "pull", "teardown"],
    ),
    ("pull", &["monitor", "ui", "cli", "teardown", "signals"]),
    ("teardown", &["monitor", "ui", "cli"]),
    (
        "queue",
        &[
            "config",
            "clocks",
            "sanitize",
            "probe",
            "transport",
            "provider",
            "fleet",
            "signals",
            "ledger",
            "pull",
            "teardown",
            "monitor",
            "demo",
            "ui",
            "cli",
        ],
    ),
];

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
fn modules_import_only_downstream() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for (module, forbidden) in FORBIDDEN {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for (n, line) in text.lines().enumerate() {
                for other in *forbidden {
                    if line.contains(&format!("crate::{other}")) {
                        violations.push(format!(
                            "{}:{}: {module} uses {other}",
                            file.display(),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
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
