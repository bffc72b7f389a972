//! Tests of `sample`, beside it so the module reads in one sitting.

use super::*;

/// 100 000 compute apps: the section is cut at its cap, and the sample says so instead of
/// passing off what fit as every process.
#[test]
fn a_cut_section_is_said_to_be_cut() {
    let nonce = "n1";
    let mut assembler = super::super::frame::CycleAssembler::new(nonce);
    let mark = super::super::frame::marker(nonce);
    let mut lines = vec![format!("{mark} cycle 1"), format!("{mark} begin apps")];
    lines.extend((0..100_000).map(|i| format!("GPU-abc, {i}, python, 100")));
    lines.push(String::new());
    lines.push(format!("{mark} end apps 0"));
    lines.push(format!("{mark} done"));
    let mut cycle = None;
    for line in &lines {
        if let Ok(Some(c)) = assembler.push(line) {
            cycle = Some(c);
        }
    }
    let sample = HostSample::from_cycle(&cycle.expect("a cycle"));
    let cut = sample
        .cut
        .iter()
        .filter(|c| c.section == "apps" && c.why.contains("cut at 64 KiB"))
        .count();
    assert_eq!(cut, 1, "{:?}", sample.cut);
}

/// The last 15 KB of a log are tqdm updates with no newline: the pane shows the bar's last
/// state, not nothing.
#[test]
fn a_cut_log_of_progress_bar_updates_shows_the_last_one() {
    let bars: String = (0..200)
        .map(|i| format!("\r 45%|████▌     | {i}/1000 [00:10<00:12, 81.2it/s]"))
        .collect();
    let cut = &bars[3..];
    assert_eq!(
        log_tail(cut.lines(), true),
        vec![" 45%|████▌     | 199/1000 [00:10<00:12, 81.2it/s]".to_string()]
    );
    // A cut into plain lines still drops the fragment it starts with.
    assert_eq!(
        log_tail("ment of a line\nstep 5\nstep 6".lines(), true),
        vec!["step 5", "step 6"]
    );
    // One long line with no newline: its end is shown rather than nothing.
    assert_eq!(log_tail("…the end".lines(), true), vec!["…the end"]);
    assert_eq!(log_tail("".lines(), true), Vec::<String>::new());
}
