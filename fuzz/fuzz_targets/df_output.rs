#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = rigwatch::probe::parse_df_output(&String::from_utf8_lossy(data));
});
