#![no_main]
//! The one parser of lengths of time a person types (`silence`, `watch --digest`, `--for`,
//! `--timeout`): any text is an answer, never a panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = rigwatch::config::typed::duration(text);
        let _ = rigwatch::config::typed::seconds(text);
    }
});
