#![no_main]
//! The built-in npz check (src/pull/verify), seeded with corpus/verify_npz.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("arrays.npz", data));
