#![no_main]

use libfuzzer_sys::fuzz_target;
use rigwatch::probe::frame::{CycleAssembler, RawCycle, parse_once};

/// The nonce the seed corpus is framed with (`@@rw-fz`).
const NONCE: &str = "fz";

// The one-shot parser, then the streaming assembler fed line by line the way the GPU stream
// is: it keeps going after a malformed frame and carries slow sections between cycles.
fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse_once(NONCE, &text);
    let mut assembler = CycleAssembler::new(NONCE);
    let mut last = RawCycle::default();
    for line in text.lines() {
        if let Ok(Some(mut cycle)) = assembler.push(line) {
            cycle.fill_from(&last);
            last = cycle;
        }
    }
});
