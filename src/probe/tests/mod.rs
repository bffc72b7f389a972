//! Parser tests against the verbatim captures in tests/fixtures/h100 and h200, plus fuzzing.
//!
//! Each capture is `$ <command>`, the output, `[exit N]`; the helpers split that apart so a
//! test parses exactly what the box printed and can take the field list from the command line
//! it was captured with.

mod captures_gpu;
mod captures_h200;
mod captures_host;
mod fuzz;
mod kernel;

/// One capture file, split into its command, body and exit status.
pub(super) struct Capture {
    pub command: &'static str,
    pub body: String,
    pub exit: i32,
}

macro_rules! capture {
    ($name:literal) => {
        $crate::probe::tests::capture!("h100", $name)
    };
    ($dir:literal, $name:literal) => {
        $crate::probe::tests::split(include_str!(concat!(
            "../../../tests/fixtures/",
            $dir,
            "/",
            $name,
            ".txt"
        )))
    };
}
pub(super) use capture;

pub(super) fn split(raw: &'static str) -> Capture {
    let mut lines: Vec<&'static str> = raw.lines().collect();
    let last = lines.pop().unwrap_or_default();
    let first = if lines.is_empty() {
        ""
    } else {
        lines.remove(0)
    };
    let exit = last
        .strip_prefix("[exit ")
        .and_then(|s| s.strip_suffix(']'))
        .and_then(|s| s.parse().ok())
        .expect("capture ends with [exit N]");
    let command = first.strip_prefix("$ ").expect("capture starts with `$ `");
    let mut body = lines.join("\n");
    body.push('\n');
    Capture {
        command,
        body,
        exit,
    }
}

/// The field list the capture's command asked for (`--query-gpu=a,b,c` → `[a, b, c]`).
pub(super) fn query_fields(command: &'static str) -> Vec<&'static str> {
    let list = command
        .split_whitespace()
        .find_map(|w| {
            w.strip_prefix("--query-gpu=")
                .or(w.strip_prefix("--query-compute-apps="))
        })
        .expect("command has a --query-* list");
    list.split(',').collect()
}
