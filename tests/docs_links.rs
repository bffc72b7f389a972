//! The front page and the book hold together: every relative link in README.md and docs/
//! names a file that exists and, where it has one, an anchor that is a heading of that file;
//! every chapter in docs/ is in the book's SUMMARY.md; README stays a front page and
//! BENCHMARKS.md the current table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages: README.md and every markdown file of docs/.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md"), root().join("BENCHMARKS.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// A heading's anchor as GitHub and mdBook make it: lower case, punctuation dropped, spaces
/// to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines outside code fences.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((n + 1, line));
        }
    }
    out
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter_map(|(_, l)| l.strip_prefix('#'))
        .map(|h| slug(h.trim_start_matches('#')))
        .collect()
}

/// Every `](target)` of a line.
fn links(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(after[..end].to_string());
        rest = &after[end..];
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("page");
        let dir = page.parent().unwrap_or(Path::new("."));
        for (n, line) in prose(&text) {
            for target in links(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    dir.join(path)
                };
                let at = format!("{}:{n}: {target}", page.display());
                if !file.exists() {
                    broken.push(format!("{at}: no such file"));
                    continue;
                }
                if !anchor.is_empty() {
                    let target_text = std::fs::read_to_string(&file).unwrap_or_default();
                    if !anchors(&target_text).contains(anchor) {
                        broken.push(format!("{at}: no heading with that anchor"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn every_chapter_is_in_the_summary_and_readme_is_a_front_page() {
    let summary = std::fs::read_to_string(root().join("docs/SUMMARY.md")).expect("SUMMARY.md");
    let listed: BTreeSet<String> = links(&summary.replace('\n', " ")).into_iter().collect();
    for page in pages().iter().skip(2) {
        let name = page
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name != "SUMMARY.md" {
            assert!(listed.contains(name), "docs/{name} is not in SUMMARY.md");
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md is {lines} lines: a front page is at most 300"
    );
}

#[test]
fn the_anchor_maker_follows_the_renderers() {
    assert_eq!(slug(" Link states"), "link-states");
    assert_eq!(
        slug("Headless: `rigwatch check` and `rigwatch status`"),
        "headless-rigwatch-check-and-rigwatch-status"
    );
    assert_eq!(links("see [a](b.md#c) and [d](e)"), ["b.md#c", "e"]);
}

/// Every key the config parser accepts, in every table, is named in the manual (the
/// configuration reference or the chapter of its member kind), as `key` or as `key =` in a
/// TOML example: a key added to the parser and not to the manual fails here.
#[test]
fn the_manual_names_every_key_the_parser_accepts() {
    let chapters = [
        "configuration.md",
        "slurm.md",
        "kubernetes.md",
        "notebooks.md",
        "watch-and-alerts.md",
        "pulls-and-teardown.md",
        "queues.md",
        "platforms.md",
    ];
    let manual: String = chapters
        .iter()
        .map(|c| std::fs::read_to_string(root().join("docs").join(c)).expect("chapter"))
        .collect::<Vec<_>>()
        .join("\n");
    // A key that is a table is named by its header: `[thresholds]`, `[[alert]]`, `[host.pull]`.
    let named = |key: &str| {
        manual.contains(&format!("[{key}]"))
            || manual.contains(&format!(".{key}]"))
            || manual.contains(&format!("`{key}`"))
            || manual.contains(&format!("`{key} ="))
            || manual.lines().any(|l| {
                l.trim_start()
                    .trim_start_matches("# ")
                    .starts_with(&format!("{key} ="))
            })
    };
    let mut missing = Vec::new();
    for (table, opening) in rigwatch::config::keys::TABLES {
        let keys = rigwatch::config::keys::accepted(opening);
        assert!(keys.len() > 1, "{table}: {keys:?}");
        for key in keys {
            if !named(&key) {
                missing.push(format!("{table} {key}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "keys the parser accepts that the manual never names: {missing:?}"
    );
}

/// And no other: every TOML example in the manual loads past the parser's key check (a key the
/// manual shows that the parser refuses as unknown fails here). An example of one member's keys
/// alone is read as that member's table.
#[test]
fn every_key_the_manual_shows_is_one_the_parser_accepts() {
    let mut refused = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("page");
        for block in text.split("```toml\n").skip(1) {
            let Some((toml, _)) = block.split_once("```") else {
                continue;
            };
            let unknown = |toml: &str| match rigwatch::config::fleet::parse(
                Path::new("example.toml"),
                toml,
            ) {
                Err(e) if e.to_string().contains("unknown field") => Some(e.to_string()),
                _ => None,
            };
            let as_host = format!("[[host]]\nname = \"x\"\nssh = \"x\"\n{toml}");
            if let (Some(e), Some(_)) = (unknown(toml), unknown(&as_host)) {
                refused.push(format!("{}: {e}", page.display()));
            }
        }
    }
    assert!(refused.is_empty(), "{refused:#?}");
}
