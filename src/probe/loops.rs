//! The live monitor's two nvidia-smi loops (the GPUs each period, the compute apps each slow
//! period), started in the background by the probe loop's own shell, so watching a box costs it
//! one login shell (conda's block: ~0.15 CPU-s) instead of one per stream. They write into the
//! probe's channel, each line tagged and framed (`monitor::demux` reads it back):
//!
//! * `"\n<marker>:<tag> <line>\n"` in one `printf`, the line cut to [`TAGGED_LINE_MAX`] bytes first,
//!   so each frame is one write of less than PIPE_BUF (4096) and never torn by another writer;
//! * when nvidia-smi ends, `<marker> end <status>` as a tagged line, and the loop starts it again
//!   on the box: after 2 s, or after [`NO_GPU_RECHECK_SECS`] where there is no nvidia-smi (127);
//! * when the channel goes, the loops end at their next write, and the probe's exit takes them
//!   down with it (`kill 0` where its shell leads its own process group, as sshd's sessions
//!   do; else the two loops by pid).

use std::fmt::Write as _;
use std::time::Duration;

use super::frame::marker;
use super::script::sh_quote;

/// The tags of the GPU loop's lines and of the compute-apps loop's.
pub const GPU_TAG: char = 'g';
pub const APPS_TAG: char = 'a';

/// How a tagged line begins, after its frame's newline: the printf in [`stream_loops`] writes it.
pub fn tag_prefix(marker: &str, tag: char) -> String {
    format!("{marker}:{tag} ")
}

/// The longest line a loop sends, cut on the box: a frame stays under PIPE_BUF.
pub const TAGGED_LINE_MAX: usize = 3900;
/// A box without nvidia-smi is looked at again this rarely (drivers do get installed).
pub const NO_GPU_RECHECK_SECS: u32 = 300;
/// The wait before a loop whose nvidia-smi ended starts it again.
pub const RESTART_SECS: u32 = 2;

/// What the loops ask nvidia-smi, and how often.
pub struct Loops<'a> {
    pub gpu_fields: &'a [&'a str],
    pub gpu_every: Duration,
    pub apps_fields: &'a [&'a str],
    pub apps_every: Duration,
}

/// The shell lines that start the loops, to go before the probe script in the same `sh -c`.
pub fn stream_loops(nonce: &str, loops: &Loops<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "M={}", sh_quote(&marker(nonce)));
    // At exit the loops go too: the whole process group where this shell leads its own (sshd
    // gives each session one, so it holds nothing but what this command started), else the
    // two loops by pid, whose nvidia-smi then ends at its next write.
    s.push_str(
        "trap 'g=; read -r _ _ _ _ g _ < /proc/$$/stat 2>/dev/null; \
         if [ \"$g\" = \"$$\" ]; then kill 0; else kill $LG $LA 2>/dev/null; fi' EXIT\n",
    );
    let _ = writeln!(
        s,
        "tg() {{ while IFS= read -r l || [ -n \"$l\" ]; do \
         printf '\\n%s:%s %.{TAGGED_LINE_MAX}s\\n' \"$M\" \"$1\" \"$l\" || exit 1; done; }}"
    );
    let _ = writeln!(
        s,
        "lp() {{ t=$1; shift; while :; do {{ \
         if command -v \"$1\" >/dev/null 2>&1; then \"$@\" </dev/null 2>&1; r=$?; else r=127; fi; \
         printf '%s end %s\\n' \"$M\" \"$r\"; \
         if [ \"$r\" = 127 ]; then sleep {NO_GPU_RECHECK_SECS}; else sleep {RESTART_SECS}; fi; \
         }} | tg \"$t\" || exit 0; done; }}"
    );
    let ms = |d: Duration| d.as_millis().max(100);
    let _ = writeln!(
        s,
        "lp {} nvidia-smi --query-gpu={} --format=csv,nounits -lms {} & LG=$!",
        GPU_TAG,
        loops.gpu_fields.join(","),
        ms(loops.gpu_every)
    );
    let _ = writeln!(
        s,
        "lp {} nvidia-smi --query-compute-apps={} --format=csv -lms {} & LA=$!",
        APPS_TAG,
        loops.apps_fields.join(","),
        ms(loops.apps_every)
    );
    s
}

/// What a tagged line says: a line nvidia-smi printed, or that it ended with this status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopLine<'a> {
    Output(&'a str),
    Ended(Option<u32>),
}

/// Reads a tagged line's payload; `marker` is this channel's.
pub fn loop_line<'a>(marker: &str, payload: &'a str) -> LoopLine<'a> {
    match payload
        .strip_prefix(marker)
        .and_then(|rest| rest.strip_prefix(" end "))
    {
        Some(status) => LoopLine::Ended(status.trim().parse().ok()),
        None => LoopLine::Output(payload),
    }
}
