#![no_main]
//! The built-in json check (src/pull/verify), seeded with corpus/verify_json.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("metrics.json", data));
