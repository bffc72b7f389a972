//! Plain text, YAML, TOML and CSV: configs, logs and tables a run leaves behind.
//!
//! Text (`.txt`, `.log`, `.out`, `.err`, `.md`) proves: the file is UTF-8 with no NUL bytes (a
//! crash or a full disk leaves runs of NULs in a log), so binary junk under a text name fails. YAML proves every document parses (yaml-rust2, a YAML 1.2 parser); TOML that the file
//! parses (the `toml` crate); CSV (the `csv` crate) that every record has as many fields as the
//! first, quotes closed, so a row cut in half fails. Cannot prove: a file cut exactly at a line
//! break is a shorter valid file; the values are not checked against any schema.

use super::{Checked, Problem, corrupt, counted, human_bytes};
use std::io::{BufReader, Read, Seek, SeekFrom};

/// Configs are small; a larger "config" is read only as text would be, not parsed whole.
const MAX_PARSED: u64 = 64 << 20;

pub(super) fn check_text(file: &mut (impl Read + Seek), len: u64) -> Checked {
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut chunk = vec![0u8; 1 << 16];
    let (mut carry, mut at, mut lines) = (Vec::new(), 0u64, 0u64);
    loop {
        let n = r.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        if let Some(i) = chunk[..n].iter().position(|&b| b == 0) {
            return Err(corrupt(format!(
                "NUL byte at byte {}: binary data, or the hole a crash leaves in a log",
                at + i as u64
            )));
        }
        lines += chunk[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        carry.extend_from_slice(&chunk[..n]);
        match std::str::from_utf8(&carry) {
            Ok(_) => carry.clear(),
            Err(e) if e.error_len().is_none() => {
                carry.drain(..e.valid_up_to());
            }
            Err(e) => {
                let bad = at + n as u64 - (carry.len() - e.valid_up_to()) as u64;
                return Err(corrupt(format!("not valid UTF-8 at byte {bad}")));
            }
        }
        at += n as u64;
    }
    if !carry.is_empty() {
        return Err(corrupt(format!(
            "not valid UTF-8 at byte {}: the file ends inside a character",
            at - carry.len() as u64
        )));
    }
    Ok(format!(
        "text: {}, {}, UTF-8",
        counted(lines, "line", "lines"),
        human_bytes(len)
    ))
}

fn read_small(file: &mut (impl Read + Seek), len: u64) -> Result<String, Problem> {
    if len > MAX_PARSED {
        return Err(Problem::Unverifiable);
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.read_to_end(&mut bytes)?;
    String::from_utf8(bytes).map_err(|e| {
        corrupt(format!(
            "invalid UTF-8 at byte {}",
            e.utf8_error().valid_up_to()
        ))
    })
}

pub(super) fn check_yaml(file: &mut (impl Read + Seek), len: u64) -> Checked {
    let text = read_small(file, len)?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).map_err(|e| {
        let m = e.marker();
        corrupt(format!(
            "line {}, column {}: {}",
            m.line(),
            m.col() + 1,
            e.info()
        ))
    })?;
    if docs.is_empty() {
        return Err(corrupt("empty: no YAML document"));
    }
    Ok(format!(
        "yaml: {} parsed, {}",
        counted(docs.len() as u64, "document", "documents"),
        human_bytes(len)
    ))
}

pub(super) fn check_toml(file: &mut (impl Read + Seek), len: u64) -> Checked {
    let text = read_small(file, len)?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let line = text[..at.min(text.len())].matches('\n').count() + 1;
        corrupt(format!("line {line}: {}", e.message()))
    })?;
    Ok(format!(
        "toml: {} parsed, {}",
        counted(table.len() as u64, "key", "keys"),
        human_bytes(len)
    ))
}

pub(super) fn check_csv(file: &mut (impl Read + Seek), len: u64, delimiter: u8) -> Checked {
    // Every writer (Python's csv, pandas, polars, R) ends each row with a line break, so a row
    // without one is a copy or a writer that stopped mid-row, even when its fields still count
    // right ("0.31" cut to "0.3").
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        file.seek(SeekFrom::Start(0))?;
        if last[0] != b'\n' && last[0] != b'\r' {
            return Err(corrupt(
                "the last row has no line break: cut short, or the writer stopped mid-row",
            ));
        }
    }
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .from_reader(BufReader::with_capacity(1 << 16, file));
    let mut record = csv::ByteRecord::new();
    let (mut rows, mut fields) = (0u64, 0usize);
    loop {
        match r.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                rows += 1;
                fields = record.len();
            }
            Err(e) => {
                return Err(match e.into_kind() {
                    csv::ErrorKind::Io(e) => e.into(),
                    csv::ErrorKind::UnequalLengths {
                        pos,
                        expected_len,
                        len,
                    } => corrupt(format!(
                        "line {}: {} where the rows before have {expected_len}",
                        pos.map_or(0, |p| p.line()),
                        counted(len, "field", "fields")
                    )),
                    other => corrupt(format!("{other:?}")),
                });
            }
        }
    }
    if rows == 0 {
        return Err(corrupt("empty: no rows"));
    }
    Ok(format!(
        "csv: {} of {}, {}",
        counted(rows, "row", "rows"),
        counted(fields as u64, "field", "fields"),
        human_bytes(len)
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{detail, reason, verdict};

    #[test]
    fn text_must_be_utf8_without_nul_bytes() {
        assert_eq!(
            detail(&verdict("train.log", b"a\nb\n")),
            "text: 2 lines, 4 B, UTF-8"
        );
        let v = verdict("train.log", b"step 1\n\0\0\0\0");
        assert!(reason(&v).starts_with("NUL byte at byte 7"), "{v:?}");
        let v = verdict("latin1.txt", b"caf\xe9\n");
        assert_eq!(reason(&v), "not valid UTF-8 at byte 3");
        let v = verdict(
            "cut.txt",
            "ab\u{e9}".as_bytes().split_last().expect("bytes").1,
        );
        assert!(reason(&v).starts_with("not valid UTF-8 at byte 2"), "{v:?}");
        let split = [vec![b'a'; (1 << 16) - 1], "é\n".as_bytes().to_vec()].concat();
        assert!(detail(&verdict("long.log", &split)).starts_with("text: 1 line"));
    }

    #[test]
    fn yaml_toml_and_csv_parse_and_a_cut_fails() {
        assert!(detail(&verdict("c.yaml", b"a: 1\nb: [1, 2]\n")).starts_with("yaml: 1 document"));
        let v = verdict("c.yml", b"a: 1\nb: [1, 2\n");
        assert!(reason(&v).starts_with("line "), "{v:?}");
        assert_eq!(reason(&verdict("c.yaml", b"")), "empty: no YAML document");
        assert!(detail(&verdict("c.toml", b"a = 1\n[b]\nc = 'd'\n")).starts_with("toml: 2 keys"));
        let v = verdict("c.toml", b"a = 1\n[b]\nc = 'd");
        assert!(reason(&v).starts_with("line 3"), "{v:?}");
        assert!(detail(&verdict("m.csv", b"step,loss\n1,2.5\n2,2.1\n")).starts_with("csv: 3 rows"));
        let v = verdict("m.csv", b"step,loss\n1,2.5\n2\n");
        assert!(
            reason(&v).starts_with("line 3: 1 field where the rows before have 2"),
            "{v:?}"
        );
        let v = verdict("m.csv", b"step,loss\n1,2.5\n2,2.1");
        assert!(
            reason(&v).starts_with("the last row has no line break"),
            "{v:?}"
        );
        assert!(detail(&verdict("m.tsv", b"a\tb\n1\t2\n")).starts_with("csv: 2 rows of 2"));
    }
}
