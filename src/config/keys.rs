//! The keys each table of fleet.toml takes, as the parser itself lists them when it refuses an
//! unknown one (serde's "expected one of"): the one key table, never a list kept by hand beside
//! the parser. The man page prints it; the manual's test checks every key against it.

use std::path::Path;

/// Each table as a person writes its header, and the smallest text that opens it (a member's
/// nested table needs its member's required keys first).
pub const TABLES: &[(&str, &str)] = &[
    ("(top level)", ""),
    ("[providers]", "[providers]\n"),
    ("[thresholds]", "[thresholds]\n"),
    ("[alerts]", "[alerts]\n"),
    ("[teardown]", "[teardown]\n"),
    ("[[alert]]", "[[alert]]\n"),
    ("[[host]]", "[[host]]\nname = \"a\"\nssh = \"a\"\n"),
    (
        "[host.pull]",
        "[[host]]\nname = \"a\"\nssh = \"a\"\n[host.pull]\n",
    ),
    ("[[slurm]]", "[[slurm]]\n"),
    (
        "[slurm.pull]",
        "[[slurm]]\nname = \"s\"\nssh = \"s\"\n[slurm.pull]\n",
    ),
    ("[[kubernetes]]", "[[kubernetes]]\n"),
    ("[[kaggle]]", "[[kaggle]]\n"),
];

/// The keys the table that `opening` opens takes, in the parser's order; empty where the
/// parser named none.
pub fn accepted(opening: &str) -> Vec<String> {
    let text = format!("{opening}zzz_unknown = 1\n");
    let Err(e) = super::fleet::parse(Path::new("keys.toml"), &text) else {
        return Vec::new();
    };
    let said = e.to_string();
    // "expected one of `a`, `b`", "expected `a` or `b`", "expected `a`".
    let Some((_, list)) = said.split_once("expected ") else {
        return Vec::new();
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_names_its_keys() {
        for (table, opening) in TABLES {
            assert!(accepted(opening).len() > 1, "{table}");
        }
        assert!(accepted(TABLES[6].1).contains(&"ssh".to_string()));
    }
}
