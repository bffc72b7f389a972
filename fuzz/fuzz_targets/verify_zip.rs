#![no_main]
//! The built-in zip check (src/pull/verify), seeded with corpus/verify_zip.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("logs.zip", data));
