//! JSON and JSON Lines, streamed (a JSON file of up to 4 MiB is read whole and parsed from
//! memory).
//!
//! JSON proves: the whole file is exactly one JSON value (trailing whitespace only) in valid
//! UTF-8, as Python's `json.load` demands. JSONL proves the same of every non-blank line, and
//! that there is at least one record: an empty file is the usual leftover of a copy that failed.
//! Cannot prove: the content is complete. A JSONL file cut exactly at a line break is a shorter
//! valid file; only a cut inside a line (the common case) is caught.
//!
//! Two gaps between serde_json and Python are bridged. serde_json skips over strings without
//! checking their UTF-8 when the value is ignored, so UTF-8 is checked separately (Python refuses
//! such a file). Python writes and reads `NaN`, `Infinity` and `-Infinity` (`allow_nan` defaults
//! to true, so metrics files hold them); outside strings they are rewritten to numbers of the
//! same length before serde_json sees them, so line:column in reasons stay true. Left as is:
//! nesting deeper than serde_json's 128 levels fails (Python allows about 1000).

use super::{Checked, Problem, corrupt, counted, human_bytes};
use serde::de::IgnoredAny;
use std::io::{self, BufRead, BufReader, Read};

/// Up to this size a JSON file is read whole and parsed from memory. serde_json reads a stream
/// a byte at a time through its reader: for a 100 000-file pull of ~40-byte results that was
/// 6 % of this process's CPU; a slice it parses at once.
const WHOLE: u64 = 4 << 20;

pub(super) fn check_json(file: impl Read, len: u64) -> Checked {
    check_json_within(file, len, WHOLE)
}

/// `check_json`, reading the file whole when it is at most `whole` bytes (it may have grown
/// since `len` was taken: then what was read is streamed on, followed by the rest).
fn check_json_within(mut file: impl Read, len: u64, whole: u64) -> Checked {
    if len > whole {
        return streamed(file, len);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    (&mut file).take(whole + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > whole {
        return streamed(io::Cursor::new(bytes).chain(file), len);
    }
    // As `streamed`: the parser's error first, then the first invalid UTF-8 it skipped over.
    let bad_at = std::str::from_utf8(&bytes).err().map(|e| e.valid_up_to());
    Words::default().rewrite(&mut bytes, true);
    match (serde_json::from_slice::<IgnoredAny>(&bytes), bad_at) {
        (Err(e), _) => Err(corrupt(located(e.line(), &e))),
        (Ok(_), Some(at)) => Err(corrupt(format!("invalid UTF-8 at byte {at}"))),
        (Ok(_), None) => Ok(format!("json: {} parsed", human_bytes(len))),
    }
}

fn streamed(file: impl Read, len: u64) -> Checked {
    let mut utf8 = Utf8Check {
        inner: file,
        carry: Vec::new(),
        checked: 0,
        bad_at: None,
    };
    let python = PythonFloats {
        inner: &mut utf8,
        words: Words::default(),
        pending: Vec::new(),
        ready: 0,
    };
    let parsed =
        serde_json::from_reader::<_, IgnoredAny>(BufReader::with_capacity(1 << 16, python));
    match parsed {
        Err(e) if e.is_io() => Err(Problem::Io(e.into())),
        Err(e) => Err(corrupt(located(e.line(), &e))),
        Ok(_) => match utf8.bad_at {
            Some(at) => Err(corrupt(format!("invalid UTF-8 at byte {at}"))),
            None => Ok(format!("json: {} parsed", human_bytes(len))),
        },
    }
}

pub(super) fn check_jsonl(file: impl Read) -> Checked {
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let (mut number, mut records) = (0usize, 0u64);
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        let text = std::str::from_utf8(&line).map_err(|e| {
            corrupt(format!(
                "line {number}, column {}: invalid UTF-8",
                e.valid_up_to() + 1
            ))
        })?;
        if text.trim().is_empty() {
            continue;
        }
        Words::default().rewrite(&mut line, true);
        serde_json::from_slice::<IgnoredAny>(&line).map_err(|e| corrupt(located(number, &e)))?;
        records += 1;
    }
    if records == 0 {
        return Err(corrupt("no records: the file is empty or blank"));
    }
    Ok(format!("jsonl: {}", counted(records, "record", "records")))
}

/// `line N, column C: message`, without serde_json's own " at line N column C" suffix.
fn located(line: usize, e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    format!("line {line}, column {}: {message}", e.column())
}

const WORDS: [(&[u8], &[u8]); 2] = [(b"NaN", b"0.0"), (b"Infinity", b"1.000000")];

/// Where a JSON text stands between reads: inside a string, Python's words are just text.
#[derive(Default)]
struct Words {
    in_string: bool,
    escaped: bool,
}

impl Words {
    /// Rewrites Python's words in place and returns how many leading bytes are final; the rest
    /// may be the start of a word and must be offered again together with what follows.
    fn rewrite(&mut self, buf: &mut [u8], at_end: bool) -> usize {
        let mut i = 0;
        while i < buf.len() {
            let b = buf[i];
            if self.in_string {
                match b {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
            } else if b == b'"' {
                self.in_string = true;
            } else if let Some((word, number)) = WORDS.iter().find(|(w, _)| w[0] == b) {
                let n = word.len().min(buf.len() - i);
                if buf[i..i + n] == word[..n] {
                    if n == word.len() {
                        buf[i..i + n].copy_from_slice(number);
                        i += n;
                        continue;
                    }
                    if !at_end {
                        return i;
                    }
                }
            }
            i += 1;
        }
        buf.len()
    }
}

/// Feeds `Words::rewrite`, holding back a word cut by the end of a read until it is complete.
struct PythonFloats<R> {
    inner: R,
    words: Words,
    /// Rewritten bytes not yet handed out (`..ready`), then bytes that may start a word.
    pending: Vec<u8>,
    ready: usize,
}

impl<R: Read> Read for PythonFloats<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.ready == 0 {
            let mut chunk = [0u8; 8192];
            let n = self.inner.read(&mut chunk)?;
            self.pending.extend_from_slice(&chunk[..n]);
            self.ready = self.words.rewrite(&mut self.pending, n == 0);
            if n == 0 {
                break;
            }
        }
        let n = self.ready.min(out.len());
        out[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        self.ready -= n;
        Ok(n)
    }
}

/// Passes bytes through unchanged, noting the offset of the first invalid UTF-8 sequence.
/// It never fails the read itself: the parser's error, if any, is the better report.
struct Utf8Check<R> {
    inner: R,
    /// The start of a sequence split across two reads.
    carry: Vec<u8>,
    checked: u64,
    bad_at: Option<u64>,
}

impl<R: Read> Read for Utf8Check<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.bad_at.is_some() {
            return Ok(n);
        }
        let mut chunk = std::mem::take(&mut self.carry);
        chunk.extend_from_slice(&buf[..n]);
        match std::str::from_utf8(&chunk) {
            Ok(_) => self.checked += chunk.len() as u64,
            Err(e) => {
                let valid = e.valid_up_to();
                if e.error_len().is_some() || n == 0 {
                    self.bad_at = Some(self.checked + valid as u64);
                } else {
                    self.checked += valid as u64;
                    self.carry = chunk[valid..].to_vec();
                }
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{detail, reason, verdict};
    use super::{PythonFloats, Words};
    use proptest::prelude::*;
    use std::io::Read;

    /// Hands out at most `step` bytes a read, to cut words at every possible place.
    struct Trickle<'a> {
        rest: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.rest.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    proptest! {
        #[test]
        fn rewriting_does_not_depend_on_read_boundaries(
            parts in proptest::collection::vec(
                prop::sample::select(vec!["NaN", "Infinity", "-", "\"", "\\", "N", "Inf", " ", "1"]),
                0..40,
            ),
            step in 1usize..10,
            buf_len in 1usize..12,
        ) {
            let text = parts.concat().into_bytes();
            let mut whole = text.clone();
            Words::default().rewrite(&mut whole, true);
            let mut r = PythonFloats { inner: Trickle { rest: &text, step }, words: Words::default(), pending: Vec::new(), ready: 0 };
            let mut out = Vec::new();
            let mut buf = vec![0; buf_len];
            loop {
                let n = r.read(&mut buf).expect("in-memory read");
                if n == 0 { break; }
                out.extend_from_slice(&buf[..n]);
            }
            prop_assert_eq!(out, whole);
        }
    }

    /// A file read whole and one streamed get the same verdict, word for word.
    #[test]
    fn json_read_whole_and_streamed_agree() {
        let texts: [&[u8]; 9] = [
            b"{\"loss\": 1.5, \"acc\": [NaN, -Infinity]}\n",
            b"{\"a\": \"NaN\"}",
            b"{\"loss\": 1.5,\n \"acc\": }",
            b"[1, 2] 3",
            b"{\"bad\": \"\xff\"}",
            b"{\"cut\": \"\xe2\x82",
            b"",
            b"   ",
            b"{\"x\": Nan}",
        ];
        for text in texts {
            let len = text.len() as u64;
            let whole = format!("{:?}", super::check_json_within(text, len, 1 << 20));
            let streamed = format!("{:?}", super::check_json_within(text, len, 0));
            assert_eq!(whole, streamed, "{text:?}");
        }
        // Grown past the bound since its size was taken: what was read is kept.
        let big = format!("[{}1]", "1, ".repeat(100));
        let grown = super::check_json_within(big.as_bytes(), 4, 16);
        assert!(grown.is_ok(), "{grown:?}");
    }

    #[test]
    fn json_loads_and_fails_with_line_and_column() {
        assert_eq!(
            detail(&verdict("c.json", b"{\"a\": [1, 2]}\n")),
            "json: 14 B parsed"
        );
        assert_eq!(
            reason(&verdict("c.json", b"{\n  \"a\": [1,\n")),
            "line 3, column 0: EOF while parsing a value"
        );
        assert_eq!(
            reason(&verdict("c.json", b"{\"a\": 1} {")),
            "line 1, column 10: trailing characters"
        );
        assert_eq!(
            reason(&verdict("c.json", b"")),
            "line 1, column 0: EOF while parsing a value"
        );
    }

    #[test]
    fn python_nan_and_infinity_load_but_only_outside_strings() {
        let metrics =
            br#"{"loss": NaN, "best": -Infinity, "note": "NaN \" Infinity", "x": [Infinity]}"#;
        assert_eq!(detail(&verdict("m.json", metrics)), "json: 76 B parsed");
        assert_eq!(
            reason(&verdict("m.json", b"[NaN, Nan]")),
            "line 1, column 7: expected value"
        );
        assert_eq!(
            reason(&verdict("m.json", b"{\n\"a\": NaNx}")),
            "line 2, column 9: expected `,` or `}`"
        );
        // A word split across two reads of the 64 KiB buffer is still recognised.
        let mut long = b"[".to_vec();
        long.extend(std::iter::repeat_n(b' ', (1 << 16) - 4));
        long.extend_from_slice(b"Infinity, NaN]");
        assert_eq!(detail(&verdict("m.json", &long)), "json: 64.0 KiB parsed");
        assert_eq!(
            detail(&verdict("m.jsonl", b"{\"loss\": NaN}\n[-Infinity]\n")),
            "jsonl: 2 records"
        );
    }

    #[test]
    fn json_rejects_invalid_utf8_even_inside_strings() {
        assert_eq!(
            reason(&verdict("c.json", b"[\"ok\", \"\xff\"]")),
            "invalid UTF-8 at byte 8"
        );
        // A multi-byte character split across reads is fine; a truncated one at the end is not.
        let mut long = b"[\"".to_vec();
        long.extend(std::iter::repeat_n(b'x', (1 << 16) - 3));
        long.extend_from_slice("é\"]".as_bytes());
        assert_eq!(detail(&verdict("c.json", &long)), "json: 64.0 KiB parsed");
        assert_eq!(
            reason(&verdict("c.json", b"\"\xc3\"")),
            "invalid UTF-8 at byte 1"
        );
    }

    #[test]
    fn jsonl_names_the_first_bad_line() {
        assert_eq!(
            detail(&verdict("e.jsonl", b"{\"a\":1}\n\n{\"b\":2}\r\n[3]")),
            "jsonl: 3 records"
        );
        assert_eq!(
            reason(&verdict(
                "e.jsonl",
                b"{\"a\":1}\n{\"b\":2}\n{\"c\":,}\n{\"d\":4}\n"
            )),
            "line 3, column 6: expected value"
        );
        assert_eq!(
            reason(&verdict("e.jsonl", b"{\"a\":1}\n{\"b\":2}\n{\"c\": 3")),
            "line 3, column 7: EOF while parsing an object"
        );
        assert_eq!(
            reason(&verdict("e.jsonl", b"{\"a\":1} {\"b\":2}\n")),
            "line 1, column 9: trailing characters"
        );
        assert_eq!(
            reason(&verdict("e.jsonl", b"1\n\"\xe9\"\n")),
            "line 2, column 2: invalid UTF-8"
        );
        assert_eq!(
            reason(&verdict("e.jsonl", b"\n \n")),
            "no records: the file is empty or blank"
        );
    }
}
