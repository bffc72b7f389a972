//! PDF (a plot saved by matplotlib, a report).
//!
//! Proves: the file starts `%PDF-`, ends with `%%EOF` (only whitespace after it), and the last
//! `startxref` points inside the file at a cross-reference table (`xref`) or stream (`N G obj`),
//! which is where every reader starts; a copy cut short loses that tail and fails. Cannot prove:
//! the objects and content streams decode (that needs a whole PDF parser; none is built in).

use super::{Checked, corrupt, human_bytes, read_exact_or};
use std::fs::File;
use std::io::{Seek, SeekFrom};

/// Writers put `startxref`, its offset and `%%EOF` in the last few dozen bytes; 2 KiB leaves
/// room for trailing whitespace and long offsets.
const TAIL: u64 = 2048;

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut head = [0u8; 5];
    read_exact_or(file, &mut head, "the %PDF- header")?;
    if &head != b"%PDF-" {
        return Err(corrupt("does not start with %PDF-"));
    }
    let from = len.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = vec![0u8; (len - from) as usize];
    read_exact_or(file, &mut tail, "the trailer")?;
    let end = tail
        .iter()
        .rposition(|b| !b.is_ascii_whitespace() && *b != 0)
        .map_or(0, |i| i + 1);
    if !tail[..end].ends_with(b"%%EOF") {
        return Err(corrupt(
            "does not end with %%EOF: the copy is cut short or the writer never finished",
        ));
    }
    let body = &tail[..end - 5];
    let at = find_last(body, b"startxref").ok_or_else(|| corrupt("no startxref before %%EOF"))?;
    let number: String = body[at + 9..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|b| b.is_ascii_digit())
        .map(|&b| char::from(b))
        .collect();
    let xref: u64 = number.parse().map_err(|_| {
        corrupt(format!(
            "startxref (byte {}) has no offset",
            from + at as u64
        ))
    })?;
    if xref >= len {
        return Err(corrupt(format!(
            "startxref points at byte {xref}, past the end of the {len}-byte file"
        )));
    }
    file.seek(SeekFrom::Start(xref))?;
    let mut there = [0u8; 32];
    let got = super::read_full(file, &mut there)?;
    if !(there[..got].starts_with(b"xref") || is_object_header(&there[..got])) {
        return Err(corrupt(format!(
            "startxref points at byte {xref}, which holds no cross-reference table or stream"
        )));
    }
    Ok(format!(
        "pdf: {}, trailer and cross-reference found",
        human_bytes(len)
    ))
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// `12 0 obj`: two numbers and the keyword, as a cross-reference stream begins.
fn is_object_header(b: &[u8]) -> bool {
    let text = String::from_utf8_lossy(b);
    let mut words = text.split_ascii_whitespace();
    let number =
        |w: Option<&str>| w.is_some_and(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_digit()));
    number(words.next())
        && number(words.next())
        && words.next().is_some_and(|w| w.starts_with("obj"))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{detail, reason, verdict};

    const SMALL: &[u8] =
        b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\nxref\n0 2\ntrailer\n<<>>\nstartxref\n29\n%%EOF\n";

    #[test]
    fn trailer_and_xref_are_found_and_a_cut_fails() {
        assert!(detail(&verdict("r.pdf", SMALL)).starts_with("pdf: "));
        let v = verdict("r.pdf", &SMALL[..SMALL.len() - 4]);
        assert!(reason(&v).starts_with("does not end with %%EOF"), "{v:?}");
        let moved = String::from_utf8_lossy(SMALL).replace("\n29\n", "\n3\n");
        let v = verdict("r.pdf", moved.as_bytes());
        assert!(reason(&v).contains("holds no cross-reference"), "{v:?}");
        let far = String::from_utf8_lossy(SMALL).replace("\n29\n", "\n9999\n");
        let v = verdict("r.pdf", far.as_bytes());
        assert!(reason(&v).contains("past the end"), "{v:?}");
    }
}
