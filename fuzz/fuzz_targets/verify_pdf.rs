#![no_main]
//! The built-in pdf check (src/pull/verify), seeded with corpus/verify_pdf.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("loss.pdf", data));
