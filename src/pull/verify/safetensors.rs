//! safetensors: an 8-byte little-endian header length N, N bytes of JSON, then the data region.
//!
//! Proves, reading only the header (a 100 GB file costs one small read): N is sane and fits the
//! file; the header is a JSON object (starting `{`, as the reference loader demands); each tensor
//! has a known dtype, an integer shape and `data_offsets` whose span is exactly its size; and the
//! spans tile the data region with no gap, no overlap and nothing left over, which is what the
//! reference loader requires, so a truncated or padded copy fails. Cannot prove: the tensor bytes
//! are the ones written (the format has no checksum; NaNs and flipped bits load fine).

use super::{Checked, corrupt, counted, human_bytes, read_exact_or};
use serde_json::{Map, Value};
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
    if header.first() != Some(&b'{') {
        return Err(corrupt("header (byte 8) does not start with '{'"));
    }
    let header: Map<String, Value> = serde_json::from_slice(&header)
        .map_err(|e| corrupt(format!("header JSON (bytes 8..{data_at}): {e}")))?;

    let mut spans = Vec::new();
    for (name, info) in &header {
        if name == "__metadata__" {
            let all_strings = info
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string));
            if !all_strings {
                return Err(corrupt("__metadata__ is not an object of strings"));
            }
            continue;
        }
        let (begin, end) =
            tensor(info, data_len).map_err(|r| corrupt(format!("tensor '{name}': {r}")))?;
        spans.push((begin, end, name));
    }
    spans.sort();
    let mut covered = 0;
    let mut previous: Option<&String> = None;
    for &(begin, end, name) in &spans {
        if begin != covered {
            let what = match previous {
                Some(p) if begin < covered => format!("overlaps '{p}', which ends at {covered}"),
                _ => format!("leaves data bytes {covered}..{begin} unused"),
            };
            return Err(corrupt(format!(
                "tensor '{name}' at data_offsets [{begin}, {end}] {what}"
            )));
        }
        covered = end;
        previous = Some(name);
    }
    if covered != data_len {
        return Err(corrupt(format!(
            "tensors cover {covered} bytes but the data region (from byte {data_at}) has \
             {data_len}"
        )));
    }
    Ok(format!(
        "safetensors: {}, {} of data",
        counted(spans.len() as u64, "tensor", "tensors"),
        human_bytes(data_len)
    ))
}

/// The tensor's byte span within the data region, or why it is not one.
fn tensor(info: &Value, data_len: u64) -> Result<(u64, u64), String> {
    let dtype = info["dtype"].as_str().ok_or("no string 'dtype'")?;
    let bits = dtype_bits(dtype).ok_or_else(|| format!("unknown dtype '{dtype}'"))?;
    let shape = &info["shape"];
    let dims = shape.as_array().ok_or("no array 'shape'")?;
    let mut numel: u64 = 1;
    for dim in dims {
        let dim = dim
            .as_u64()
            .ok_or_else(|| format!("shape {shape} is not non-negative integers"))?;
        numel = numel.checked_mul(dim).ok_or("shape overflows")?;
    }
    let offsets = info["data_offsets"]
        .as_array()
        .map(|a| a.iter().map(Value::as_u64).collect::<Vec<_>>());
    let Some([Some(begin), Some(end)]) = offsets.as_deref() else {
        return Err("'data_offsets' is not [begin, end]".into());
    };
    let (begin, end) = (*begin, *end);
    if begin > end {
        return Err(format!("data_offsets [{begin}, {end}] run backwards"));
    }
    if end > data_len {
        return Err(format!(
            "data_offsets [{begin}, {end}] run past the end of the {data_len}-byte data region"
        ));
    }
    let nbits = u128::from(numel) * u128::from(bits);
    if nbits % 8 != 0 || nbits / 8 != u128::from(end - begin) {
        return Err(format!(
            "shape {shape} of {dtype} needs {} bytes but data_offsets [{begin}, {end}] hold {}",
            nbits.div_ceil(8),
            end - begin
        ));
    }
    Ok((begin, end))
}

/// Sizes in bits, because the newest dtypes (F4, F6) pack several elements per byte.
fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" | "C64" => 64,
        _ => return None,
    })
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
            "tensor 'step': data_offsets [32, 40] run past the end of the 39-byte data region"
        );
    }

    #[test]
    fn offsets_past_end_fail() {
        let v = verdict(
            "m.safetensors",
            &file(TENSORS, &[(0, 24), (24, 32), (32, 4000)], 40),
        );
        assert_eq!(
            reason(&v),
            "tensor 'step': data_offsets [32, 4000] run past the end of the 40-byte data region"
        );
    }

    #[test]
    fn overlap_gap_and_leftover_fail() {
        let overlap = file(TENSORS, &[(0, 24), (16, 24), (24, 32)], 32);
        assert_eq!(
            reason(&verdict("m.safetensors", &overlap)),
            "tensor 'b' at data_offsets [16, 24] overlaps 'w', which ends at 24"
        );
        let gap = file(TENSORS, &[(0, 24), (26, 34), (34, 42)], 42);
        assert_eq!(
            reason(&verdict("m.safetensors", &gap)),
            "tensor 'b' at data_offsets [26, 34] leaves data bytes 24..26 unused"
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
        assert_eq!(
            reason(&verdict("m.safetensors", &wrong_size)),
            "tensor 'w': shape [2,3] of F32 needs 24 bytes but data_offsets [0, 20] hold 20"
        );
        let unknown = file(&[("x", "F128", &[1])], &[(0, 16)], 16);
        assert_eq!(
            reason(&verdict("m.safetensors", &unknown)),
            "tensor 'x': unknown dtype 'F128'"
        );
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
            "header JSON (bytes 8..212): key must be a string at line 1 column 2"
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
