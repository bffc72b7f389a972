#![no_main]
//! The built-in jpeg check (src/pull/verify), seeded with corpus/verify_jpeg.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("sample.jpg", data));
