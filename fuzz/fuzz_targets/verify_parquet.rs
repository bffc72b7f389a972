#![no_main]
//! The built-in parquet check (src/pull/verify), seeded with corpus/verify_parquet.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("preds.parquet", data));
