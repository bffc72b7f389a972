//! torch.save's zip format (`.pt`, `.pth`, `.ckpt`).
//!
//! Proves: the zip is intact and every entry's CRC-32 matches (zip.rs); every entry sits under
//! one top-level folder `<prefix>/`; `<prefix>/data.pkl` is a protocol 2+ pickle that walks
//! cleanly to a final STOP (pickle.rs); every persistent id in it is the tuple torch writes,
//! `('storage', torch.<Type>Storage, key, location, numel)`, its `<prefix>/data/<key>` record
//! exists, and for the storage types torch.save writes it holds exactly numel × element size
//! bytes. Cannot prove: that the classes the pickle names import on the loading machine, or that
//! each tensor's offset/size/stride fits its storage (that needs the reduce calls evaluated).
//!
//! The legacy (pre-1.6, non-zip) format is a pickle stream followed by raw storages with no
//! index or checksum; without evaluating the pickle there is nothing to check it against, so it
//! is `Unchecked` (the user's verify command decides), not `Fails` (it is not known to be bad).

use super::pickle::{self, Value};
use super::zip::Archive;
use super::{Checked, Problem, corrupt, counted, human_bytes, read_full};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Seek, SeekFrom};

/// What `torch.save(_use_new_zipfile_serialization=False)` writes first: the magic number
/// 0x1950a86a20f9469cfc6c pickled as a protocol 2 LONG1.
pub(super) const LEGACY_MAGIC: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut head = [0u8; LEGACY_MAGIC.len()];
    let got = read_full(file, &mut head)?;
    let head = &head[..got];
    if head.starts_with(LEGACY_MAGIC) {
        return Err(Problem::Unverifiable);
    }
    if !head.starts_with(b"PK\x03\x04") {
        return Err(corrupt(format!(
            "starts with {head:02x?}: neither a torch zip archive nor a legacy torch.save pickle"
        )));
    }
    file.seek(SeekFrom::Start(0))?;
    let archive = Archive::open(file, len)?;
    let first = archive
        .entries
        .first()
        .ok_or_else(|| corrupt("archive has no entries"))?;
    let prefix = first.name.split('/').next().unwrap_or_default();
    let pkl = format!("{prefix}/data.pkl");
    let data_dir = format!("{prefix}/data/");
    let mut records = HashMap::new();
    let mut walked = None;
    for entry in &archive.entries {
        if !entry.name.starts_with(prefix) || entry.name.as_bytes().get(prefix.len()) != Some(&b'/')
        {
            return Err(corrupt(format!(
                "entry '{}' is outside the archive folder '{prefix}/'",
                entry.name
            )));
        }
        if entry.name == pkl {
            walked = Some(archive.read(file, entry, pickle::walk)?);
        } else {
            archive.read(file, entry, |_| Ok(()))?;
        }
        if let Some(key) = entry.name.strip_prefix(&data_dir) {
            records.insert(key, entry.size);
        }
    }
    let walked = walked.ok_or_else(|| corrupt(format!("no '{pkl}' entry")))?;
    if walked.protocol.is_none_or(|p| p < 2) {
        return Err(corrupt(format!(
            "'{pkl}' does not start with a protocol 2+ PROTO opcode"
        )));
    }
    let mut storages = BTreeMap::new();
    for pid in &walked.persistent_ids {
        let (class, key, numel) = storage_ref(&pid.id).ok_or_else(|| {
            corrupt(format!(
                "'{pkl}' byte {}: persistent id is not ('storage', type, key, location, numel)",
                pid.at
            ))
        })?;
        let held = *records.get(key).ok_or_else(|| {
            corrupt(format!(
                "'{pkl}' byte {}: no record '{data_dir}{key}'",
                pid.at
            ))
        })?;
        if let Some(size) = element_size(class) {
            if numel.checked_mul(size) != Some(held) {
                return Err(corrupt(format!(
                    "storage '{key}': {numel} × {class} needs {} bytes, '{data_dir}{key}' holds \
                     {held}",
                    u128::from(numel) * u128::from(size)
                )));
            }
        }
        storages.insert(key, held);
    }
    Ok(format!(
        "torch zip: 1 pickle, {} ({}), {} CRC-checked",
        counted(storages.len() as u64, "storage", "storages"),
        human_bytes(storages.values().sum()),
        counted(archive.entries.len() as u64, "entry", "entries")
    ))
}

fn storage_ref(id: &Value) -> Option<(&str, &str, u64)> {
    let Value::Tuple(items) = id else { return None };
    match items.iter().map(|v| &**v).collect::<Vec<_>>()[..] {
        [
            Value::Str(tag),
            Value::Global(class),
            Value::Str(key),
            Value::Str(_location),
            Value::Int(numel),
        ] if tag == "storage" => Some((class.as_str(), key.as_str(), u64::try_from(*numel).ok()?)),
        _ => None,
    }
}

/// Bytes per element for the storage classes torch.save writes. Newer dtypes (float8, uint16,
/// ...) are saved as `UntypedStorage` with numel counted in bytes. Other classes get only the
/// presence check.
fn element_size(class: &str) -> Option<u64> {
    Some(match class.strip_prefix("torch.")? {
        "UntypedStorage" | "ByteStorage" | "CharStorage" | "BoolStorage" | "QInt8Storage"
        | "QUInt8Storage" | "QUInt4x2Storage" | "QUInt2x4Storage" => 1,
        "HalfStorage" | "BFloat16Storage" | "ShortStorage" => 2,
        "FloatStorage" | "IntStorage" | "QInt32Storage" => 4,
        "DoubleStorage" | "LongStorage" | "ComplexFloatStorage" => 8,
        "ComplexDoubleStorage" => 16,
        _ => return None,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::Verdict;
    use super::super::tests::{detail, reason, verdict};
    use super::super::zip::testing::build;

    fn unicode(s: &str) -> Vec<u8> {
        [&b"X"[..], &(s.len() as u32).to_le_bytes(), s.as_bytes()].concat()
    }

    /// A state dict `{name: tensor}` as torch's pickler writes it: `_rebuild_tensor_v2` over a
    /// persistent storage id, with 'storage' and the location memoized after the first tensor.
    fn state_dict(tensors: &[(&str, &str, &str, u8)]) -> Vec<u8> {
        let mut p = b"\x80\x02}q\x00(".to_vec();
        for (i, &(name, class, key, numel)) in tensors.iter().enumerate() {
            p.extend(unicode(name));
            p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
            p.extend(if i == 0 {
                [unicode("storage"), b"q\x01".to_vec()].concat()
            } else {
                b"h\x01".to_vec()
            });
            p.extend(format!("ctorch\n{class}\n").bytes());
            p.extend(unicode(key));
            p.extend(if i == 0 {
                [unicode("cpu"), b"q\x02".to_vec()].concat()
            } else {
                b"h\x02".to_vec()
            });
            p.extend_from_slice(&[b'K', numel, b't', b'Q', b'K', 0, b'K', numel, 0x85]);
            p.extend_from_slice(b"K\x01\x85\x89ccollections\nOrderedDict\n)RtR");
        }
        p.extend_from_slice(b"u.");
        p
    }

    const TENSORS: &[(&str, &str, &str, u8)] =
        &[("w", "FloatStorage", "0", 6), ("b", "LongStorage", "1", 2)];

    fn checkpoint(pickle: &[u8], w: &[u8], extra: &[(&str, &[u8], bool)]) -> Vec<u8> {
        let mut entries: Vec<(&str, &[u8], bool)> = vec![
            ("archive/data.pkl", pickle, false),
            ("archive/byteorder", b"little", false),
            ("archive/data/0", w, false),
            ("archive/data/1", &[1; 16], false),
            ("archive/version", b"3\n", false),
        ];
        entries.extend_from_slice(extra);
        build(&entries, true)
    }

    pub(in super::super) fn good() -> Vec<u8> {
        checkpoint(&state_dict(TENSORS), &[0; 24], &[])
    }

    #[test]
    fn real_shaped_checkpoint_loads() {
        let v = verdict("model.pt", &good());
        assert_eq!(
            detail(&v),
            "torch zip: 1 pickle, 2 storages (40 B), 5 entries CRC-checked"
        );
        let deflated = build(
            &[
                ("m/data.pkl", &state_dict(&TENSORS[..1]), true),
                ("m/data/0", &[9; 24], true),
            ],
            false,
        );
        assert_eq!(
            detail(&verdict("m.pth", &deflated)),
            "torch zip: 1 pickle, 1 storage (24 B), 2 entries CRC-checked"
        );
    }

    #[test]
    fn truncated_by_one_byte_fails() {
        let bytes = good();
        let v = verdict("model.pt", &bytes[..bytes.len() - 1]);
        assert!(reason(&v).starts_with("no end-of-central-directory record"));
    }

    #[test]
    fn any_flipped_storage_byte_is_a_crc_mismatch() {
        let good = good();
        let at = good
            .windows(14)
            .position(|w| w == b"archive/data/0")
            .expect("entry")
            + 14;
        for i in at..at + 24 {
            let mut bytes = good.clone();
            bytes[i] ^= 0x40;
            let v = verdict("model.pt", &bytes);
            assert!(
                reason(&v).starts_with("entry 'archive/data/0': CRC-32 mismatch"),
                "{v:?}"
            );
        }
    }

    #[test]
    fn storage_size_must_match_numel_times_element_size() {
        let v = verdict("model.pt", &checkpoint(&state_dict(TENSORS), &[0; 20], &[]));
        assert_eq!(
            reason(&v),
            "storage '0': 6 × torch.FloatStorage needs 24 bytes, 'archive/data/0' holds 20"
        );
    }

    #[test]
    fn referenced_storage_must_exist() {
        let pickle = state_dict(&[("w", "FloatStorage", "0", 6), ("x", "FloatStorage", "7", 1)]);
        let v = verdict("model.pt", &checkpoint(&pickle, &[0; 24], &[]));
        assert!(
            reason(&v).ends_with(": no record 'archive/data/7'"),
            "{v:?}"
        );
    }

    #[test]
    fn structure_is_enforced() {
        let stray = checkpoint(&state_dict(TENSORS), &[0; 24], &[("other/x", b"", false)]);
        assert_eq!(
            reason(&verdict("m.pt", &stray)),
            "entry 'other/x' is outside the archive folder 'archive/'"
        );
        let no_pickle = build(&[("archive/data/0", &[0; 4], false)], true);
        assert_eq!(
            reason(&verdict("m.pt", &no_pickle)),
            "no 'archive/data.pkl' entry"
        );
        let mut cut = state_dict(TENSORS);
        cut.truncate(cut.len() - 1);
        assert_eq!(
            reason(&verdict("m.pt", &checkpoint(&cut, &[0; 24], &[]))),
            "entry 'archive/data.pkl': file ends inside the pickle (no STOP)"
        );
        let bare_pid = b"\x80\x02K\x01Q.";
        assert_eq!(
            reason(&verdict("m.pt", &checkpoint(bare_pid, &[0; 24], &[]))),
            "'archive/data.pkl' byte 4: persistent id is not ('storage', type, key, location, numel)"
        );
    }

    #[test]
    fn legacy_format_is_unchecked_and_garbage_fails() {
        let legacy = [super::LEGACY_MAGIC, b".\x80\x02}q\x00."].concat();
        assert_eq!(verdict("old.pt", &legacy), Verdict::Unchecked);
        assert_eq!(
            reason(&verdict("x.pt", b"<html>")),
            "starts with [3c, 68, 74, 6d, 6c, 3e]: neither a torch zip archive nor a legacy \
             torch.save pickle"
        );
    }
}
