#![no_main]
//! The built-in hdf5 check (src/pull/verify), seeded with corpus/verify_hdf5.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("model.h5", data));
