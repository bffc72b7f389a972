#![no_main]
//! The built-in torch check (src/pull/verify), seeded with corpus/verify_torch.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("pytorch_model.bin", data));
