//! "Never panics": arbitrary text, arbitrary bytes (as a lossy transport would hand them over)
//! and text built from the probes' own vocabulary go into every parser.

use crate::probe::*;
use proptest::prelude::*;

/// Runs every parser on `text`; only a panic fails, any `Ok` or `Err` is fine.
fn all_parsers(text: &str) {
    let _ = parse_gpu_query(GPU_QUERY_FIELDS, text);
    let _ = parse_gpu_query(
        &["timestamp", "index", "clocks_event_reasons.sw_power_cap"],
        text,
    );
    let _ = parse_gpu_query(&[], text);
    let _ = parse_query_failure(text);
    let _ = parse_gpu_list(text);
    let _ = parse_compute_apps(APPS_QUERY_FIELDS, text);
    let _ = parse_compute_apps(&["used_memory"], text);
    let bytes = parse_df_bytes(text).unwrap_or_default();
    let inodes = parse_df_inodes(text).unwrap_or_default();
    let _ = merge_df(bytes, inodes);
    let _ = parse_uptime(text);
    let _ = parse_loadavg(text);
    let _ = parse_cpus_online(text);
    let _ = parse_meminfo(text);
    let _ = parse_boot_id(text);
    let _ = parse_tmux_ls(text);
    let _ = parse_pgrep(text);
    let _ = parse_kernel_log(text);
}

/// Fragments the parsers branch on, so random lines reach past the first check.
const WORDS: &[&str] = &[
    "0",
    "1980",
    "-1",
    "699.55 W",
    "45 %",
    "20480 MiB",
    "[N/A]",
    "[Not Supported]",
    "N/A",
    "",
    "0x0000000000000004",
    "0x",
    "Active",
    "Not Active",
    "NaN",
    "inf",
    "1e400",
    "GPU-x",
    "P0",
    "index",
    "utilization.gpu [%]",
    "2026/11/22 14:39:34.254",
    ",",
    ", ",
    " ",
    ":",
    "%",
    "-",
    "GPU 0:",
    "(UUID: ",
    ")",
    "MIG ",
    "Field \"",
    "\" is not a valid field to query.",
    "Filesystem",
    "/",
    "21%",
    "MemTotal:",
    "kB",
    "windows",
    "(created ",
    "(attached)",
    "NVRM: Xid (",
    "PCI:0000:3b:00",
    "):",
    "pid=",
    "name=",
    "Killed process ",
    " (",
    ") total-vm:",
    "anon-rss:",
    "é",
    "\u{1b}[31m",
    "\r",
    "\n",
    "\t",
    "\u{0}",
];

fn vocab_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(WORDS), 0..60).prop_map(|w| w.concat())
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        all_parsers(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        all_parsers(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn vocabulary_soup_never_panics(text in vocab_text()) {
        all_parsers(&text);
    }
}

#[test]
fn huge_input_is_refused_quickly() {
    let long_line = format!("0, {}\n", "9".repeat(MAX_LINE_BYTES * 16));
    let many_lines = "0\n".repeat(MAX_LINES + 1);
    for text in [long_line.as_str(), many_lines.as_str()] {
        let started = std::time::Instant::now();
        all_parsers(text);
        let err = parse_gpu_query(GPU_QUERY_FIELDS, text).expect_err("refused");
        assert!(
            err.reason.contains("cap") || err.reason.contains("lines"),
            "{err}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
    let err = parse_df_bytes(&long_line).expect_err("refused");
    assert_eq!((err.probe, err.line), ("df -PB1", 1));
}
