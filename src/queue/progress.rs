//! Progress of the running cell from the tail of its log.
//!
//! The tail is cleaned first: ANSI escape sequences (CSI, OSC, two-byte) and other control
//! characters are dropped, then the text is cut at every `\n` **and** `\r`, so each tqdm refresh
//! is its own segment and the last refresh is simply the last segment. Within each kind of
//! observation the last one in the tail wins.
//!
//! Understood by default (case-insensitive where it makes sense):
//! - tqdm bars `45%|████▌     | 450/1000 [01:23<01:40, 5.4it/s]` (also `1.2k/50k` unit-scaled,
//!   ascii bars). A bar whose description names validation/eval/test/predict/sanity is ignored.
//!   A bar with a smaller total that starts while a larger bar is unfinished is a nested (eval)
//!   bar and is ignored too: HF Trainer's evaluation bar does not move the training bar back.
//! - PyTorch Lightning: `Epoch 3:  45%|…| 450/1000 […]` (the epoch in the description is
//!   0-based: this is epoch 4 of N) and the Rich bar `Epoch 3/49 ━━━━━ 450/1000 …` (0-based, with
//!   `max_epochs - 1`: epoch 4 of 50).
//! - Keras-style bars `450/1000 [=====>....] - ETA: 1:40`.
//! - `Epoch 3/50`, `epoch 3/50`, `Epoch: 3/50`, `Epoch [3/50]` (1-based).
//! - `epoch=3`, `epoch: 3` (1-based current epoch; `epoch=0` is taken as the first epoch) and
//!   HF Trainer's `{'loss': 0.41, 'learning_rate': 4e-05, 'epoch': 1.53}` (a decimal number is
//!   epochs *completed*). These need a total: from the log (`Num Epochs = 3`, HF's header) or
//!   the cell's `epochs` passed to [`parse_progress_with`]; without one they give no epoch.
//! - `step 1200/50000`, `Step: 1200/50000`, `Step [100/600]`.
//!
//! `fraction` is the fraction of the whole **cell** done, in `[0, 1]`:
//! - the latest bar or step counter, if it counts the whole run (HF's bar, a lone `step X/Y`);
//! - if that counter is per epoch, `(completed epochs + counter fraction) / total epochs`.
//!   A counter is per epoch when its bar description names an epoch, when it shares a line with
//!   `Epoch N/T` (`Epoch [1/5], Step [100/600]`), or, for a bar, when an integer epoch line came
//!   before it in the tail (a `print("Epoch 3/50")` loop around `tqdm(loader)`, or Keras);
//! - with no counter, `completed epochs / total epochs` (`Epoch 3/50` alone → 2/50).
//!
//! User regexes (named groups `cur` and `total`) are tried on every segment and their last match
//! wins over the defaults: it sets `fraction = cur / total` (they count the whole cell) and
//! `step` when both are integers; `epoch` still comes from the defaults. A regex without both
//! groups never matches. Text that shows no progress gives `None`; nothing here panics.

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::Serialize;

/// Where the running cell is, as far as its log tells.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Progress {
    /// (current epoch, 1-based; total epochs).
    pub epoch: Option<(u32, u32)>,
    /// (current, total) of the latest step counter or progress bar.
    pub step: Option<(u64, u64)>,
    /// Fraction of the whole cell done, in `[0, 1]`.
    pub fraction: Option<f64>,
}

/// [`parse_progress_with`] without an epoch total from the queue.
pub fn parse_progress(tail: &str, user: &[Regex]) -> Option<Progress> {
    parse_progress_with(tail, user, None)
}

/// Parse a log tail; `epochs_total` is the cell's `epochs` from the queue file when known, used
/// when the log prints an epoch without its total (a total printed in the log wins).
pub fn parse_progress_with(
    tail: &str,
    user: &[Regex],
    epochs_total: Option<u32>,
) -> Option<Progress> {
    let mut scan = Scan::default();
    for (si, seg) in segments(tail).iter().enumerate() {
        scan.segment(si, seg, user);
    }
    scan.finish(epochs_total)
}

/// Position of an observation in the tail: (segment, byte offset).
type Pos = (usize, usize);

#[derive(Debug, Clone, Copy)]
enum EpochObs {
    /// 1-based current epoch with its total, printed by the log.
    Explicit { cur: u32, total: u32 },
    /// 1-based current epoch, total unknown.
    Current { cur: u32 },
    /// Epochs completed, fractional (HF Trainer).
    Completed { done: f64 },
}

#[derive(Debug, Clone, Copy)]
struct Counter {
    n: f64,
    total: f64,
    per_epoch: bool,
    pos: Pos,
}

impl Counter {
    fn frac(&self) -> f64 {
        (self.n / self.total).clamp(0.0, 1.0)
    }
}

#[derive(Debug, Default)]
struct Scan {
    epoch: Option<(EpochObs, Pos)>,
    header_total: Option<u32>,
    bar: Option<Counter>,
    step: Option<Counter>,
    user: Option<(f64, f64)>,
}

macro_rules! re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Regex> =
            LazyLock::new(|| Regex::new($pat).expect("built-in progress pattern compiles"));
    };
}

re!(
    TQDM,
    r"(?P<pct>\d{1,3}(?:\.\d+)?)%\|[^|]*\|\s*(?P<n>\d+(?:\.\d+)?[kMGT]?)/(?P<total>\d+(?:\.\d+)?[kMGT]?)"
);
re!(
    RICH,
    r"(?i)\bepoch\s+(?P<cur>\d+)/(?P<last>\d+)\s+[━╸╺─\s]+(?P<n>\d+)/(?P<total>\d+)"
);
re!(KERAS, r"^\s*(?P<n>\d+)/(?P<total>\d+)\s+\[[=>.]*\]");
re!(
    EPOCH_NT,
    r"(?i)\bepoch\s*[:=]?\s*\[?\s*(?P<cur>\d+)\s*/\s*(?P<total>\d+)"
);
re!(
    EPOCH_BARE,
    r#"(?i)\bepoch['"]?\s*[:=]\s*(?P<v>\d+(?:\.\d+)?)"#
);
re!(
    NUM_EPOCHS,
    r"(?i)\bnum(?:ber of)?[ _]epochs\s*[:=]\s*(?P<t>\d+)"
);
re!(
    STEP_NT,
    r"(?i)\bstep\s*[:=]?\s*\[?\s*(?P<cur>\d+)\s*/\s*(?P<total>\d+)"
);
re!(DESC_EPOCH, r"(?i)\bepoch\s+(?P<cur>\d+)\s*$");
re!(DESC_EVAL, r"(?i)valid|eval|test|predict|sanity|inference");

impl Scan {
    fn segment(&mut self, si: usize, seg: &str, user: &[Regex]) {
        for re in user {
            for caps in re.captures_iter(seg) {
                if let (Some(c), Some(t)) = (caps.name("cur"), caps.name("total")) {
                    let (c, t) = (c.as_str().trim(), t.as_str().trim());
                    if let (Ok(cf), Ok(tf)) = (c.parse::<f64>(), t.parse::<f64>()) {
                        if cf.is_finite() && tf.is_finite() && tf > 0.0 && cf >= 0.0 {
                            self.user = Some((cf, tf));
                        }
                    }
                }
            }
        }
        if let Some(t) = NUM_EPOCHS.captures(seg).and_then(|c| num::<u32>(&c, "t")) {
            self.header_total = Some(t).filter(|t| *t > 0);
        }
        if let Some(c) = RICH.captures_iter(seg).last() {
            if let (Some(cur), Some(last)) = (num::<u32>(&c, "cur"), num::<u32>(&c, "last")) {
                let obs = EpochObs::Explicit {
                    cur: cur.saturating_add(1),
                    total: last.saturating_add(1),
                };
                let pos = (si, c.get(0).map_or(0, |m| m.start()));
                self.epoch = Some((obs, pos));
                self.set_bar(&c, true, pos, None);
            }
            return;
        }
        let line_epoch = self.epoch_on_line(si, seg);
        self.bars_on_line(si, seg);
        if let Some(c) = STEP_NT.captures_iter(seg).last() {
            let pos = (si, c.get(0).map_or(0, |m| m.start()));
            if let Some(counter) = counter(&c, "cur", "total", line_epoch, pos) {
                self.step = Some(counter);
            }
        }
    }

    /// Epoch mentions on this segment; true when an explicit `Epoch N/T` is among them.
    fn epoch_on_line(&mut self, si: usize, seg: &str) -> bool {
        let nt = EPOCH_NT.captures_iter(seg).last().and_then(|c| {
            let cur = num::<u32>(&c, "cur")?;
            let total = num::<u32>(&c, "total").filter(|t| *t > 0)?;
            Some((EpochObs::Explicit { cur, total }, c.get(0)?.start()))
        });
        let bare = EPOCH_BARE
            .captures_iter(seg)
            .filter(|c| {
                c.get(0)
                    .is_some_and(|m| !seg[m.end()..].trim_start().starts_with('/'))
            })
            .last()
            .and_then(|c| {
                let v = c.name("v")?;
                let obs = if v.as_str().contains('.') {
                    EpochObs::Completed {
                        done: v.as_str().parse::<f64>().ok()?,
                    }
                } else {
                    EpochObs::Current {
                        cur: v.as_str().parse::<u32>().ok()?.max(1),
                    }
                };
                Some((obs, c.get(0)?.start()))
            });
        let latest = match (nt, bare) {
            (Some(a), Some(b)) => Some(if b.1 > a.1 { b } else { a }),
            (a, b) => a.or(b),
        };
        if let Some((obs, at)) = latest {
            self.epoch = Some((obs, (si, at)));
        }
        nt.is_some()
    }

    fn bars_on_line(&mut self, si: usize, seg: &str) {
        let mut prev_end = 0;
        for c in TQDM.captures_iter(seg) {
            let Some(m) = c.get(0) else { continue };
            let desc = seg.get(prev_end..m.start()).unwrap_or("");
            prev_end = m.end();
            let desc = desc.trim().trim_end_matches(':').trim();
            if DESC_EVAL.is_match(desc) {
                continue;
            }
            let pos = (si, m.start());
            let lightning = DESC_EPOCH
                .captures(desc)
                .and_then(|d| num::<u32>(&d, "cur"));
            if let Some(cur0) = lightning {
                let obs = EpochObs::Current {
                    cur: cur0.saturating_add(1),
                };
                self.epoch = Some((obs, pos));
            }
            let desc_epoch = desc.to_ascii_lowercase().contains("epoch");
            self.set_bar(&c, desc_epoch || self.epoch_is_counted(), pos, Some(desc));
        }
        if let Some(c) = KERAS.captures(seg) {
            let pos = (si, c.get(0).map_or(0, |m| m.start()));
            let per_epoch = self.epoch_is_counted();
            self.set_bar(&c, per_epoch, pos, None);
        }
    }

    /// Whether the latest epoch mention counts whole epochs (so a later bar is within one).
    fn epoch_is_counted(&self) -> bool {
        matches!(
            self.epoch,
            Some((EpochObs::Explicit { .. } | EpochObs::Current { .. }, _))
        )
    }

    fn set_bar(&mut self, c: &Captures<'_>, per_epoch: bool, pos: Pos, desc: Option<&str>) {
        let Some(new) = counter(c, "n", "total", per_epoch, pos) else {
            return;
        };
        if let (Some(old), Some(_)) = (self.bar, desc) {
            let nested = old.n < old.total && new.total < old.total && !per_epoch;
            if nested {
                return;
            }
        }
        self.bar = Some(new);
    }

    fn finish(self, epochs_total: Option<u32>) -> Option<Progress> {
        let total = |obs: &EpochObs| match obs {
            EpochObs::Explicit { total, .. } => Some(*total),
            _ => self.header_total.or(epochs_total).filter(|t| *t > 0),
        };
        // (current epoch 1-based, total, epochs completed before the current one, completed).
        let epoch = self.epoch.and_then(|(obs, _)| {
            let t = total(&obs)?;
            Some(match obs {
                EpochObs::Explicit { cur, .. } | EpochObs::Current { cur } => {
                    let done = f64::from(cur.saturating_sub(1));
                    (cur, t, done, done)
                }
                EpochObs::Completed { done } => {
                    let done = done.clamp(0.0, f64::from(t));
                    let cur = (done.floor() as u32).saturating_add(1).min(t);
                    (cur, t, done.floor(), done)
                }
            })
        });
        let inner = match (self.bar, self.step) {
            (Some(b), Some(s)) => Some(if s.pos > b.pos { s } else { b }),
            (b, s) => b.or(s),
        };
        let mut fraction = match (inner, epoch) {
            (Some(c), _) if !c.per_epoch => Some(c.frac()),
            (Some(c), Some((_, t, whole, _))) => Some((whole + c.frac()) / f64::from(t)),
            (Some(_), None) => None,
            (None, Some((_, t, _, done))) => Some(done / f64::from(t)),
            (None, None) => None,
        };
        let mut step = inner.map(|c| (c.n as u64, c.total as u64));
        if let Some((cur, tot)) = self.user {
            fraction = Some(cur / tot);
            if cur.fract() == 0.0 && tot.fract() == 0.0 {
                step = Some((cur as u64, tot as u64));
            }
        }
        let fraction = fraction
            .filter(|f| f.is_finite())
            .map(|f| f.clamp(0.0, 1.0));
        let epoch = epoch.map(|(cur, t, _, _)| (cur, t));
        if epoch.is_none() && step.is_none() && fraction.is_none() {
            return None;
        }
        Some(Progress {
            epoch,
            step,
            fraction,
        })
    }
}

fn num<T: std::str::FromStr>(c: &Captures<'_>, group: &str) -> Option<T> {
    c.name(group)?.as_str().parse::<T>().ok()
}

/// A (cur, total) counter from two capture groups; `k`/`M`/`G`/`T` suffixes (tqdm unit_scale)
/// are expanded. `None` for a zero total.
fn counter(c: &Captures<'_>, n: &str, total: &str, per_epoch: bool, pos: Pos) -> Option<Counter> {
    let n = scaled(c.name(n)?.as_str())?;
    let total = scaled(c.name(total)?.as_str())?;
    (total > 0.0 && n >= 0.0).then_some(Counter {
        n,
        total,
        per_epoch,
        pos,
    })
}

fn scaled(s: &str) -> Option<f64> {
    let (digits, mult) = match s.char_indices().last()? {
        (i, 'k') => (&s[..i], 1e3),
        (i, 'M') => (&s[..i], 1e6),
        (i, 'G') => (&s[..i], 1e9),
        (i, 'T') => (&s[..i], 1e12),
        _ => (s, 1.0),
    };
    let v = digits.parse::<f64>().ok()? * mult;
    v.is_finite().then_some(v)
}

/// The tail with escape sequences and control characters removed, cut at `\n` and `\r`.
pub fn segments(tail: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = tail.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\n' | '\r' => {
                if !cur.trim().is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
            }
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST (ESC \).
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\t' => cur.push(' '),
            c if c.is_control() => {}
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}
