//! Just enough ZIP to prove that an archive written by torch.save or numpy.savez is intact.
//!
//! Proves: the end record (plain or ZIP64, which torch always writes) is where a complete archive
//! has it; the central directory fills exactly the bytes between its start and the end record and
//! lists exactly as many entries as the end record says; every entry's local header is at the
//! offset the directory gives, names the same file with the same method, and keeps its data
//! before the directory; every entry's bytes (stored, or inflated for deflate) have the recorded
//! size and CRC-32. Entries are streamed, so memory stays small whatever their size.
//! Cannot prove: anything about what the entries mean; that is the callers' job.
//! Hand-written, not the `zip` crate: checked against zip 7.3, which reads a local header only
//! for its length (`find_data_start`): it does not check that the header names the same file
//! with the same method as the directory, nor that the directory ends where the end record
//! begins, and it accepts data prepended to the archive. Those disagreements are exactly how a
//! damaged or spliced archive loads differently in two readers; this reader refuses them.
//!
//! Past 400 lines: one format's whole check; split, its steps would lose the order the
//! format defines.

use super::{Problem, corrupt, read_exact_or};
use flate2::read::DeflateDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

const LOCAL: &[u8; 4] = b"PK\x03\x04";
const CENTRAL: &[u8; 4] = b"PK\x01\x02";
const END: &[u8; 4] = b"PK\x05\x06";
const END64: &[u8; 4] = b"PK\x06\x06";
const END64_LOCATOR: &[u8; 4] = b"PK\x06\x07";
const END_LEN: u64 = 22;
const MAX_COMMENT: u64 = 0xFFFF;

/// A plain `.zip` (logs, a run's code): every entry's bytes inflate and match their CRC-32.
/// Entries compressed with methods other than stored and deflate (bzip2, zstd) leave the archive
/// unproven rather than failed: they are valid, just not checked here.
pub(super) fn check(file: &mut File, len: u64) -> super::Checked {
    let archive = Archive::open(file, len)?;
    if archive.entries.iter().any(|e| !matches!(e.method, 0 | 8)) {
        return Err(Problem::Unverifiable);
    }
    let mut bytes = 0u64;
    for entry in &archive.entries {
        bytes += archive.read(file, entry, |r| Ok(io::copy(r, &mut io::sink())?))?;
    }
    Ok(format!(
        "zip: {}, {} inflated, every CRC-32 matches",
        super::counted(archive.entries.len() as u64, "entry", "entries"),
        super::human_bytes(bytes)
    ))
}

pub(super) struct Entry {
    pub(super) name: String,
    /// Uncompressed size, as the central directory records it (and as reading proved).
    pub(super) size: u64,
    method: u16,
    crc: u32,
    compressed: u64,
    header_at: u64,
}

pub(super) struct Archive {
    pub(super) entries: Vec<Entry>,
    directory_at: u64,
}

impl Archive {
    pub(super) fn open(file: &mut File, len: u64) -> Result<Archive, Problem> {
        let tail_len = len.min(END_LEN + MAX_COMMENT);
        let tail_at = len - tail_len;
        let mut tail = vec![0; usize::try_from(tail_len).map_err(io::Error::other)?];
        file.seek(SeekFrom::Start(tail_at))?;
        read_exact_or(file, &mut tail, "the end of the archive")?;
        // The last signature whose comment length reaches exactly to the end of the file; a
        // truncated archive has none.
        let end = (0..tail.len().saturating_sub(END_LEN as usize - 1))
            .rev()
            .find(|&i| {
                tail[i..].starts_with(END)
                    && u64::from(u16_at(&tail, i + 20)) == tail_len - i as u64 - END_LEN
            })
            .ok_or_else(|| {
                corrupt("no end-of-central-directory record at the end (truncated, or not a zip)")
            })?;
        let end_at = tail_at + end as u64;
        let rec = &tail[end..];
        if u16_at(rec, 4) != 0 || u16_at(rec, 6) != 0 {
            return Err(corrupt(format!(
                "end record at byte {end_at}: multi-disk archives are not supported"
            )));
        }
        let (mut count, mut dir_len, mut dir_at) = (
            u64::from(u16_at(rec, 10)),
            u64::from(u32_at(rec, 12)),
            u64::from(u32_at(rec, 16)),
        );
        let mut dir_end = end_at;
        let mut locator = [0u8; 20];
        if end_at >= 20 {
            file.seek(SeekFrom::Start(end_at - 20))?;
            read_exact_or(file, &mut locator, "the ZIP64 locator")?;
        }
        if locator.starts_with(END64_LOCATOR) {
            let end64_at = u64_at(&locator, 8);
            let mut rec64 = [0u8; 56];
            if end64_at.checked_add(56).is_none_or(|e| e > end_at - 20) {
                return Err(corrupt(format!(
                    "ZIP64 locator at byte {} points past itself, to byte {end64_at}",
                    end_at - 20
                )));
            }
            file.seek(SeekFrom::Start(end64_at))?;
            read_exact_or(file, &mut rec64, "the ZIP64 end record")?;
            if !rec64.starts_with(END64) {
                return Err(corrupt(format!("no ZIP64 end record at byte {end64_at}")));
            }
            (count, dir_len, dir_at) = (u64_at(&rec64, 32), u64_at(&rec64, 40), u64_at(&rec64, 48));
            dir_end = end64_at;
        }
        if dir_at.checked_add(dir_len) != Some(dir_end) {
            return Err(corrupt(format!(
                "central directory (byte {dir_at}, {dir_len} bytes) does not end where the end \
                 record begins (byte {dir_end})"
            )));
        }
        file.seek(SeekFrom::Start(dir_at))?;
        let mut dir = BufReader::new(file.take(dir_len));
        let mut entries = Vec::new();
        for index in 0..count {
            let entry = read_central(&mut dir)
                .map_err(|p| p.context(&format!("central directory entry #{index}")))?;
            entries.push(entry);
        }
        if !dir.fill_buf()?.is_empty() {
            return Err(corrupt(format!(
                "central directory holds more than the {count} entries the end record lists"
            )));
        }
        Ok(Archive {
            entries,
            directory_at: dir_at,
        })
    }

    /// Hands `consume` the entry's uncompressed bytes, then reads whatever it left and checks
    /// size and CRC-32. A size or CRC failure is reported in preference to `consume`'s own
    /// complaint, since damaged bytes are the root cause of whatever it saw.
    pub(super) fn read<T>(
        &self,
        file: &mut File,
        entry: &Entry,
        consume: impl FnOnce(&mut dyn Read) -> Result<T, Problem>,
    ) -> Result<T, Problem> {
        let what = format!("entry '{}'", entry.name);
        self.read_inner(file, entry, consume)
            .map_err(|p| p.context(&what))
    }

    /// Where `entry`'s data begins, once its local header agrees with the directory (the
    /// method, the name, not encrypted) and its data ends before the directory.
    fn data_at(&self, file: &mut File, entry: &Entry) -> Result<u64, Problem> {
        let at = entry.header_at;
        let mut head = [0u8; 30];
        if at.checked_add(30).is_none_or(|e| e > self.directory_at) {
            return Err(corrupt(format!(
                "local header offset {at} is not before the central directory"
            )));
        }
        file.seek(SeekFrom::Start(at))?;
        read_exact_or(file, &mut head, "a local header")?;
        if !head.starts_with(LOCAL) {
            return Err(corrupt(format!("no local header at byte {at}")));
        }
        if u16_at(&head, 6) & 1 != 0 {
            return Err(corrupt("encrypted entries cannot be verified"));
        }
        if u16_at(&head, 8) != entry.method {
            return Err(corrupt(format!(
                "local header at byte {at} says method {}, directory says {}",
                u16_at(&head, 8),
                entry.method
            )));
        }
        let mut name = vec![0; usize::from(u16_at(&head, 26))];
        read_exact_or(file, &mut name, "a local header's name")?;
        // Compared as the directory's name was decoded, so a non-UTF-8 name still matches itself.
        if String::from_utf8_lossy(&name) != entry.name {
            return Err(corrupt(format!(
                "local header at byte {at} names '{}'",
                String::from_utf8_lossy(&name)
            )));
        }
        let data_at = at + 30 + name.len() as u64 + u64::from(u16_at(&head, 28));
        let data_end = data_at.checked_add(entry.compressed);
        if data_end.is_none_or(|e| e > self.directory_at) {
            return Err(corrupt(format!(
                "{} bytes of data from byte {data_at} run into the central directory at byte {}",
                entry.compressed, self.directory_at
            )));
        }
        Ok(data_at)
    }

    fn read_inner<T>(
        &self,
        file: &mut File,
        entry: &Entry,
        consume: impl FnOnce(&mut dyn Read) -> Result<T, Problem>,
    ) -> Result<T, Problem> {
        let data_at = self.data_at(file, entry)?;
        file.seek(SeekFrom::Start(data_at))?;
        let raw = BufReader::with_capacity(1 << 16, file.take(entry.compressed));
        let inner: Box<dyn Read + '_> = match entry.method {
            0 if entry.compressed == entry.size => Box::new(raw),
            0 => {
                return Err(corrupt(format!(
                    "stored entry has {} bytes but claims {} uncompressed",
                    entry.compressed, entry.size
                )));
            }
            8 => Box::new(DeflateDecoder::new(raw)),
            m => return Err(corrupt(format!("compression method {m} is not supported"))),
        };
        // One byte more than promised is enough to tell "too long" without inflating a bomb.
        let mut reader = CrcReader {
            inner: inner.take(entry.size.saturating_add(1)),
            crc: crc32fast::Hasher::new(),
            count: 0,
        };
        let consumed = consume(&mut reader);
        io::copy(&mut reader, &mut io::sink())?;
        if reader.count != entry.size {
            return Err(corrupt(format!(
                "holds {}{} bytes, directory says {}",
                if reader.count > entry.size {
                    "more than "
                } else {
                    ""
                },
                reader.count.min(entry.size),
                entry.size
            )));
        }
        let crc = reader.crc.finalize();
        if crc != entry.crc {
            return Err(corrupt(format!(
                "CRC-32 mismatch (recorded {:08x}, computed {crc:08x})",
                entry.crc
            )));
        }
        consumed
    }
}

fn read_central(dir: &mut impl Read) -> Result<Entry, Problem> {
    let mut fixed = [0u8; 46];
    read_exact_or(dir, &mut fixed, "the central directory")?;
    if !fixed.starts_with(CENTRAL) {
        return Err(corrupt("bad signature"));
    }
    let mut name = vec![0; usize::from(u16_at(&fixed, 28))];
    let mut extra = vec![0; usize::from(u16_at(&fixed, 30))];
    let mut comment = vec![0; usize::from(u16_at(&fixed, 32))];
    read_exact_or(dir, &mut name, "the central directory")?;
    read_exact_or(dir, &mut extra, "the central directory")?;
    read_exact_or(dir, &mut comment, "the central directory")?;
    let name = String::from_utf8_lossy(&name).into_owned();
    // ZIP64 moves each 32-bit field that reads 0xFFFFFFFF, in this order, into extra field 1.
    let mut wide = zip64_fields(&extra).into_iter();
    let mut widen = |narrow: u32, what: &str| match narrow {
        u32::MAX => wide.next().ok_or_else(|| {
            corrupt(format!(
                "'{name}': {what} needs a ZIP64 field that is missing"
            ))
        }),
        n => Ok(u64::from(n)),
    };
    let size = widen(u32_at(&fixed, 24), "size")?;
    let compressed = widen(u32_at(&fixed, 20), "compressed size")?;
    let header_at = widen(u32_at(&fixed, 42), "offset")?;
    Ok(Entry {
        method: u16_at(&fixed, 10),
        crc: u32_at(&fixed, 16),
        name,
        size,
        compressed,
        header_at,
    })
}

fn zip64_fields(mut extra: &[u8]) -> Vec<u64> {
    while extra.len() >= 4 {
        let (id, len) = (u16_at(extra, 0), usize::from(u16_at(extra, 2)));
        let body = extra.get(4..4 + len).unwrap_or(&extra[4..]);
        if id == 1 {
            return body.chunks_exact(8).map(|c| u64_at(c, 0)).collect();
        }
        extra = &extra[(4 + len).min(extra.len())..];
    }
    Vec::new()
}

struct CrcReader<R> {
    inner: R,
    crc: crc32fast::Hasher,
    count: u64,
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut le = [0u8; 8];
    le.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(le)
}

/// Builds archives the way torch (ZIP64, stored) and numpy (stored or deflated) do.
#[cfg(test)]
pub(super) mod testing {
    use flate2::{Compression, write::DeflateEncoder};
    use std::io::Write;

    pub(in super::super) fn build(entries: &[(&str, &[u8], bool)], zip64: bool) -> Vec<u8> {
        let (mut out, mut dir) = (Vec::new(), Vec::new());
        for &(name, data, deflate) in entries {
            let crc = crc32fast::hash(data);
            let body = if deflate {
                let mut enc = DeflateEncoder::new(Vec::new(), Compression::default());
                enc.write_all(data).expect("deflate");
                enc.finish().expect("deflate")
            } else {
                data.to_vec()
            };
            let method: u16 = if deflate { 8 } else { 0 };
            let offset = out.len() as u32;
            out.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00");
            out.extend_from_slice(&method.to_le_bytes());
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&(body.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&body);

            // In ZIP64 mode the offset always goes through the extra field, as miniz does.
            let extra: Vec<u8> = if zip64 {
                [
                    &1u16.to_le_bytes()[..],
                    &8u16.to_le_bytes(),
                    &u64::from(offset).to_le_bytes(),
                ]
                .concat()
            } else {
                Vec::new()
            };
            dir.extend_from_slice(b"PK\x01\x02\x2d\x00\x2d\x00\x00\x00");
            dir.extend_from_slice(&method.to_le_bytes());
            dir.extend_from_slice(&[0; 4]);
            dir.extend_from_slice(&crc.to_le_bytes());
            dir.extend_from_slice(&(body.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(name.len() as u16).to_le_bytes());
            dir.extend_from_slice(&(extra.len() as u16).to_le_bytes());
            dir.extend_from_slice(&[0; 10]);
            let offset = if zip64 { u32::MAX } else { offset };
            dir.extend_from_slice(&offset.to_le_bytes());
            dir.extend_from_slice(name.as_bytes());
            dir.extend_from_slice(&extra);
        }
        let (dir_at, count) = (out.len() as u64, entries.len() as u64);
        out.extend_from_slice(&dir);
        if zip64 {
            let end64_at = out.len() as u64;
            out.extend_from_slice(b"PK\x06\x06");
            out.extend_from_slice(&44u64.to_le_bytes());
            out.extend_from_slice(&[0x2d, 0, 0x2d, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            for v in [count, count, dir.len() as u64, dir_at] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(b"PK\x06\x07\x00\x00\x00\x00");
            out.extend_from_slice(&end64_at.to_le_bytes());
            out.extend_from_slice(&1u32.to_le_bytes());
        }
        out.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00");
        let (n16, len32, at32) = if zip64 {
            (u16::MAX, u32::MAX, u32::MAX)
        } else {
            (count as u16, dir.len() as u32, dir_at as u32)
        };
        out.extend_from_slice(&n16.to_le_bytes());
        out.extend_from_slice(&n16.to_le_bytes());
        out.extend_from_slice(&len32.to_le_bytes());
        out.extend_from_slice(&at32.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }
}

#[cfg(test)]
#[path = "zip_tests.rs"]
mod tests;
