//! tar archives, plain or gzip-compressed (detected by content, so `.tar.gz`/`.tgz` and a gzip
//! misnamed `.tar` all work), read by the `tar` crate (the one cargo itself unpacks crates with).
//!
//! Proves: every header's checksum is valid and every entry's data (size from the header,
//! base-256 for huge files, or from a pax `size=` record; the crate applies all three) lies
//! within the archive; and, checked here because the crate stops quietly at the first zero block
//! or at a clean end of file, the archive ends with the two zero blocks tar writes last, so a copy
//! cut anywhere before them fails. For gzip, the whole stream also inflates and matches its
//! CRC-32 and length. Plain archives seek over the data, so a 100 GB tar costs its headers.
//! Cannot prove: file contents (tar has no checksum of data).

use super::{Checked, Problem, corrupt, counted, human_bytes, read_full};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};

const BLOCK: u64 = 512;

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut magic = [0u8; 2];
    let gzip = read_full(file, &mut magic)? == 2 && magic == [0x1f, 0x8b];
    file.seek(SeekFrom::Start(0))?;
    if !gzip {
        let mut archive = tar::Archive::new(Counted::new(BufReader::new(file)));
        let walked = walk(archive.entries_with_seek(), Some(len))?;
        let summary = end_blocks(&mut archive.into_inner(), walked)?;
        return Ok(format!("tar: {summary}"));
    }
    let gz = Gz(MultiGzDecoder::new(BufReader::new(file)));
    let mut archive = tar::Archive::new(Counted::new(gz));
    let walked = walk(archive.entries(), None)?;
    let mut rest = archive.into_inner();
    let summary = end_blocks(&mut rest, walked)?;
    // What follows the end blocks is padding, but the gzip trailer's CRC covers it too.
    io::copy(&mut rest, &mut io::sink())?;
    Ok(format!("tar.gz: {summary}"))
}

/// What the walk saw: entries, their data bytes, and where the next header would start.
struct Walked {
    entries: u64,
    bytes: u64,
    end: u64,
}

/// `len` is the archive's length when its data is skipped by seeking (a seek past the end is
/// not an error, so each entry's data is checked against it); without it, data is read.
fn walk<R: Read>(
    entries: io::Result<tar::Entries<'_, R>>,
    len: Option<u64>,
) -> Result<Walked, Problem> {
    let mut w = Walked {
        entries: 0,
        bytes: 0,
        end: 0,
    };
    // A header cut short: fewer than a header's 512 bytes were left where it began (the
    // crate's own words for it are not a contract).
    let damaged = |at: u64, e: io::Error| {
        let short = len.is_some_and(|len| len.saturating_sub(at) < 512);
        if e.kind() == io::ErrorKind::UnexpectedEof || short {
            corrupt(format!("ends inside the header at byte {at}"))
        } else {
            corrupt(format!("header at byte {at}: {e}"))
        }
    };
    for entry in entries.map_err(|e| damaged(0, e))? {
        let mut entry = entry.map_err(|e| damaged(w.end, e))?;
        let (size, data_at) = (entry.size(), entry.raw_file_position());
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let at = entry.raw_header_position();
        let short = || {
            corrupt(format!(
                "header at byte {at} ('{name}'): its {size} bytes of data from byte {data_at} \
                 run past the end"
            ))
        };
        let padded = size.div_ceil(BLOCK).saturating_mul(BLOCK);
        match len {
            Some(len) if data_at.saturating_add(padded) > len => return Err(short()),
            Some(_) => {}
            None => {
                if io::copy(&mut entry, &mut io::sink())? < size {
                    return Err(short());
                }
            }
        }
        w.entries += 1;
        w.bytes += size;
        w.end = data_at.saturating_add(padded);
    }
    Ok(w)
}

/// The crate has read either nothing more (a clean end of file: no end blocks) or the first
/// zero block; the second must follow.
fn end_blocks<R: Read>(r: &mut Counted<R>, w: Walked) -> Result<String, Problem> {
    if r.at <= w.end {
        return Err(corrupt(format!(
            "ends at byte {} without the end-of-archive blocks",
            w.end
        )));
    }
    let mut block = [0u8; BLOCK as usize];
    let second = read_full(r, &mut block)?;
    if second < block.len() || block.iter().any(|&b| b != 0) {
        return Err(corrupt(format!(
            "only one end-of-archive zero block, at byte {}; tar writes two",
            w.end
        )));
    }
    Ok(format!(
        "{}, {} of data",
        counted(w.entries, "entry", "entries"),
        human_bytes(w.bytes)
    ))
}

/// Where the crate has got to, so the end blocks can be found after it stops.
struct Counted<R> {
    inner: R,
    at: u64,
}

impl<R> Counted<R> {
    fn new(inner: R) -> Counted<R> {
        Counted { inner, at: 0 }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for Counted<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.at = self.inner.seek(to)?;
        Ok(self.at)
    }
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
            "header at byte 0: archive header checksum mismatch"
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
            "header at byte 0: members found describing a future member but no future member found"
        );
        let mut max = [0xffu8; 12];
        max[..4].copy_from_slice(&[0x80, 0, 0, 0]);
        let huge = [entry("x", b'0', &max, b""), vec![0; 1024]].concat();
        assert_eq!(
            reason(&verdict("x.tar", &huge)),
            "header at byte 0: size overflow"
        );
    }
}
