#![no_main]
//! The built-in npy check (src/pull/verify), seeded with corpus/verify_npy.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("embeddings.npy", data));
