#![no_main]
//! The built-in csv check (src/pull/verify), seeded with corpus/verify_csv.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("loss.csv", data));
