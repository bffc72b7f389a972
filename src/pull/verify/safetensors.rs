//! safetensors: an 8-byte little-endian header length N, N bytes of JSON, then the data region.
//!
//! Proves, reading only the header (a 100 GB file costs one small read): N is sane and fits the
//! file, and the header passes Hugging Face's own `safetensors` crate: every tensor has a known
//! dtype and an integer shape whose size is exactly its `data_offsets` span, and the spans tile
//! the data from byte 0 with no gap or overlap. Then the spans must end exactly where the file
//! does, as the reference loader requires, so a truncated or padded copy fails. Cannot prove: the
//! tensor bytes are the ones written (the format has no checksum; NaNs and flipped bits load).
//! The crate's `SafeTensors::read_metadata` wants the whole file in memory, so the header is read
//! here and handed to the crate's `Metadata`, whose deserialisation runs the same validation.

use super::{Checked, corrupt, counted, human_bytes, read_exact_or};
use safetensors::tensor::Metadata;
use std::fs::File;

/// The reference implementation's limit; a larger "header" is damage, not a model.
const MAX_HEADER: u64 = 100_000_000;

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    if len < 8 {
        return Err(corrupt(format!(
            "file is {len} bytes, too short for the 8-byte header length"
        )));
    }
    let mut n = [0u8; 8];
    read_exact_or(file, &mut n, "the header length")?;
    let n = u64::from_le_bytes(n);
    if n > MAX_HEADER {
        return Err(corrupt(format!(
            "header length {n} (bytes 0..8) exceeds the 100 MB limit"
        )));
    }
    let data_len = (len - 8).checked_sub(n).ok_or_else(|| {
        corrupt(format!(
            "header length {n} (bytes 0..8) runs past the end of the {len}-byte file"
        ))
    })?;
    let mut header = vec![0; n as usize];
    read_exact_or(file, &mut header, "the header")?;
    let data_at = 8 + n;
    let meta: Metadata = serde_json::from_slice(&header)
        .map_err(|e| corrupt(format!("header (bytes 8..{data_at}): {e}")))?;
    let covered = meta.data_len() as u64;
    if covered != data_len {
        return Err(corrupt(format!(
            "tensors cover {covered} bytes but the data region (from byte {data_at}) has \
             {data_len}{}",
            if covered > data_len {
                ": the copy is cut short"
            } else {
                ""
            }
        )));
    }
    Ok(format!(
        "safetensors: {}, {} of data",
        counted(meta.tensors().len() as u64, "tensor", "tensors"),
        human_bytes(data_len)
    ))
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{detail, reason, verdict, write};
    use super::super::{Verdict, verify_file};

    /// Lays the tensors out back to back, as every writer does, then lets a test bend the header.
    fn file(tensors: &[(&str, &str, &[u64])], offsets: &[(u64, u64)], data_len: usize) -> Vec<u8> {
        let entries: Vec<String> = tensors
            .iter()
            .zip(offsets)
            .map(|((name, dtype, shape), (b, e))| {
                format!(
                    r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{b},{e}]}}"#
                )
            })
            .collect();
        let header = format!(
            r#"{{"__metadata__":{{"format":"pt"}},{}}}  "#,
            entries.join(",")
        );
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend(std::iter::repeat_n(0x3c, data_len));
        out
    }

    const TENSORS: &[(&str, &str, &[u64])] = &[
        ("w", "F32", &[2, 3]),
        ("b", "BF16", &[4]),
        ("step", "I64", &[]),
    ];
    const OFFSETS: &[(u64, u64)] = &[(0, 24), (24, 32), (32, 40)];

    pub(in super::super) fn sample() -> Vec<u8> {
        file(TENSORS, OFFSETS, 40)
    }

    #[test]
    fn well_formed_file_loads() {
        let v = verdict("m.safetensors", &file(TENSORS, OFFSETS, 40));
        assert_eq!(detail(&v), "safetensors: 3 tensors, 40 B of data");
        let packed = file(&[("q", "F4", &[3, 2])], &[(0, 3)], 3);
        assert_eq!(
            detail(&verdict("q.safetensors", &packed)),
            "safetensors: 1 tensor, 3 B of data"
        );
    }

    #[test]
    fn huge_file_is_checked_from_its_header_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let gib = 1u64 << 30;
        let path = write(
            &dir,
            "big.safetensors",
            &file(&[("x", "U8", &[gib])], &[(0, gib)], 0),
        );
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        f.set_len(std::fs::metadata(&path).expect("stat").len() + gib)
            .expect("sparse grow");
        let v = verify_file(&path).expect("readable");
        assert_eq!(detail(&v), "safetensors: 1 tensor, 1.0 GiB of data");
    }

    #[test]
    fn truncated_by_one_byte_fails() {
        let bytes = file(TENSORS, OFFSETS, 40);
        let v = verdict("m.safetensors", &bytes[..bytes.len() - 1]);
        assert_eq!(
            reason(&v),
            "tensors cover 40 bytes but the data region (from byte 212) has 39: the copy is \
             cut short"
        );
    }

    #[test]
    fn offsets_past_end_fail() {
        let v = verdict(
            "m.safetensors",
            &file(TENSORS, &[(0, 24), (24, 32), (32, 4000)], 40),
        );
        assert!(
            reason(&v).starts_with("header (bytes 8..214): invalid shape, data type, or offset"),
            "{v:?}"
        );
    }

    #[test]
    fn overlap_gap_and_leftover_fail() {
        let overlap = file(TENSORS, &[(0, 24), (16, 24), (24, 32)], 32);
        let v = verdict("m.safetensors", &overlap);
        assert!(
            reason(&v).contains("invalid offset for tensor `b`"),
            "{v:?}"
        );
        let gap = file(TENSORS, &[(0, 24), (26, 34), (34, 42)], 42);
        let v = verdict("m.safetensors", &gap);
        assert!(
            reason(&v).contains("invalid offset for tensor `b`"),
            "{v:?}"
        );
        let leftover = file(TENSORS, OFFSETS, 41);
        assert_eq!(
            reason(&verdict("m.safetensors", &leftover)),
            "tensors cover 40 bytes but the data region (from byte 212) has 41"
        );
    }

    #[test]
    fn header_damage_fails() {
        let wrong_size = file(TENSORS, &[(0, 20), (20, 28), (28, 36)], 36);
        let v = verdict("m.safetensors", &wrong_size);
        assert!(
            reason(&v).contains("invalid shape, data type, or offset"),
            "{v:?}"
        );
        let unknown = file(&[("x", "F128", &[1])], &[(0, 16)], 16);
        let v = verdict("m.safetensors", &unknown);
        assert!(reason(&v).contains("unknown variant `F128`"), "{v:?}");
        let mut huge = file(TENSORS, OFFSETS, 40);
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            reason(&verdict("m.safetensors", &huge)),
            "header length 18446744073709551615 (bytes 0..8) exceeds the 100 MB limit"
        );
        let mut past = file(TENSORS, OFFSETS, 40);
        past[..8].copy_from_slice(&1000u64.to_le_bytes());
        assert_eq!(
            reason(&verdict("m.safetensors", &past)),
            "header length 1000 (bytes 0..8) runs past the end of the 252-byte file"
        );
        let mut broken = file(TENSORS, OFFSETS, 40);
        broken[9] = b'x';
        assert_eq!(
            reason(&verdict("m.safetensors", &broken)),
            "header (bytes 8..212): key must be a string at line 1 column 2"
        );
        assert_eq!(
            verdict("m.safetensors", b"\x01\x00"),
            Verdict::Fails {
                format: super::super::Format::Safetensors,
                reason: "file is 2 bytes, too short for the 8-byte header length".into(),
            }
        );
    }
}
