#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = rigwatch::probe::sample::parse_panes(&String::from_utf8_lossy(data));
});
