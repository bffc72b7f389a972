//! Keys and tokens kept off screens, logs and the ledger. A teardown command such as
//! `vastai destroy instance 7 --api-key sk-…` is shown in the dialog, logged and recorded with
//! its output: each of those would otherwise keep the key forever, readable by anyone who sees
//! the screen or the file. What names the value (`--api-key`, `API_KEY=`) is kept, so the text
//! still says what was passed; only the value becomes `****`.

use std::sync::LazyLock;

use regex::Regex;

/// What a masked value reads as.
pub const MASK: &str = "****";

/// A value: single- or double-quoted, or a run of non-space characters.
const VALUE: &str = r#"(?:'[^']*'|"[^"]*"|[^\s'"]+)"#;

/// Words that make an option or a variable name a secret's.
const SECRET_WORDS: &str = r"(?:api[-_]?key|apikey|token|secret|passwd|password|passphrase|credentials?|auth|access[-_]?key|private[-_]?key)";

/// Each rule: a pattern whose group `keep` is kept and the rest of the match masked.
static RULES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // `--api-key X`, `--api-key=X`, `--token X`, `--password=X`, `-p`-less long options.
        format!(r"(?i)(?P<keep>--?[a-z0-9_-]*{SECRET_WORDS}[a-z0-9_-]*(?:=|\s+)){VALUE}"),
        // `API_KEY=…`, `HF_TOKEN=…`, `export GITHUB_TOKEN=…`, `"api_key": "…"`.
        format!(r"(?i)(?P<keep>\b[a-z0-9_]*{SECRET_WORDS}[a-z0-9_]*=){VALUE}"),
        format!(r#"(?i)(?P<keep>"[a-z0-9_-]*{SECRET_WORDS}[a-z0-9_-]*"\s*:\s*")[^"]*"#),
        // `Authorization: Bearer …` (or Basic, or a bare token), and a lone `Bearer …`.
        r"(?i)(?P<keep>authorization:\s*(?:bearer\s+|basic\s+|token\s+)?)[^\s'\x22]+".into(),
        r"(?i)(?P<keep>\bbearer\s+)[a-z0-9._~+/=-]{8,}".into(),
        // Keys that announce themselves by prefix: OpenAI-style `sk-`, GitHub, Slack, Hugging
        // Face, GitLab, AWS access key ids. The prefix stays, to say which kind it was.
        r"(?P<keep>\b(?:sk|pk|rk)-)[A-Za-z0-9_-]{12,}".into(),
        r"(?P<keep>\b(?:ghp|gho|ghu|ghs|ghr|github_pat|hf|glpat)[_-])[A-Za-z0-9_]{16,}".into(),
        r"(?P<keep>\bxox[abprs]-)[A-Za-z0-9-]{10,}".into(),
        r"(?P<keep>\bAKIA)[0-9A-Z]{16}\b".into(),
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// Long runs of letters and digits: vast.ai's keys are 64 hex characters. UUIDs (36) and the
/// 32-hex ids some providers give instances stay readable; paths are never one run (`/`, `.`).
static LONG_RUN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\b[A-Za-z0-9_+=-]{40,}").ok());

/// `text` with every value that looks like a key, token or password replaced by `****`.
pub fn mask_secrets(text: &str) -> String {
    let mut out = text.to_string();
    for rule in RULES.iter() {
        out = rule
            .replace_all(&out, |c: &regex::Captures<'_>| {
                let keep = c.name("keep").map_or("", |m| m.as_str());
                format!("{keep}{MASK}")
            })
            .into_owned();
    }
    if let Some(long) = LONG_RUN.as_ref() {
        out = long
            .replace_all(&out, |c: &regex::Captures<'_>| {
                let run = &c[0];
                let mixed = run.chars().any(|ch| ch.is_ascii_digit())
                    && run.chars().any(|ch| ch.is_ascii_alphabetic());
                if mixed {
                    MASK.to_string()
                } else {
                    run.to_string()
                }
            })
            .into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_and_what_names_them_stays() {
        let key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        let table = [
            (
                "vastai destroy instance '7' -y --api-key sk-abcdef0123456789",
                "vastai destroy instance '7' -y --api-key ****",
            ),
            ("cli --api-key=hunter2 rm 9", "cli --api-key=**** rm 9"),
            ("cli --token 'a b c' rm", "cli --token **** rm"),
            ("cli --password \"x y\" rm", "cli --password **** rm"),
            (
                "API_KEY=abc123 runpodctl rm pod",
                "API_KEY=**** runpodctl rm pod",
            ),
            (
                "HF_TOKEN=hf_x MY_SECRET='q' cmd",
                "HF_TOKEN=**** MY_SECRET=**** cmd",
            ),
            (
                "curl -H 'Authorization: Bearer eyJhbGciOi.x.y' https://api",
                "curl -H 'Authorization: Bearer ****' https://api",
            ),
            ("sent Bearer abcdefghijkl", "sent Bearer ****"),
            ("key sk-abcdef0123456789 used", "key sk-**** used"),
            ("ghp_0123456789abcdefABCDEF012345", "ghp_****"),
            ("xoxb-1234-5678-abcdefghij", "xoxb-****"),
            ("id AKIAABCDEFGHIJKLMNOP", "id AKIA****"),
            (
                r#"{"api_key": "abc", "id": 7}"#,
                r#"{"api_key": "****", "id": 7}"#,
            ),
            (&format!("using key {key}"), "using key ****"),
        ];
        for (text, masked) in table {
            assert_eq!(mask_secrets(text), masked, "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "vastai destroy instance '4242' -y",
            "destroying instance 4242.",
            "runpodctl remove pod abc123xyz",
            "/home/u/.local/bin/vastai destroy instance 1",
            "instance 6f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b gone",
            "lambda terminate 0920582c7ff041399e34823a0be62549",
            "the basic plan; a token bucket",
            "",
        ] {
            assert_eq!(mask_secrets(text), text);
        }
    }
}
