#![no_main]
//! The built-in gzip check (src/pull/verify), seeded with corpus/verify_gzip.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("train.log.gz", data));
