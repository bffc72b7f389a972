//! tar archives, plain or gzip-compressed (detected by content, so `.tar.gz`/`.tgz` and a gzip
//! misnamed `.tar` all work).
//!
//! Proves: every header's checksum is valid; every entry's data (size from the header, base-256
//! for huge files, or from a pax `size=` record) lies within the archive; the archive ends with
//! the two zero blocks tar writes last, so a copy cut anywhere before them fails. For gzip, the
//! whole stream also inflates and matches its CRC-32 and length. Plain archives are checked by
//! reading headers only, skipping the data; byte offsets in reasons count the tar stream, which
//! for gzip is the uncompressed one. Cannot prove: file contents (tar has no checksum of data);
//! old GNU sparse files with extension headers are not understood (they fail).

use super::{Checked, Problem, corrupt, counted, human_bytes, read_full};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};

const BLOCK: u64 = 512;
/// pax headers carry long names and a few numbers; anything bigger is damage.
const MAX_PAX: u64 = 1 << 20;

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut magic = [0u8; 2];
    let gzip = read_full(file, &mut magic)? == 2 && magic == [0x1f, 0x8b];
    file.seek(SeekFrom::Start(0))?;
    if !gzip {
        let mut r = BufReader::new(file);
        let summary = walk(&mut r, |r, n| {
            let here = r.stream_position()?;
            let can = n.min(len.saturating_sub(here));
            r.seek_relative(i64::try_from(can).map_err(io::Error::other)?)?;
            Ok(can)
        })?;
        return Ok(format!("tar: {summary}"));
    }
    let mut r = Gz(MultiGzDecoder::new(BufReader::new(file)));
    let summary = walk(&mut r, |r, n| io::copy(&mut r.take(n), &mut io::sink()))?;
    // What follows the end blocks is padding, but the gzip trailer's CRC covers it too.
    io::copy(&mut r, &mut io::sink())?;
    Ok(format!("tar.gz: {summary}"))
}

/// Names the gzip layer in its errors, which would otherwise read like tar damage.
struct Gz<R>(MultiGzDecoder<R>);

impl<R: Read> Read for Gz<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), format!("gzip stream: {e}")))
    }
}

/// Walks the headers of an uncompressed tar stream; `skip` passes over `n` data bytes and
/// returns how many were really there.
fn walk<R: Read>(
    r: &mut R,
    mut skip: impl FnMut(&mut R, u64) -> io::Result<u64>,
) -> Result<String, Problem> {
    let (mut at, mut entries, mut bytes) = (0u64, 0u64, 0u64);
    let mut pax_size = None;
    let mut block = [0u8; BLOCK as usize];
    loop {
        match read_full(r, &mut block)? {
            0 => {
                return Err(corrupt(format!(
                    "ends at byte {at} without the end-of-archive blocks"
                )));
            }
            512 => {}
            _ => return Err(corrupt(format!("ends inside the header at byte {at}"))),
        }
        if block.iter().all(|&b| b == 0) {
            let second = read_full(r, &mut block)?;
            if second < 512 || block.iter().any(|&b| b != 0) {
                return Err(corrupt(format!(
                    "only one end-of-archive zero block, at byte {at}; tar writes two"
                )));
            }
            return Ok(format!(
                "{}, {} of data",
                counted(entries, "entry", "entries"),
                human_bytes(bytes)
            ));
        }
        let name = name(&block);
        let here = |r: String| corrupt(format!("header at byte {at} ('{name}'): {r}"));
        checksum(&block).map_err(here)?;
        let kind = block[156];
        let mut size = match kind {
            // Links, devices, directories and FIFOs have no data, whatever their size says
            // (Python's tarfile and GNU tar agree).
            b'1'..=b'6' => 0,
            _ => number(&block[124..136]).ok_or_else(|| here("bad size field".into()))?,
        };
        if !matches!(kind, b'x' | b'g') {
            size = pax_size.take().unwrap_or(size);
        }
        let padded = size
            .div_ceil(BLOCK)
            .checked_mul(BLOCK)
            .ok_or_else(|| here(format!("size {size} overflows")))?;
        let data_at = at + BLOCK;
        if kind == b'x' {
            if size > MAX_PAX {
                return Err(here(format!("pax header of {size} bytes")));
            }
            let mut pax = vec![0; padded as usize];
            let got = read_full(r, &mut pax)?;
            if (got as u64) < padded {
                return Err(here(format!("pax data at byte {data_at} is cut short")));
            }
            pax_size = pax_record_size(&pax[..size as usize]).map_err(here)?;
        } else if skip(r, padded)? < padded {
            return Err(here(format!(
                "its {size} bytes of data from byte {data_at} run past the end"
            )));
        }
        if !matches!(kind, b'x' | b'g' | b'L' | b'K') {
            entries += 1;
            bytes += size;
        }
        at = data_at + padded;
    }
}

fn name(block: &[u8]) -> String {
    let field = &block[..100];
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// The checksum is the sum of the header's bytes with its own field read as spaces; old tars
/// summed signed bytes, which tar readers still accept.
fn checksum(block: &[u8]) -> Result<(), String> {
    let stored = number(&block[148..156]).ok_or("checksum field is not a number")?;
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in block.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    if stored != unsigned && i64::try_from(stored) != Ok(signed) {
        return Err(format!(
            "checksum mismatch (stored {stored}, computed {unsigned})"
        ));
    }
    Ok(())
}

/// Octal, space/NUL padded; or GNU base-256 (high bit set) for values past 8 GiB.
fn number(field: &[u8]) -> Option<u64> {
    if field[0] & 0x80 != 0 {
        if field[0] != 0x80 {
            return None;
        }
        return field[1..].iter().try_fold(0u64, |acc, &b| {
            acc.checked_mul(256)?.checked_add(u64::from(b))
        });
    }
    let mut text = field
        .iter()
        .skip_while(|&&b| b == b' ')
        .take_while(|&&b| b != 0 && b != b' ');
    text.try_fold(0u64, |acc, &b| {
        let digit = (b as char).to_digit(8)?;
        acc.checked_mul(8)?.checked_add(u64::from(digit))
    })
}

/// pax records are `<length> <key>=<value>\n`; the one that matters here is `size`.
fn pax_record_size(mut pax: &[u8]) -> Result<Option<u64>, String> {
    let mut size = None;
    while !pax.is_empty() {
        let space = pax
            .iter()
            .position(|&b| b == b' ')
            .ok_or("malformed pax record")?;
        let len: usize = std::str::from_utf8(&pax[..space])
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&l| l > space && l <= pax.len())
            .ok_or("malformed pax record length")?;
        let record = &pax[space + 1..len];
        let Some((b'\n', kv)) = record.split_last() else {
            return Err("pax record does not end in a newline".into());
        };
        if let Some(value) = kv.strip_prefix(b"size=") {
            let value = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            size = Some(value.ok_or("bad pax size")?);
        }
        pax = &pax[len..];
    }
    Ok(size)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{detail, reason, verdict};
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    fn header(name: &str, kind: u8, size: &[u8; 12]) -> Vec<u8> {
        let mut h = vec![0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..108].copy_from_slice(b"0000644\0");
        h[108..116].copy_from_slice(b"0001750\0");
        h[116..124].copy_from_slice(b"0001750\0");
        h[124..136].copy_from_slice(size);
        h[136..148].copy_from_slice(b"14712345670\0");
        h[156] = kind;
        h[257..265].copy_from_slice(b"ustar\x0000");
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    }

    fn octal(n: usize) -> [u8; 12] {
        let mut f = [0u8; 12];
        f.copy_from_slice(format!("{n:011o}\0").as_bytes());
        f
    }

    fn entry(name: &str, kind: u8, size: &[u8; 12], data: &[u8]) -> Vec<u8> {
        let mut e = header(name, kind, size);
        e.extend_from_slice(data);
        e.resize(e.len().div_ceil(512) * 512, 0);
        e
    }

    pub(in super::super) fn archive() -> Vec<u8> {
        [
            entry("a.txt", b'0', &octal(5), b"hello"),
            entry("d/", b'5', &octal(0), b""),
            entry("d/b.bin", b'0', &octal(600), &[3; 600]),
            vec![0; 1024],
        ]
        .concat()
    }

    pub(in super::super) fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(bytes).expect("gzip");
        enc.finish().expect("gzip")
    }

    #[test]
    fn plain_and_gzipped_archives_load() {
        assert_eq!(
            detail(&verdict("x.tar", &archive())),
            "tar: 3 entries, 605 B of data"
        );
        assert_eq!(
            detail(&verdict("x.tar.gz", &gzip(&archive()))),
            "tar.gz: 3 entries, 605 B of data"
        );
        assert_eq!(
            detail(&verdict("x.tgz", &gzip(&archive()))),
            "tar.gz: 3 entries, 605 B of data"
        );
        assert_eq!(
            detail(&verdict("e.tar", &[0; 1024])),
            "tar: 0 entries, 0 B of data"
        );
    }

    #[test]
    fn truncation_anywhere_fails() {
        let tar = archive();
        let n = tar.len();
        assert_eq!(
            reason(&verdict("x.tar", &tar[..n - 1])),
            "only one end-of-archive zero block, at byte 3072; tar writes two"
        );
        assert_eq!(
            reason(&verdict("x.tar", &tar[..n - 1024])),
            "ends at byte 3072 without the end-of-archive blocks"
        );
        assert_eq!(
            reason(&verdict("x.tar", &tar[..2100])),
            "header at byte 1536 ('d/b.bin'): its 600 bytes of data from byte 2048 run past the end"
        );
        assert_eq!(
            reason(&verdict("x.tar", &tar[..700])),
            "header at byte 0 ('a.txt'): its 5 bytes of data from byte 512 run past the end"
        );
        assert_eq!(
            reason(&verdict("x.tar", &tar[..1200])),
            "ends inside the header at byte 1024"
        );
        assert_eq!(
            reason(&verdict("x.tar", b"")),
            "ends at byte 0 without the end-of-archive blocks"
        );
        let gz = gzip(&tar);
        assert!(reason(&verdict("x.tar.gz", &gz[..gz.len() - 1])).starts_with("gzip stream: "));
        assert_eq!(
            reason(&verdict("x.tar.gz", &gzip(&tar[..2100]))),
            "header at byte 1536 ('d/b.bin'): its 600 bytes of data from byte 2048 run past the end"
        );
    }

    #[test]
    fn damaged_header_or_gzip_fails() {
        let mut tar = archive();
        tar[1] = b'X';
        assert_eq!(
            reason(&verdict("x.tar", &tar)),
            "header at byte 0 ('aXtxt'): checksum mismatch (stored 3603, computed 3645)"
        );
        let mut gz = gzip(&archive());
        let n = gz.len();
        gz[n - 6] ^= 0xff; // inside the CRC-32 trailer
        assert!(reason(&verdict("x.tar.gz", &gz)).starts_with("gzip stream: "));
    }

    #[test]
    fn pax_and_base256_sizes_are_honoured() {
        let mut big = [0u8; 12];
        big[0] = 0x80;
        big[10] = 0x01; // 256
        let tar = [
            entry("././@PaxHeader", b'x', &octal(13), b"13 size=1000\n"),
            entry("huge.bin", b'0', &octal(0), &[1; 1000]),
            entry("b256.bin", b'0', &big, &[2; 256]),
            vec![0; 1024],
        ]
        .concat();
        assert_eq!(
            detail(&verdict("x.tar", &tar)),
            "tar: 2 entries, 1.2 KiB of data"
        );
        let bad = [
            entry("././@PaxHeader", b'x', &octal(12), b"13 size=10\n"),
            vec![0; 1024],
        ]
        .concat();
        assert_eq!(
            reason(&verdict("x.tar", &bad)),
            "header at byte 0 ('././@PaxHeader'): malformed pax record length"
        );
        let mut max = [0xffu8; 12];
        max[..4].copy_from_slice(&[0x80, 0, 0, 0]);
        let huge = [entry("x", b'0', &max, b""), vec![0; 1024]].concat();
        assert_eq!(
            reason(&verdict("x.tar", &huge)),
            "header at byte 0 ('x'): size 18446744073709551615 overflows"
        );
    }
}
