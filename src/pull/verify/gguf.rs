//! GGUF (llama.cpp's model files).
//!
//! Proves, as llama.cpp's loader checks: the header (magic, version 2 or 3, counts) and every
//! metadata value parse to their ends; every tensor's name, shape and type are sane; its offset
//! is aligned; and its data, sized from its type's block size, lies within the file, so a copy
//! cut short fails. Cannot prove: the weights are the ones written (GGUF has no checksum).
//! A tensor type this table does not know leaves the file unproven rather than failed.
//! Hand-written: no maintained pure-Rust GGUF reader exists outside whole inference frameworks.

use super::{Checked, Problem, corrupt, counted, human_bytes, read_exact_or};
use std::fs::File;
use std::io::BufReader;

const MAX_DIMS: u32 = 4;
/// Keys, names and string values are short; a longer one is damage.
const MAX_STRING: u64 = 1 << 24;

/// (block elements, block bytes) of each ggml type, from gguf-py's GGML_QUANT_SIZES.
fn type_size(t: u32) -> Option<(u64, u64)> {
    Some(match t {
        0 => (1, 4),
        1 => (1, 2),
        2 => (32, 18),
        3 => (32, 20),
        6 => (32, 22),
        7 => (32, 24),
        8 => (32, 34),
        9 => (32, 40),
        10 => (256, 84),
        11 => (256, 110),
        12 => (256, 144),
        13 => (256, 176),
        14 => (256, 210),
        15 => (256, 292),
        16 => (256, 66),
        17 => (256, 74),
        18 => (256, 98),
        19 => (256, 50),
        20 => (32, 18),
        21 => (256, 110),
        22 => (256, 82),
        23 => (256, 136),
        24 => (1, 1),
        25 | 30 => (1, 2),
        26 => (1, 4),
        27 | 28 => (1, 8),
        29 => (256, 56),
        34 => (256, 54),
        35 => (256, 66),
        39 => (32, 17),
        40 => (64, 36),
        41 => (128, 18),
        _ => return None,
    })
}

struct Header<'a> {
    r: BufReader<&'a mut File>,
    at: u64,
    len: u64,
}

impl Header<'_> {
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, Problem> {
        if n > self.len.saturating_sub(self.at) {
            return Err(corrupt(format!(
                "{what} at byte {} claims {n} bytes, past the end of the file",
                self.at
            )));
        }
        let mut buf = vec![0u8; n as usize];
        read_exact_or(&mut self.r, &mut buf, what)?;
        self.at += n;
        Ok(buf)
    }
    fn u32(&mut self, what: &str) -> Result<u32, Problem> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or_default()))
    }
    fn u64(&mut self, what: &str) -> Result<u64, Problem> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }
    fn string(&mut self, what: &str) -> Result<String, Problem> {
        let n = self.u64(what)?;
        if n > MAX_STRING {
            return Err(corrupt(format!("{what} claims a {n}-byte string")));
        }
        String::from_utf8(self.bytes(n, what)?).map_err(|_| corrupt(format!("{what} is not UTF-8")))
    }
    /// Skips one metadata value of type `t`; returns it when it is a u32 (for the alignment).
    fn value(&mut self, t: u32, key: &str, depth: u8) -> Result<Option<u64>, Problem> {
        let fixed = match t {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => {
                self.string(key)?;
                return Ok(None);
            }
            9 if depth == 0 => {
                let inner = self.u32(key)?;
                let count = self.u64(key)?;
                if count > self.len.saturating_sub(self.at) {
                    return Err(corrupt(format!("'{key}' claims {count} items")));
                }
                for _ in 0..count {
                    self.value(inner, key, depth + 1)?;
                }
                return Ok(None);
            }
            t => return Err(corrupt(format!("'{key}' has unknown value type {t}"))),
        };
        let b = self.bytes(fixed, key)?;
        Ok((t == 4).then(|| u64::from(u32::from_le_bytes(b.try_into().unwrap_or_default()))))
    }
}

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut h = Header {
        r: BufReader::with_capacity(1 << 16, file),
        at: 0,
        len,
    };
    if h.bytes(4, "the magic")? != b"GGUF" {
        return Err(corrupt("does not start with GGUF"));
    }
    let version = h.u32("the version")?;
    if !matches!(version, 2 | 3) {
        return Err(corrupt(format!("version {version} is not 2 or 3")));
    }
    let tensors = h.u64("the tensor count")?;
    let kvs = h.u64("the metadata count")?;
    let mut alignment = 32u64;
    for _ in 0..kvs {
        let key = h.string("a metadata key")?;
        let t = h.u32(&key)?;
        let value = h.value(t, &key, 0)?;
        if key == "general.alignment" {
            alignment = value.unwrap_or(0);
        }
    }
    if alignment == 0 || !alignment.is_power_of_two() {
        return Err(corrupt(format!(
            "general.alignment {alignment} is not a power of two"
        )));
    }
    let mut spans = Vec::new();
    let mut unknown = false;
    for _ in 0..tensors {
        let name = h.string("a tensor name")?;
        let dims = h.u32(&name)?;
        if dims == 0 || dims > MAX_DIMS {
            return Err(corrupt(format!("tensor '{name}' has {dims} dimensions")));
        }
        let mut elements = 1u64;
        for _ in 0..dims {
            elements = elements.saturating_mul(h.u64(&name)?);
        }
        let t = h.u32(&name)?;
        let offset = h.u64(&name)?;
        if offset % alignment != 0 {
            return Err(corrupt(format!(
                "tensor '{name}' at offset {offset} is not {alignment}-byte aligned"
            )));
        }
        match type_size(t) {
            Some((block, bytes)) if elements % block == 0 => {
                spans.push((offset, (elements / block).saturating_mul(bytes), name));
            }
            Some((block, _)) => {
                return Err(corrupt(format!(
                    "tensor '{name}' has {elements} elements, not whole blocks of {block}"
                )));
            }
            None => unknown = true,
        }
    }
    let data = h.at.div_ceil(alignment) * alignment;
    for (offset, size, name) in &spans {
        let end = data.saturating_add(*offset).saturating_add(*size);
        if end > len {
            return Err(corrupt(format!(
                "tensor '{name}' ends at byte {end}, past the end of the {len}-byte file"
            )));
        }
    }
    if unknown {
        return Err(Problem::Unverifiable);
    }
    Ok(format!(
        "gguf v{version}: {}, {}, {}",
        counted(tensors, "tensor", "tensors"),
        counted(kvs, "metadata key", "metadata keys"),
        human_bytes(len)
    ))
}
