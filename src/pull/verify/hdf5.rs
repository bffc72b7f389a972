//! HDF5 (`.h5`, `.hdf5`, Keras's `.h5` and `.keras` weights written by h5py).
//!
//! Proves: the superblock is where HDF5 looks for it (byte 0, 512, 1024, ...), its version is
//! one the library writes, for versions 2 and 3 its Jenkins lookup3 checksum matches, and the
//! end-of-file address it records lies within the file: the HDF5 library refuses a file shorter
//! than that ("truncated file"), which is what a copy cut short is. Cannot prove: the object
//! tree and the datasets read back (that needs the HDF5 library). Hand-written: the superblock is
//! a few dozen bytes and no maintained pure-Rust reader exists (the `hdf5` crate links libhdf5).

use super::{Checked, corrupt, human_bytes, read_full};
use std::fs::File;
use std::io::{Seek, SeekFrom};

pub(super) const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let (base, block) = find_superblock(file, len)?;
    let version = block[8];
    let (offsets, eof) = match version {
        0 | 1 => {
            let size = usize::from(block[13]);
            // Addresses follow the fixed fields: base, free-space, end-of-file, driver info.
            let first = if version == 0 { 24 } else { 28 };
            (size, address(&block, first + 2 * size, size))
        }
        2 | 3 => {
            let size = usize::from(block[9]);
            let sum_at = 12 + 4 * size;
            let stored = block
                .get(sum_at..sum_at + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()));
            if stored != Some(lookup3(&block[..sum_at.min(block.len())])) {
                return Err(corrupt(format!(
                    "superblock (version {version}, byte {base}) fails its checksum"
                )));
            }
            (size, address(&block, 12 + 2 * size, size))
        }
        v => {
            return Err(corrupt(format!(
                "superblock version {v} is not one HDF5 writes"
            )));
        }
    };
    if !matches!(offsets, 2 | 4 | 8) {
        return Err(corrupt(format!(
            "superblock says addresses are {offsets} bytes"
        )));
    }
    let eof = eof.ok_or_else(|| corrupt("superblock is cut short"))?;
    let end = base.saturating_add(eof);
    if end > len {
        return Err(corrupt(format!(
            "truncated: the superblock says the file ends at byte {end}, but it has {len}"
        )));
    }
    Ok(format!(
        "hdf5: superblock version {version}, its end-of-file address within the {} file",
        human_bytes(len)
    ))
}

/// The superblock may sit after a user block of 512 × 2ⁿ bytes.
fn find_superblock(file: &mut File, len: u64) -> Result<(u64, Vec<u8>), super::Problem> {
    let mut at = 0u64;
    while at < len {
        file.seek(SeekFrom::Start(at))?;
        let mut block = vec![0u8; 96];
        let got = read_full(file, &mut block)?;
        block.truncate(got);
        if block.starts_with(SIGNATURE) {
            if got < 16 {
                return Err(corrupt("file ends inside the superblock"));
            }
            return Ok((at, block));
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    Err(corrupt(
        "no HDF5 superblock signature at byte 0, 512, 1024, ...",
    ))
}

fn address(block: &[u8], at: usize, size: usize) -> Option<u64> {
    let bytes = block.get(at..at + size)?;
    Some(
        bytes
            .iter()
            .rev()
            .fold(0u64, |n, &b| (n << 8) | u64::from(b)),
    )
}

/// Bob Jenkins' lookup3 `hashlittle` with an initial value of 0, as HDF5's `H5_checksum_lookup3`.
fn lookup3(key: &[u8]) -> u32 {
    let init = 0xdead_beef_u32.wrapping_add(key.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |k: &[u8], i: usize| {
        let mut w = [0u8; 4];
        let part = k.get(i..).unwrap_or_default();
        let n = part.len().min(4);
        w[..n].copy_from_slice(&part[..n]);
        u32::from_le_bytes(w)
    };
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(word(k, 0));
        b = b.wrapping_add(word(k, 4));
        c = c.wrapping_add(word(k, 8));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    a = a.wrapping_add(word(k, 0));
    b = b.wrapping_add(word(k, 4));
    c = c.wrapping_add(word(k, 8));
    final_mix(&mut a, &mut b, &mut c);
    c
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    for (x, y, z, r) in [
        (0, 2, 1, 4),
        (1, 0, 2, 6),
        (2, 1, 0, 8),
        (0, 2, 1, 16),
        (1, 0, 2, 19),
        (2, 1, 0, 4),
    ] {
        let mut v = [*a, *b, *c];
        v[x] = v[x].wrapping_sub(v[y]);
        v[x] ^= v[y].rotate_left(r);
        v[y] = v[y].wrapping_add(v[z]);
        [*a, *b, *c] = v;
    }
}

fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    for (x, y, r) in [
        (2, 1, 14),
        (0, 2, 11),
        (1, 0, 25),
        (2, 1, 16),
        (0, 2, 4),
        (1, 0, 14),
        (2, 1, 24),
    ] {
        let mut v = [*a, *b, *c];
        v[x] ^= v[y];
        v[x] = v[x].wrapping_sub(v[y].rotate_left(r));
        [*a, *b, *c] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from Jenkins' own driver (`driver5` in lookup3.c): hashlittle("", 0) and
    /// hashlittle("Four score and seven years ago", 0).
    #[test]
    fn lookup3_matches_the_reference() {
        assert_eq!(lookup3(b""), 0xdead_beef);
        assert_eq!(lookup3(b"Four score and seven years ago"), 0x1777_0551);
    }
}
