#![no_main]
//! The built-in tar check (src/pull/verify), seeded with corpus/verify_tar.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("code.tar.gz", data));
