//! `tmux ls` and `pgrep -af`: is the run's session or process still there.
//!
//! "No tmux server" is an answer, not a failure: it means no sessions, which is exactly what a
//! run that died with its session looks like.

use super::ParseError;
use super::text::{lines, quoted};
use chrono::NaiveDateTime;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TmuxSession {
    pub name: String,
    pub windows: u32,
    pub attached: bool,
    /// The box's local time, as tmux printed it; `None` if tmux printed it in a shape (locale)
    /// this does not read.
    pub created: Option<NaiveDateTime>,
}

/// One `pgrep -af` match: pid and full command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessLine {
    pub pid: u32,
    pub cmdline: String,
}

/// What tmux says when there is no server, hence no sessions (exit 1).
const NO_SERVER: &[&str] = &[
    "no server running on ",
    "error connecting to ",
    "no sessions",
];

/// Parses `train: 1 windows (created Sun Nov 22 14:41:24 2026) (attached)` lines; no-server
/// messages give an empty list.
pub fn parse_tmux_ls(text: &str) -> Result<Vec<TmuxSession>, ParseError> {
    const PROBE: &str = "tmux ls";
    let rows = lines(PROBE, text)?;
    if rows
        .iter()
        .any(|(_, r)| NO_SERVER.iter().any(|m| r.starts_with(m)))
    {
        return Ok(Vec::new());
    }
    rows.into_iter()
        .map(|(line, row)| {
            session(row).ok_or_else(|| {
                let why = format!(
                    "expected `<name>: <n> windows (created ...)`, got {}",
                    quoted(row)
                );
                ParseError::new(PROBE, line, why)
            })
        })
        .collect()
}

/// tmux forbids `:` in session names, so the first `: ` ends the name.
fn session(row: &str) -> Option<TmuxSession> {
    let (name, rest) = row.split_once(": ")?;
    let mut words = rest.split_whitespace();
    let windows = words.next()?.parse().ok()?;
    if !words.next()?.starts_with("window") {
        return None;
    }
    let created = rest
        .split_once("(created ")
        .and_then(|(_, tail)| tail.split_once(')'))
        .and_then(|(date, _)| created(date));
    Some(TmuxSession {
        name: name.to_owned(),
        windows,
        attached: rest.contains("(attached)"),
        created,
    })
}

/// tmux prints `ctime`'s shape, with a space-padded day (`Nov  2`).
fn created(date: &str) -> Option<NaiveDateTime> {
    let one_spaced = date.split_whitespace().collect::<Vec<_>>().join(" ");
    NaiveDateTime::parse_from_str(&one_spaced, "%a %b %d %H:%M:%S %Y").ok()
}

/// Parses `pgrep -af` output, `<pid> <command line>` per line; no output (exit 1) is no match.
pub fn parse_pgrep(text: &str) -> Result<Vec<ProcessLine>, ParseError> {
    const PROBE: &str = "pgrep -af";
    lines(PROBE, text)?
        .into_iter()
        .map(|(line, row)| {
            let (pid, cmdline) = row.split_once(char::is_whitespace).unwrap_or((row, ""));
            let pid = pid.parse().map_err(|_| {
                let why = format!("expected `<pid> <command>`, got {}", quoted(row));
                ParseError::new(PROBE, line, why)
            })?;
            // A run started with `--api-key …` shows in every view that names the process.
            Ok(ProcessLine {
                pid,
                cmdline: crate::sanitize::mask_secrets(cmdline.trim()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attached_and_padded_day_handwritten() {
        let text = "a: 3 windows (created Mon Nov  2 04:05:06 2026) (attached)\n\
                    b: 1 windows (created Mon Nov  2 04:05:06 2026) [80x24]\n";
        let s = parse_tmux_ls(text).expect("parses");
        assert_eq!(
            (s[0].name.as_str(), s[0].windows, s[0].attached),
            ("a", 3, true)
        );
        assert!(!s[1].attached);
        let when = s[0].created.map(|c| c.to_string());
        assert_eq!(when.as_deref(), Some("2026-11-02 04:05:06"));
    }

    #[test]
    fn no_server_wording_of_older_tmux_handwritten() {
        let s = parse_tmux_ls("no server running on /tmp/tmux-1000/default\n");
        assert_eq!(s, Ok(Vec::new()));
    }

    #[test]
    fn unknown_date_shape_is_none_and_junk_is_an_error_handwritten() {
        let s = parse_tmux_ls("x: 1 windows (created 2026-11-02)").expect("parses");
        assert_eq!(s[0].created, None);
        assert_eq!(
            parse_tmux_ls("ok: 1 windows\nbad").map_err(|e| e.line),
            Err(2)
        );
        assert_eq!(parse_pgrep("12\nabc def").map_err(|e| e.line), Err(2));
    }
}
