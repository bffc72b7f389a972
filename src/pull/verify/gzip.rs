//! gzip streams that are not tar archives (`train.log.gz`, `data.jsonl.gz`).
//!
//! Proves: every member of the stream inflates to its end and matches the CRC-32 and length its
//! trailer records (flate2 checks both), so a cut or a flipped byte fails. Cannot prove: what the
//! inflated bytes mean; they are not checked as the format the inner name says.

use super::{Checked, human_bytes};
use flate2::bufread::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufReader};

pub(super) fn check(file: &mut File, len: u64) -> Checked {
    let mut r = MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file));
    let inflated = io::copy(&mut r, &mut io::sink())?;
    Ok(format!(
        "gzip: {} inflates to {}, CRC-32 matches",
        human_bytes(len),
        human_bytes(inflated)
    ))
}
