//! Proves that a file pulled from a box loads, without Python, so the teardown guard can trust
//! the local copy before the box (and the only other copy) is destroyed.
//!
//! Each format gets the strictest check that can be made by reading the file once, front to
//! back, with bounded memory: the structure must be complete and self-consistent, and wherever
//! the format records a checksum or implies a size, that is checked too. The submodules say what
//! their check proves and what it cannot. A file whose format has no built-in check, or whose
//! contents cannot be judged without running Python, is `Unchecked`: existing is not loading.

mod format;
mod gguf;
mod gzip;
mod hdf5;
mod jpeg;
mod json;
mod npy;
mod parquet;
mod pdf;
mod pickle;
mod png;
mod safetensors;
mod tar;
mod text;
mod tfrecord;
mod torch;
mod zip;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

pub use format::Format;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Loads { format: Format, detail: String },
    Fails { format: Format, reason: String },
    Unchecked,
}

/// `Err` only when the file cannot be read at all (missing, not a regular file, permission,
/// an I/O error from the disk); anything wrong with its contents is a `Fails`.
pub fn verify_file(path: &Path) -> io::Result<Verdict> {
    verify_file_named(path, path)
}

/// As `verify_file`, the format judged by `named`'s file name rather than `path`'s: a copy
/// checked where it waits, under a name of rigwatch's, before it is given its own.
pub fn verify_file_named(path: &Path, named: &Path) -> io::Result<Verdict> {
    let (mut file, len) = super::local::open_regular(path)?;
    verify_open_named(&mut file, len, named)
}

/// As `verify_file_named`, for a regular file of `len` bytes already open for reading (one
/// with no name yet: a copy written where it will be linked once proven), read from its start.
pub fn verify_open_named(file: &mut File, len: u64, named: &Path) -> io::Result<Verdict> {
    verify_source(file, None, len, named)
}

/// As `verify_open_named`, for a copy just written from `bytes`: a format whose check reads a
/// file from its start to its end (JSON, JSON Lines, YAML, TOML, CSV, text) is checked on those
/// bytes, not read back (on a 100 000-file pull of small results, reading each back took four
/// reads and two seeks of the page cache's copy of the same bytes); the rest through `file`.
pub fn verify_written_named(file: &mut File, bytes: &[u8], named: &Path) -> io::Result<Verdict> {
    verify_source(file, Some(bytes), bytes.len() as u64, named)
}

fn verify_source(
    file: &mut File,
    bytes: Option<&[u8]>,
    len: u64,
    named: &Path,
) -> io::Result<Verdict> {
    let mut head = [0u8; 512];
    let got = match bytes {
        Some(bytes) => {
            let n = bytes.len().min(head.len());
            head[..n].copy_from_slice(&bytes[..n]);
            n
        }
        None => {
            std::io::Seek::seek(file, std::io::SeekFrom::Start(0))?;
            let got = read_full(file, &mut head)?;
            std::io::Seek::seek(file, std::io::SeekFrom::Start(0))?;
            got
        }
    };
    let name = named
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Content first; where the name says something else, the verdict says so.
    let by_name = Format::detect(named);
    let by_content = Format::sniff(&head[..got], &name, len);
    // A zip is only guessed to be a torch checkpoint; a name that says which zip kind it is
    // (or another format outright) keeps its own check, with what the bytes are said.
    let zip = head.starts_with(b"PK\x03\x04");
    let (format, note) = match (by_content, by_name) {
        (Some(c), Some(n)) if c != n && zip => (n, " (it holds a zip)".to_string()),
        (Some(c), Some(n)) if c != n => (
            c,
            format!(" (named like {}, but it holds {})", n.name(), c.name()),
        ),
        (Some(c), _) => (c, String::new()),
        (None, Some(n)) => (n, String::new()),
        (None, None) => return Ok(Verdict::Unchecked),
    };
    let in_memory = bytes.and_then(|b| check_read_through(format, &mut io::Cursor::new(b), len));
    let checked = match in_memory {
        Some(checked) => checked,
        None => {
            if bytes.is_some() {
                std::io::Seek::seek(file, std::io::SeekFrom::Start(0))?;
            }
            check_file(format, file, len)
        }
    };
    match checked {
        Ok(detail) => Ok(Verdict::Loads {
            format,
            detail: format!("{detail}{note}"),
        }),
        Err(Problem::Corrupt(reason)) => Ok(Verdict::Fails {
            format,
            reason: format!("{reason}{note}"),
        }),
        Err(Problem::Unverifiable) => Ok(Verdict::Unchecked),
        Err(Problem::Io(e)) => Err(e),
    }
}

/// The check of a format whose check reads a file through rather than seeking about it (CSV
/// only looks at its last byte first), so that a copy's bytes in memory serve it as well as the
/// file; None for the others.
fn check_read_through(
    format: Format,
    r: &mut (impl Read + std::io::Seek),
    len: u64,
) -> Option<Checked> {
    Some(match format {
        Format::Json => json::check_json(r, len),
        Format::Jsonl => json::check_jsonl(r),
        Format::Yaml => text::check_yaml(r, len),
        Format::Toml => text::check_toml(r, len),
        Format::Csv => text::check_csv(r, len, b','),
        Format::Tsv => text::check_csv(r, len, b'\t'),
        Format::Text => text::check_text(r, len),
        _ => return None,
    })
}

fn check_file(format: Format, file: &mut File, len: u64) -> Checked {
    match format {
        Format::Safetensors => safetensors::check(file, len),
        Format::Torch => torch::check(file, len),
        Format::Npy => npy::check_npy(file, len),
        Format::Npz => npy::check_npz(file, len),
        Format::Tar => tar::check(file, len),
        Format::Gzip => gzip::check(file, len),
        Format::Zip => zip::check(file, len),
        Format::Png => png::check(file, len),
        Format::Jpeg => jpeg::check(file, len),
        Format::Pdf => pdf::check(file, len),
        Format::Hdf5 => hdf5::check(file, len),
        Format::Gguf => gguf::check(file, len),
        Format::Parquet => parquet::check(file, len),
        Format::TfRecord => tfrecord::check(file, len),
        // Every other format's check reads the file through.
        _ => check_read_through(format, file, len).unwrap_or(Err(Problem::Unverifiable)),
    }
}

/// Why a check stopped. Kept apart from `io::Error` so that a truncated or garbled file (a
/// verdict) is never confused with a disk that cannot be read (an error).
#[derive(Debug)]
enum Problem {
    Corrupt(String),
    /// Well-formed as far as can be seen, but loading it needs Python (pickled objects, the
    /// legacy torch format): the caller must run the user's verify command.
    Unverifiable,
    Io(io::Error),
}

impl Problem {
    fn context(self, what: &str) -> Problem {
        match self {
            Problem::Corrupt(reason) => Problem::Corrupt(format!("{what}: {reason}")),
            other => other,
        }
    }
}

/// Decoders (inflate, gzip) and short reads report damaged input through these kinds; a disk
/// failure arrives with any other kind and stays an I/O error.
impl From<io::Error> for Problem {
    fn from(e: io::Error) -> Problem {
        match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::InvalidData
            | io::ErrorKind::InvalidInput => Problem::Corrupt(e.to_string()),
            _ => Problem::Io(e),
        }
    }
}

fn corrupt(reason: impl Into<String>) -> Problem {
    Problem::Corrupt(reason.into())
}

type Checked = Result<String, Problem>;

/// Like `read_exact`, but says what was cut short instead of "failed to fill whole buffer".
fn read_exact_or(r: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), Problem> {
    match r.read_exact(buf) {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Err(corrupt(format!("file ends inside {what}")))
        }
        other => Ok(other?),
    }
}

/// Reads until `buf` is full or the input ends; returns how much was read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    match n.into() {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests;
