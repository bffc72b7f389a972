#![no_main]
//! The built-in safetensors check (src/pull/verify), seeded with corpus/verify_safetensors.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("model.safetensors", data));
