#![no_main]

use libfuzzer_sys::fuzz_target;
use rigwatch::probe::{GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY, parse_gpu_query};

// The whole input against both built-in field lists; then its first line as a field list
// (`a,b,c`, as after `--query-gpu=`) for the rest, so odd and repeated fields are reached too.
fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_gpu_query(GPU_QUERY_FIELDS, &text);
    let _ = parse_gpu_query(GPU_QUERY_FIELDS_LEGACY, &text);
    if let Some((fields, rest)) = text.split_once('\n') {
        let fields: Vec<&str> = fields.split(',').collect();
        let _ = parse_gpu_query(&fields, rest);
    }
});
