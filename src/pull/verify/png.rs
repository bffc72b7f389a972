//! PNG (plots: loss curves, confusion matrices, samples), decoded by the `png` crate.
//!
//! Proves: every chunk's CRC matches, the image data inflates and unfilters to exactly the rows
//! the header declares, and the stream reaches IEND, so a cut or a flipped byte anywhere fails.
//! Rows are decoded one at a time, so memory stays at one row. Cannot prove: the picture is the
//! one drawn (a PNG has no checksum over what the writer meant).

use super::{Checked, Problem, corrupt, human_bytes};
use std::fs::File;
use std::io::BufReader;

fn problem(e: png::DecodingError) -> Problem {
    match e {
        png::DecodingError::IoError(e) => e.into(),
        other => corrupt(readable(&other.to_string())),
    }
}

/// The crate names chunks by their Debug form (`ChunkType { type: IDAT, critical: true, ... }`);
/// a person needs only the four letters.
fn readable(message: &str) -> String {
    let Some(start) = message.find("ChunkType { type: ") else {
        return message.to_string();
    };
    let rest = &message[start + "ChunkType { type: ".len()..];
    let name: String = rest
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let after = rest.find('}').map_or("", |i| &rest[i + 1..]);
    format!("{}{name}{after}", &message[..start])
}

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut decoder = png::Decoder::new(BufReader::with_capacity(1 << 16, file));
    decoder.set_limits(png::Limits { bytes: 1 << 30 });
    let mut reader = decoder.read_info().map_err(problem)?;
    let (width, height) = (reader.info().width, reader.info().height);
    let mut rows = 0u64;
    while reader.next_row().map_err(problem)?.is_some() {
        rows += 1;
    }
    if rows == 0 {
        return Err(corrupt("no image rows decoded"));
    }
    reader.finish().map_err(problem)?;
    Ok(format!(
        "png: {width}×{height}, {}, every chunk's CRC matches",
        human_bytes(len)
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn chunk_names_are_short() {
        assert_eq!(
            super::readable(
                "CRC error: expected 0x1 have 0x2 while decoding ChunkType { type: IDAT, \
                 critical: true, private: false, reserved: false, safecopy: false } chunk."
            ),
            "CRC error: expected 0x1 have 0x2 while decoding IDAT chunk."
        );
        assert_eq!(super::readable("plain"), "plain");
    }
}
