//! Proves that a file pulled from a box loads, without Python, so the teardown guard can trust
//! the local copy before the box (and the only other copy) is destroyed.
//!
//! Each format gets the strictest check that can be made by reading the file once, front to
//! back, with bounded memory: the structure must be complete and self-consistent, and wherever
//! the format records a checksum or implies a size, that is checked too. The submodules say what
//! their check proves and what it cannot. A file whose format has no built-in check, or whose
//! contents cannot be judged without running Python, is `Unchecked`: existing is not loading.

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Safetensors,
    Torch,
    Npy,
    Npz,
    Json,
    Jsonl,
    Tar,
    Gzip,
    Zip,
    Png,
    Jpeg,
    Pdf,
    Hdf5,
    Gguf,
    Parquet,
    TfRecord,
    Yaml,
    Toml,
    Csv,
    Tsv,
    Text,
}

impl Format {
    /// By name only, case-insensitively. `.bin` is deliberately absent: it names torch
    /// checkpoints (`pytorch_model.bin`) but also raw tensors, GGML and anything else, so only
    /// its content can decide (`sniff`). `.ckpt` is Lightning's torch.save zip (TensorFlow's
    /// checkpoints end `.index`/`.data-*`). TensorBoard names its event files
    /// `events.out.tfevents.<time>.<host>`, so the prefix decides, not the extension.
    pub fn detect(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        if name.starts_with("events.out.tfevents.") {
            return Some(Format::TfRecord);
        }
        let (stem, ext) = name.rsplit_once('.')?;
        if stem.is_empty() {
            return None;
        }
        Some(match ext {
            "safetensors" => Format::Safetensors,
            "pt" | "pth" | "ckpt" => Format::Torch,
            "npy" => Format::Npy,
            "npz" => Format::Npz,
            "json" => Format::Json,
            "jsonl" | "ndjson" => Format::Jsonl,
            "tar" | "tgz" => Format::Tar,
            "gz" if stem.ends_with(".tar") => Format::Tar,
            "gz" => Format::Gzip,
            "zip" => Format::Zip,
            "png" => Format::Png,
            "jpg" | "jpeg" => Format::Jpeg,
            "pdf" => Format::Pdf,
            "h5" | "hdf5" | "he5" => Format::Hdf5,
            "gguf" => Format::Gguf,
            "parquet" => Format::Parquet,
            "tfrecord" | "tfrecords" => Format::TfRecord,
            "yaml" | "yml" => Format::Yaml,
            "toml" => Format::Toml,
            "csv" => Format::Csv,
            "tsv" => Format::Tsv,
            "txt" | "log" | "out" | "err" | "md" => Format::Text,
            _ => return None,
        })
    }

    /// What the first bytes say, whatever the name: a torch.save zip is often called
    /// `pytorch_model.bin`, and a file named `.json` may hold something else. Only formats whose
    /// opening bytes are unmistakable are named here; a zip is taken for a torch checkpoint only
    /// when its name is torch's own or says nothing (`.bin`, no extension); otherwise a zip is
    /// checked as the zip kind its name says, or as a plain zip.
    pub fn sniff(head: &[u8], name: &str, len: u64) -> Option<Format> {
        let lower = name.to_ascii_lowercase();
        let ext = lower
            .rsplit_once('.')
            .map(|(_, e)| e.to_string())
            .unwrap_or_default();
        if head.starts_with(b"PK\x03\x04") {
            return Some(match ext.as_str() {
                "npz" => Format::Npz,
                "pt" | "pth" | "ckpt" | "bin" | "" => Format::Torch,
                _ => Format::Zip,
            });
        }
        const MAGIC: [(&[u8], Format); 6] = [
            (b"\x89PNG\r\n\x1a\n", Format::Png),
            (b"\xff\xd8\xff", Format::Jpeg),
            (b"%PDF-", Format::Pdf),
            (hdf5::SIGNATURE, Format::Hdf5),
            (b"GGUF", Format::Gguf),
            (b"PAR1", Format::Parquet),
        ];
        if let Some((_, format)) = MAGIC.iter().find(|(m, _)| head.starts_with(m)) {
            return Some(*format);
        }
        if head.starts_with(b"\x1f\x8b") {
            let tar = lower.ends_with(".tar.gz") || ext == "tgz" || ext == "tar";
            return Some(if tar { Format::Tar } else { Format::Gzip });
        }
        if head.starts_with(b"\x93NUMPY") {
            return Some(Format::Npy);
        }
        if head.starts_with(torch::LEGACY_MAGIC) {
            return Some(Format::Torch);
        }
        if head.len() > 8 && head[8] == b'{' {
            let n = u64::from_le_bytes(head[..8].try_into().unwrap_or([0xff; 8]));
            if n >= 2 && n.checked_add(8).is_some_and(|end| end <= len) {
                return Some(Format::Safetensors);
            }
        }
        if head.get(257..262) == Some(b"ustar") {
            return Some(Format::Tar);
        }
        None
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::Torch => "torch",
            Format::Npy => "npy",
            Format::Npz => "npz",
            Format::Json => "json",
            Format::Jsonl => "jsonl",
            Format::Tar => "tar",
            Format::Gzip => "gzip",
            Format::Zip => "zip",
            Format::Png => "png",
            Format::Jpeg => "jpeg",
            Format::Pdf => "pdf",
            Format::Hdf5 => "hdf5",
            Format::Gguf => "gguf",
            Format::Parquet => "parquet",
            Format::TfRecord => "tfrecord",
            Format::Yaml => "yaml",
            Format::Toml => "toml",
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Text => "text",
        }
    }
}

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
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    verify_open_named(&mut file, meta.len(), named)
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
    let checked = match bytes {
        Some(bytes) if read_through(format) => {
            check_read_through(format, &mut std::io::Cursor::new(bytes), len)
        }
        _ => {
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

/// Whether a format's check reads a file from its start to its end and nothing else.
fn read_through(format: Format) -> bool {
    matches!(
        format,
        Format::Json
            | Format::Jsonl
            | Format::Yaml
            | Format::Toml
            | Format::Csv
            | Format::Tsv
            | Format::Text
    )
}

/// The check of a format `read_through` says reads a file through (anything else: as text).
fn check_read_through(format: Format, r: &mut (impl Read + std::io::Seek), len: u64) -> Checked {
    match format {
        Format::Json => json::check_json(r, len),
        Format::Jsonl => json::check_jsonl(r),
        Format::Yaml => text::check_yaml(r, len),
        Format::Toml => text::check_toml(r, len),
        Format::Csv => text::check_csv(r, len, b','),
        Format::Tsv => text::check_csv(r, len, b'\t'),
        _ => text::check_text(r, len),
    }
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
        Format::Json
        | Format::Jsonl
        | Format::Yaml
        | Format::Toml
        | Format::Csv
        | Format::Tsv
        | Format::Text => check_read_through(format, file, len),
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
