//! The formats a pulled file is checked as: told by its name, or by its first bytes.

use std::path::Path;

use super::{hdf5, torch};

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
