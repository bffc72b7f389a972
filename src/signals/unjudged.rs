//! Judgements that need a whole probe section, when the box printed more of it than rigwatch
//! holds: each says it could not judge, as a warning of its own, instead of judging the part
//! that was kept ("disks: could not judge: the df section was cut at 64 KiB").

use super::{HostFacts, Severity, Signal, SignalKind};

/// Each section that can be cut, and the judgement that needs all of it.
const NEEDS_WHOLE: &[(&str, &str)] = &[
    ("df", "disks"),
    ("dfi", "disks"),
    ("apps", "VRAM holders"),
    ("run", "the run's process"),
    ("panes", "the run's session"),
    ("kids", "the run's session"),
    ("tmux", "tmux sessions"),
    ("kernel", "Xid and OOM events"),
    ("qfinal", "the queue's finished cells"),
    ("qproc", "the queue's runner"),
    ("qlog", "the queue's cell log"),
];

/// Whether the latest reading's `section` was cut: a judgement that needs all of it is not made.
pub fn is_cut(f: &HostFacts<'_>, section: &str) -> bool {
    f.history
        .latest_host()
        .is_some_and(|h| h.sample.cut.iter().any(|c| c.section == section))
}

/// One warning per judgement whose section was cut in the latest reading.
pub fn unjudged(f: &HostFacts<'_>) -> Vec<Signal> {
    let Some(latest) = f.history.latest_host() else {
        return Vec::new();
    };
    let mut said: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for cut in &latest.sample.cut {
        let what = NEEDS_WHOLE
            .iter()
            .find(|(section, _)| *section == cut.section)
            .map_or("its judgements", |(_, what)| *what);
        if said.contains(&what) {
            continue;
        }
        said.push(what);
        out.push(Signal::new(
            SignalKind::NotJudged,
            Severity::Warn,
            format!(
                "{what}: could not judge: the {} section was {}; what is shown is its beginning",
                crate::sanitize::line(&cut.section, 40),
                cut.why
            ),
        ));
    }
    out
}
