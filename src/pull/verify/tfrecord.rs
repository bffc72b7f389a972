//! TFRecord files, and TensorBoard's event files (`events.out.tfevents.*`), which are TFRecords
//! of Event protos.
//!
//! Proves, as TensorFlow's own reader does: the file is a whole number of records; each record's
//! 8-byte length matches its masked CRC-32C, and each record's data matches its own, so a cut or
//! a flipped byte anywhere fails. Memory stays small whatever a record's size. Cannot prove: the
//! records parse as protos; a copy cut exactly between two records is a shorter valid file.
//! Hand-written: the framing is 16 bytes a record; the `crc32c` crate does the checksum.

use super::{Checked, corrupt, counted, human_bytes, read_exact_or, read_full};
use std::fs::File;
use std::io::BufReader;

const MASK_DELTA: u32 = 0xa282_ead8;

/// TensorFlow stores CRCs "masked", so that a CRC of data holding CRCs is not degenerate.
fn masked(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut r = BufReader::with_capacity(1 << 16, file);
    let (mut at, mut records) = (0u64, 0u64);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let mut head = [0u8; 12];
        match read_full(&mut r, &mut head)? {
            0 => break,
            12 => {}
            n => {
                return Err(corrupt(format!(
                    "record {} at byte {at}: file ends {n} bytes into its 12-byte header",
                    records + 1
                )));
            }
        }
        let record = records + 1;
        let size = u64::from_le_bytes(head[..8].try_into().unwrap_or_default());
        let stored = u32::from_le_bytes(head[8..].try_into().unwrap_or_default());
        if masked(crc32c::crc32c(&head[..8])) != stored {
            return Err(corrupt(format!(
                "record {record} at byte {at}: its length's CRC-32C does not match"
            )));
        }
        let left = len.saturating_sub(at + 12);
        if size.saturating_add(4) > left {
            return Err(corrupt(format!(
                "record {record} at byte {at} claims {size} bytes, but only {left} remain"
            )));
        }
        let mut crc = 0u32;
        let mut todo = size;
        while todo > 0 {
            let n = todo.min(chunk.len() as u64) as usize;
            read_exact_or(&mut r, &mut chunk[..n], "a record")?;
            crc = crc32c::crc32c_append(crc, &chunk[..n]);
            todo -= n as u64;
        }
        let mut tail = [0u8; 4];
        read_exact_or(&mut r, &mut tail, "a record's CRC")?;
        if masked(crc) != u32::from_le_bytes(tail) {
            return Err(corrupt(format!(
                "record {record} at byte {at}: its {size} bytes do not match their CRC-32C"
            )));
        }
        at += 16 + size;
        records += 1;
    }
    if records == 0 {
        return Err(corrupt("empty: no records"));
    }
    Ok(format!(
        "tfrecord: {}, {}, every CRC-32C matches",
        counted(records, "record", "records"),
        human_bytes(len)
    ))
}

/// For the mutation tests: frames `data` as one record.
#[cfg(test)]
pub(super) fn record(data: &[u8]) -> Vec<u8> {
    let size = (data.len() as u64).to_le_bytes();
    let mut out = size.to_vec();
    out.extend(masked(crc32c::crc32c(&size)).to_le_bytes());
    out.extend(data);
    out.extend(masked(crc32c::crc32c(data)).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{detail, reason, verdict};
    use super::*;

    #[test]
    fn records_are_counted_and_each_checksum_checked() {
        let file = [record(b"first"), record(b""), record(&[7u8; 70_000])].concat();
        let v = verdict("events.out.tfevents.1.host", &file);
        assert!(detail(&v).starts_with("tfrecord: 3 records"), "{v:?}");
        let mut bad = file.clone();
        bad[14] ^= 1;
        let v = verdict("train.tfrecord", &bad);
        assert!(
            reason(&v).contains("record 1 at byte 0: its 5 bytes"),
            "{v:?}"
        );
        let mut bad = file.clone();
        bad[21] ^= 1;
        let v = verdict("train.tfrecord", &bad);
        assert!(
            reason(&v).contains("record 2 at byte 21: its length's"),
            "{v:?}"
        );
        let v = verdict("x.tfrecords", &file[..file.len() - 3]);
        assert!(
            reason(&v).contains("record 3 at byte 37 claims 70000"),
            "{v:?}"
        );
        let v = verdict("x.tfrecords", b"");
        assert_eq!(reason(&v), "empty: no records");
    }
}
