#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = rigwatch::probe::parse_meminfo(&String::from_utf8_lossy(data));
});
