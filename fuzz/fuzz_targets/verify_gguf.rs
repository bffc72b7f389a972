#![no_main]
//! The built-in gguf check (src/pull/verify), seeded with corpus/verify_gguf.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("model.gguf", data));
