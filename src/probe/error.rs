//! Where a parse went wrong: which probe, which line of its output, and why.
//!
//! The parsers are pure and never see the host; the poller that knows the host wraps the error
//! with [`ParseError::on_host`], so every message a user reads says host, probe and line.

use serde::Serialize;

/// A parser's refusal, pinned to a 1-based line of the probe's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{probe} line {line}: {reason}")]
pub struct ParseError {
    /// The command or file the text came from, as a user would type it (`df -PB1`).
    pub probe: &'static str,
    /// 1-based; for "the output as a whole" errors (missing line, too many lines) the line where
    /// the problem was noticed.
    pub line: usize,
    pub reason: String,
}

/// A [`ParseError`] with the host it came from, for messages shown outside the host's own view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{host}: {error}")]
pub struct HostParseError {
    pub host: String,
    pub error: ParseError,
}

impl ParseError {
    /// The reason often quotes what the box printed: a key or token in it is masked here, once
    /// for every parser.
    pub fn new(probe: &'static str, line: usize, reason: impl Into<String>) -> Self {
        ParseError {
            probe,
            line,
            reason: crate::sanitize::mask_secrets(&reason.into()),
        }
    }

    pub fn on_host(self, host: &str) -> HostParseError {
        HostParseError {
            host: host.to_owned(),
            error: self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_probe_line_and_host() {
        let e = ParseError::new("nvidia-smi --query-gpu", 3, "expected 13 fields, got 12");
        assert_eq!(
            e.to_string(),
            "nvidia-smi --query-gpu line 3: expected 13 fields, got 12"
        );
        assert_eq!(
            e.on_host("gpu-a").to_string(),
            "gpu-a: nvidia-smi --query-gpu line 3: expected 13 fields, got 12"
        );
    }
}
