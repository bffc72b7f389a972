#![no_main]
//! The built-in tfrecord check (src/pull/verify), seeded with corpus/verify_tfrecord.

use libfuzzer_sys::fuzz_target;

mod verify_common;

fuzz_target!(|data: &[u8]| verify_common::check("events.out.tfevents.1.box", data));
