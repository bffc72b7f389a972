#![no_main]

use libfuzzer_sys::fuzz_target;
use rigwatch::probe::frame::CycleAssembler;
use rigwatch::probe::sample::HostSample;

/// The nonce the seed corpus is framed with (`@@rw-fz`).
const NONCE: &str = "fz";

// Framed probe output → every whole cycle → the typed sample the dashboard reads.
fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut assembler = CycleAssembler::new(NONCE);
    for line in text.lines() {
        if let Ok(Some(cycle)) = assembler.push(line) {
            let _ = HostSample::from_cycle(&cycle);
        }
    }
});
