#![no_main]
//! The built-in jsonl check (src/pull/verify), seeded with corpus/verify_jsonl.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("evals.jsonl", data));
