//! Config errors always say where: the file, and for a bad value its line and column.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no fleet config found; looked at {}. Try `rigwatch demo` first, write one with \
         `rigwatch init`, or pass --config PATH (or set RIGWATCH_CONFIG)",
        list(.searched)
    )]
    NotFound { searched: Vec<PathBuf> },
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    At(Located),
}

/// A message pinned to `file:line:col`, the format editors and terminals make clickable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub path: PathBuf,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.col,
            self.message
        )
    }
}

impl Located {
    /// Turns a byte offset into 1-based line and column (columns count characters).
    pub fn at_offset(path: &std::path::Path, text: &str, offset: usize, message: String) -> Self {
        let offset = offset.min(text.len());
        let before = text.get(..offset).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
        Located {
            path: path.to_path_buf(),
            line,
            col,
            message,
        }
    }
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn offsets_become_one_based_line_and_column() {
        let text = "a = 1\nbb = 2\n";
        let at = Located::at_offset(Path::new("f.toml"), text, 9, "bad".into());
        assert_eq!((at.line, at.col), (2, 4));
        assert_eq!(at.to_string(), "f.toml:2:4: bad");
    }

    #[test]
    fn offset_past_the_end_is_clamped() {
        let at = Located::at_offset(Path::new("f"), "x\n", 99, "m".into());
        assert_eq!((at.line, at.col), (2, 1));
    }
}
