#![no_main]
//! The built-in png check (src/pull/verify), seeded with corpus/verify_png.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("loss.png", data));
