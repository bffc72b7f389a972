//! JPEG (sample images), decoded by `zune-jpeg`, the decoder the `image` crate uses.
//!
//! Proves: the file ends with the EOI marker every writer puts last, and the whole image decodes
//! in strict mode, where a premature end of the entropy-coded data or a bad marker is an error
//! rather than grey pixels (most viewers show a cut JPEG with its bottom missing, and say
//! nothing; even strict decoding fills in the last few dozen bytes, hence the EOI check). Cannot
//! prove: the pixels are the ones written (JPEG has no checksum, and a flipped bit inside the
//! scan often still decodes). A camera file with data after EOI fails; runs do not write those.

use super::{Checked, Problem, corrupt, human_bytes, read_exact_or};
use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use zune_jpeg::JpegDecoder;
use zune_jpeg::zune_core::options::DecoderOptions;

/// Decoding holds the whole picture; larger JPEGs are not what a training run saves.
const MAX_LEN: u64 = 256 << 20;

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    if len > MAX_LEN {
        return Err(Problem::Unverifiable);
    }
    let mut last = [0u8; 2];
    file.seek(SeekFrom::Start(len.saturating_sub(2)))?;
    read_exact_or(file, &mut last, "the EOI marker")?;
    if last != [0xff, 0xd9] {
        return Err(corrupt(
            "does not end with the EOI marker (FF D9): cut short, or data follows the image",
        ));
    }
    file.seek(SeekFrom::Start(0))?;
    let options = DecoderOptions::default().set_strict_mode(true);
    let mut decoder =
        JpegDecoder::new_with_options(BufReader::with_capacity(1 << 16, file), options);
    let pixels = decoder.decode().map_err(|e| corrupt(format!("{e:?}")))?;
    let (w, h) = decoder.dimensions().unwrap_or_default();
    if pixels.is_empty() {
        return Err(corrupt("no pixels decoded"));
    }
    Ok(format!("jpeg: {w}×{h} decoded, {}", human_bytes(len)))
}
