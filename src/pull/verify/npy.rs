//! NumPy `.npy` arrays and `.npz` archives of them.
//!
//! `.npy` proves: the magic and a version numpy reads (1.0, 2.0, 3.0); a header that is the dict
//! literal numpy writes, with exactly 'descr', 'fortran_order' and 'shape'; a dtype whose item
//! size is known (plain or structured); and that the file ends exactly where the header plus
//! prod(shape) × itemsize says, so truncation and padding both fail. Only the header is read.
//! `.npz` proves: the zip is intact and CRC-checked (zip.rs), and every `.npy` member passes the
//! above as read through the archive (other members, which numpy returns as bytes, are only
//! CRC-checked). Cannot prove: the values (npy has no checksum). Object arrays (`|O`) are a
//! pickle after the header, which only Python can judge: they make the file `Unchecked`.
//! Hand-written: the check needs only the header (a Python dict literal) and the file's length;
//! the maintained readers (`ndarray-npy`, `npyz`) read the whole array into memory to say the
//! same, which a 40 GB embedding file cannot afford.
//!
//! Past 400 lines: one format's whole check; split, its steps would lose the order the
//! format defines.

use super::zip::Archive;
use super::{Checked, Problem, corrupt, counted, human_bytes, read_exact_or};
use std::fs::File;
use std::io::{self, BufReader, Read};

/// numpy itself refuses headers over 10 000 bytes by default; this leaves room for big
/// structured dtypes without letting a garbage length allocate gigabytes.
const MAX_HEADER: u64 = 1 << 20;

pub(super) fn check_npy(file: &mut File, len: u64) -> Checked {
    let header = Header::read(&mut BufReader::new(file))?;
    let data = len
        .checked_sub(header.end)
        .ok_or_else(|| corrupt("file shrank while being read"))?;
    header.check_data(data)?;
    Ok(format!("npy: {}", header.describe(data)))
}

pub(super) fn check_npz(file: &mut File, len: u64) -> Checked {
    let archive = Archive::open(file, len)?;
    let (mut arrays, mut bytes, mut objects) = (0u64, 0, false);
    for entry in &archive.entries {
        if !entry.name.ends_with(".npy") {
            archive.read(file, entry, |_| Ok(()))?;
            continue;
        }
        let member = archive.read(file, entry, |r| {
            let mut r = BufReader::new(r);
            let header = Header::read(&mut r)?;
            let data = io::copy(&mut r, &mut io::sink())?;
            header.check_data(data)?;
            Ok(data)
        });
        arrays += 1;
        match member {
            Ok(data) => bytes += data,
            // Keep going: a damaged member later on is worth more than "unchecked".
            Err(Problem::Unverifiable) => objects = true,
            Err(e) => return Err(e),
        }
    }
    if objects {
        return Err(Problem::Unverifiable);
    }
    Ok(format!(
        "npz: {}, {} of data",
        counted(arrays, "array", "arrays"),
        human_bytes(bytes)
    ))
}

struct Header {
    descr: String,
    shape: Vec<u64>,
    /// `None` for dtypes holding Python objects, whose size is not fixed.
    itemsize: Option<u64>,
    /// Offset of the first data byte.
    end: u64,
}

impl Header {
    fn read(r: &mut impl Read) -> Result<Header, Problem> {
        let mut pre = [0u8; 8];
        read_exact_or(r, &mut pre, "the npy magic (bytes 0..8)")?;
        if !pre.starts_with(b"\x93NUMPY") {
            return Err(corrupt("no \\x93NUMPY magic at byte 0"));
        }
        let (major, minor) = (pre[6], pre[7]);
        let mut width = [0u8; 4];
        let width = match (major, minor) {
            (1, 0) => &mut width[..2],
            (2 | 3, 0) => &mut width[..],
            _ => {
                return Err(corrupt(format!(
                    "unsupported npy version {major}.{minor} (byte 6)"
                )));
            }
        };
        read_exact_or(r, width, "the header length")?;
        let hlen = width
            .iter()
            .rev()
            .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
        let start = 8 + width.len() as u64;
        if hlen > MAX_HEADER {
            return Err(corrupt(format!(
                "header length {hlen} (byte 8) is over 1 MiB"
            )));
        }
        let mut text = vec![0; hlen as usize];
        read_exact_or(r, &mut text, "the header")?;
        let end = start + hlen;
        // Versions 1 and 2 are latin-1, where every byte is the char of the same number.
        let text = match major {
            3 => String::from_utf8(text).map_err(|_| corrupt("v3 header is not UTF-8"))?,
            _ => text.iter().map(|&b| char::from(b)).collect(),
        };
        let at = |r: String| corrupt(format!("header (bytes {start}..{end}): {r}"));
        let dict = match Lit::parse(&text).map_err(at)? {
            Lit::Dict(pairs) => pairs,
            _ => return Err(at("not a dict".into())),
        };
        let mut keys: Vec<&str> = dict.iter().filter_map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        if keys != ["descr", "fortran_order", "shape"] || dict.len() != 3 {
            return Err(at(
                "keys must be exactly 'descr', 'fortran_order', 'shape'".into()
            ));
        }
        let get = |key| {
            dict.iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v)
        };
        let descr = get("descr").ok_or_else(|| at("no descr".into()))?;
        if !matches!(get("fortran_order"), Some(Lit::Bool)) {
            return Err(at("'fortran_order' is not True or False".into()));
        }
        let shape = match get("shape") {
            Some(Lit::Tuple(dims)) => dims.iter().map(Lit::as_int).collect::<Option<Vec<_>>>(),
            _ => None,
        }
        .ok_or_else(|| at("'shape' is not a tuple of non-negative integers".into()))?;
        Ok(Header {
            itemsize: itemsize(descr).map_err(at)?,
            descr: match descr {
                Lit::Str(s) => s.clone(),
                _ => "structured".into(),
            },
            shape,
            end,
        })
    }

    fn check_data(&self, data: u64) -> Result<(), Problem> {
        let itemsize = self.itemsize.ok_or(Problem::Unverifiable)?;
        let need = self
            .shape
            .iter()
            .try_fold(itemsize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| corrupt(format!("shape {} overflows", self.shape_text())))?;
        if data != need {
            return Err(corrupt(format!(
                "{data} data bytes after the header (byte {}) but shape {} of '{}' needs {need}",
                self.end,
                self.shape_text(),
                self.descr
            )));
        }
        Ok(())
    }

    fn describe(&self, data: u64) -> String {
        format!(
            "{} {}, {} of data",
            self.descr,
            self.shape_text(),
            human_bytes(data)
        )
    }

    fn shape_text(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        }
    }
}

/// Bytes per element, or `None` when any part of the dtype is a Python object.
fn itemsize(descr: &Lit) -> Result<Option<u64>, String> {
    match descr {
        Lit::Str(s) => simple_itemsize(s),
        // Structured: [(name, dtype), (name, dtype, shape), ...]; numpy writes explicit
        // padding fields, so the sum of field sizes is the item size.
        Lit::List(fields) => {
            let mut total = Some(0u64);
            for field in fields {
                let Lit::Tuple(parts) = field else {
                    return Err("structured field is not a tuple".into());
                };
                let (dtype, count) = match &parts[..] {
                    [_, dtype] => (dtype, 1),
                    [_, dtype, Lit::Tuple(dims)] => {
                        let count = dims
                            .iter()
                            .try_fold(1u64, |acc, d| acc.checked_mul(d.as_int()?));
                        (dtype, count.ok_or("bad subarray shape")?)
                    }
                    _ => return Err("structured field is not (name, dtype[, shape])".into()),
                };
                total = match (total, itemsize(dtype)?) {
                    (Some(t), Some(size)) => Some(
                        size.checked_mul(count)
                            .and_then(|s| t.checked_add(s))
                            .ok_or("dtype too large")?,
                    ),
                    _ => None,
                };
            }
            Ok(total)
        }
        _ => Err("'descr' is neither a dtype string nor a field list".into()),
    }
}

/// `<f4`, `|u1`, `|b1`, `<c16`, `|S10`, `<U5` (4 bytes a character), `<M8[ns]`, `|V16`, `|O`.
fn simple_itemsize(descr: &str) -> Result<Option<u64>, String> {
    let body = descr.strip_prefix(['<', '>', '|', '=']).unwrap_or(descr);
    let mut chars = body.chars();
    let kind = chars.next().ok_or("empty dtype")?;
    let rest = chars.as_str();
    let digits = match kind {
        'M' | 'm' => rest
            .split_once('[')
            .map_or(rest, |(d, unit)| if unit.ends_with(']') { d } else { "?" }),
        _ => rest,
    };
    let number = digits
        .parse::<u64>()
        .map_err(|_| format!("unknown dtype '{descr}'"));
    Ok(match kind {
        'O' if matches!(digits, "" | "4" | "8") => None,
        'b' | 'i' | 'u' | 'f' | 'c' | 'V' | 'S' | 'M' | 'm' => Some(number?),
        'U' => Some(number?.checked_mul(4).ok_or("dtype too large")?),
        _ => return Err(format!("unknown dtype '{descr}'")),
    })
}

/// The subset of Python literals numpy's header uses.
enum Lit {
    Str(String),
    Int(u64),
    /// True or False; which one never matters for the size.
    Bool,
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

impl Lit {
    fn as_str(&self) -> Option<&str> {
        match self {
            Lit::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_int(&self) -> Option<u64> {
        match self {
            Lit::Int(n) => Some(*n),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<Lit, String> {
        let mut p = LitParser {
            chars: text.chars().collect(),
            at: 0,
            depth: 0,
        };
        let value = p.value()?;
        p.skip_space();
        match p.chars.get(p.at) {
            None => Ok(value),
            Some(c) => Err(format!("unexpected {c:?} after the dict at char {}", p.at)),
        }
    }
}

struct LitParser {
    chars: Vec<char>,
    at: usize,
    depth: u32,
}

impl LitParser {
    fn value(&mut self) -> Result<Lit, String> {
        self.skip_space();
        let c = *self.chars.get(self.at).ok_or("header ends early")?;
        if matches!(c, '(' | '[' | '{') {
            self.depth += 1;
            if self.depth > 32 {
                return Err("nested too deeply".into());
            }
            self.at += 1;
            let value = match c {
                '{' => Lit::Dict(
                    self.items('}', |p| {
                        let key = p.value()?;
                        p.skip_space();
                        if p.chars.get(p.at) != Some(&':') {
                            return Err(format!("expected ':' at char {}", p.at));
                        }
                        p.at += 1;
                        Ok((key, p.value()?))
                    })?
                    .0,
                ),
                '[' => Lit::List(self.items(']', Self::value)?.0),
                _ => match self.items(')', Self::value)? {
                    // `(5)` is just 5 in Python; only a comma makes a one-element tuple.
                    (mut one, false) if one.len() == 1 => one.remove(0),
                    (items, _) => Lit::Tuple(items),
                },
            };
            self.depth -= 1;
            return Ok(value);
        }
        if c == '\'' || c == '"' {
            return self.string(c);
        }
        let word: String = self.chars[self.at..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
            .collect();
        self.at += word.len();
        match word.as_str() {
            "True" | "False" => Ok(Lit::Bool),
            // Python 2 wrote long integers with an L suffix.
            w => w
                .strip_suffix('L')
                .unwrap_or(w)
                .parse()
                .map(Lit::Int)
                .map_err(|_| format!("unexpected {c:?} at char {}", self.at - word.len())),
        }
    }

    /// Comma-separated items up to `close`, and whether a comma came last.
    fn items<T>(
        &mut self,
        close: char,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<(Vec<T>, bool), String> {
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            self.skip_space();
            if self.chars.get(self.at) == Some(&close) {
                self.at += 1;
                return Ok((items, comma));
            }
            if !items.is_empty() && !comma {
                return Err(format!("expected ',' or {close:?} at char {}", self.at));
            }
            items.push(item(self)?);
            self.skip_space();
            comma = self.chars.get(self.at) == Some(&',');
            if comma {
                self.at += 1;
            }
        }
    }

    fn string(&mut self, quote: char) -> Result<Lit, String> {
        let start = self.at;
        self.at += 1;
        let mut s = String::new();
        loop {
            match self.chars.get(self.at) {
                None => return Err(format!("unterminated string at char {start}")),
                Some(&c) if c == quote => {
                    self.at += 1;
                    return Ok(Lit::Str(s));
                }
                Some('\\') => {
                    s.extend(self.chars.get(self.at + 1));
                    self.at += 2;
                }
                Some(&c) => {
                    s.push(c);
                    self.at += 1;
                }
            }
        }
    }

    fn skip_space(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }
}

#[cfg(test)]
#[path = "npy_tests.rs"]
pub(super) mod tests;
