#![no_main]

use libfuzzer_sys::fuzz_target;
use rigwatch::probe::{APPS_QUERY_FIELDS, parse_compute_apps};

// The whole input against the built-in field list; then its first line as a field list
// (`a,b,c`, as after `--query-compute-apps=`) for the rest.
fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_compute_apps(APPS_QUERY_FIELDS, &text);
    if let Some((fields, rest)) = text.split_once('\n') {
        let fields: Vec<&str> = fields.split(',').collect();
        let _ = parse_compute_apps(&fields, rest);
    }
});
