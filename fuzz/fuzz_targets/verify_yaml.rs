#![no_main]
//! The built-in yaml check (src/pull/verify), seeded with corpus/verify_yaml.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("config.yaml", data));
