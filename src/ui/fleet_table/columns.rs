//! Which columns the fleet overview shows at a width, in what order, and how wide the host
//! names get: pure, so the drop order is tested at every width.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Name,
    Platform,
    Link,
    Run,
    Clock,
    Power,
    Vram,
    Util,
    Cpu,
    Disk,
    Danger,
    Signal,
    Queue,
}

/// Columns with their width, most important first. As the terminal narrows they drop from the
/// end of this list, one at a time and always in this order (docs/dashboard.md says it): a column never
/// comes back at a narrower width. The host's width here is the least it gets; it grows to the
/// names (see `name_width`).
const COLUMNS: &[(Col, &str, u16)] = &[
    (Col::Name, "HOST", 14),
    (Col::Link, "LINK", 10),
    (Col::Run, "RUN", 9),
    (Col::Signal, "NEEDS YOU", 24),
    // Sized so a 160-column terminal keeps POWER/CAP and UTIL beside a queue.
    (Col::Queue, "QUEUE", 16),
    (Col::Danger, "NEXT CLOCK", 16),
    (Col::Clock, "SM CLOCK/MAX", 14),
    (Col::Vram, "VRAM (GPUS)", 14),
    (Col::Disk, "DISK B/INODE", 13),
    (Col::Power, "POWER/CAP", 14),
    (Col::Util, "UTIL", 5),
    (Col::Cpu, "LOAD/CPUS RAM", 13),
    (Col::Platform, "PLATFORM", 11),
];

/// Left to right: who and how it is, its queue and next clock, then the bars, then NEEDS YOU.
/// The host's own load and RAM stand beside its GPUs' use, so a data loader starving the GPUs
/// reads as low UTIL next to a full LOAD/CPUS. The bars stand together just before NEEDS YOU:
/// a row whose urgent line is too long for it takes their room (`urgent`), and only theirs.
const DISPLAY_ORDER: [Col; 13] = [
    Col::Name,
    Col::Platform,
    Col::Link,
    Col::Run,
    Col::Queue,
    Col::Danger,
    Col::Clock,
    Col::Power,
    Col::Vram,
    Col::Util,
    Col::Cpu,
    Col::Disk,
    Col::Signal,
];

/// The host column's width: the longest name, from 14 up to a fifth of the table (names longer
/// than that are shortened in the middle, where they differ least).
pub fn name_width<'a>(names: impl Iterator<Item = &'a str>, width: u16) -> u16 {
    let longest = names.map(|n| n.chars().count()).max().unwrap_or(0);
    let most = (width / 5).max(14);
    u16::try_from(longest).unwrap_or(u16::MAX).clamp(14, most)
}

/// The least NEEDS YOU gets: 24 cells up to 164 columns (the bars of a 160-column terminal
/// stay), then every further column goes to it up to 60 cells at 200 (a wide terminal shows the
/// line that says what is wrong before more bars). It grows at most one cell per column of
/// width, so a column never comes back narrower.
pub fn signal_min(width: u16) -> u16 {
    width.saturating_sub(140).clamp(24, 60)
}

/// Columns that fit `width`, taken from the head of [`COLUMNS`] until one does not fit; the
/// queue column only when some host has a queue, and the `sorted` column always (a sort must
/// show its key: sorted by GPU util at 80 columns, UTIL stays).
pub fn fitted(width: u16, queues: bool, names: u16, sorted: Col) -> Vec<(Col, &'static str, u16)> {
    let forced = COLUMNS
        .iter()
        .copied()
        .find(|(c, _, _)| *c == sorted && !matches!(c, Col::Name | Col::Signal));
    let wanted = |c: &Col| (queues || *c != Col::Queue) && forced.is_none_or(|f| f.0 != *c);
    let mut chosen: Vec<(Col, &'static str, u16)> = Vec::new();
    let mut used = 2u16;
    for (col, title, w) in forced
        .into_iter()
        .chain(COLUMNS.iter().copied().filter(|(c, _, _)| wanted(c)))
    {
        let w = match col {
            Col::Name => names,
            Col::Signal => signal_min(width),
            _ => w,
        };
        if used + w >= width && col != Col::Name && Some((col, title, w)) != forced {
            break;
        }
        chosen.push((col, title, w));
        used += w + 1;
    }
    let mut ordered: Vec<(Col, &str, u16)> = DISPLAY_ORDER
        .iter()
        .filter_map(|c| chosen.iter().find(|(x, _, _)| x == c).copied())
        .collect();
    // The signal column takes whatever is left.
    if let Some(last) = ordered.iter_mut().find(|(c, _, _)| *c == Col::Signal) {
        last.2 += width.saturating_sub(used);
    }
    ordered
}

/// `name` in `width` characters: whole when it fits, else its head and tail around a `…`, so
/// `h100-rebooted-12` and `h100-rebooted-13` stay told apart by the suffix that differs.
pub fn middle_cut(name: &str, width: usize) -> String {
    let n = name.chars().count();
    if n <= width {
        return name.to_string();
    }
    if width < 3 {
        return name.chars().take(width).collect();
    }
    let tail = (width - 1) / 2;
    let head = width - 1 - tail;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(width: u16, queues: bool, by_platform: bool) -> Vec<Col> {
        let sorted = if by_platform {
            Col::Platform
        } else {
            Col::Signal
        };
        fitted(width, queues, 14, sorted)
            .into_iter()
            .map(|(c, _, _)| c)
            .collect()
    }

    #[test]
    fn columns_drop_in_one_order_and_never_come_back_narrower() {
        for queues in [false, true] {
            for width in 30..260u16 {
                let (narrow, wide) = (cols(width, queues, false), cols(width + 1, queues, false));
                assert!(
                    narrow.iter().all(|c| wide.contains(c)),
                    "a column shown at {width} but not at {}",
                    width + 1
                );
                // What shows is a head of the priority list.
                let priority: Vec<Col> = COLUMNS
                    .iter()
                    .map(|(c, _, _)| *c)
                    .filter(|c| queues || *c != Col::Queue)
                    .collect();
                assert!(
                    priority[..narrow.len()].iter().all(|c| narrow.contains(c)),
                    "{width}"
                );
            }
        }
        assert!(
            cols(80, false, true).contains(&Col::Platform),
            "sorted by it"
        );
        assert!(!cols(80, false, false).contains(&Col::Platform));
        assert!(!cols(80, false, false).contains(&Col::Util));
        let by_util: Vec<Col> = fitted(80, false, 14, Col::Util)
            .into_iter()
            .map(|(c, _, _)| c)
            .collect();
        assert!(
            by_util.contains(&Col::Util),
            "sorted by GPU util: {by_util:?}"
        );
    }

    /// The order the book gives, seen by narrowing the table one column at a time.
    #[test]
    fn columns_drop_in_the_documented_order() {
        let title = |c: Col| COLUMNS.iter().find(|(x, _, _)| *x == c).map(|(_, t, _)| *t);
        let mut dropped: Vec<&str> = Vec::new();
        let mut shown = cols(400, true, false);
        // Below the 80 columns the dashboard is made for, so the last to go (QUEUE) is seen.
        for width in (64..400u16).rev() {
            let now = cols(width, true, false);
            dropped.extend(
                shown
                    .iter()
                    .filter(|c| !now.contains(c))
                    .filter_map(|c| title(*c)),
            );
            shown = now;
        }
        assert_eq!(
            dropped,
            [
                "PLATFORM",
                "LOAD/CPUS RAM",
                "UTIL",
                "POWER/CAP",
                "DISK B/INODE",
                "VRAM (GPUS)",
                "SM CLOCK/MAX",
                "NEXT CLOCK",
                "QUEUE"
            ]
        );
        assert_eq!(shown, [Col::Name, Col::Link, Col::Run, Col::Signal]);
        assert_eq!(
            cols(80, true, false),
            [Col::Name, Col::Link, Col::Run, Col::Queue, Col::Signal],
            "what stays at 80 columns, the narrowest the dashboard is made for: a queue's \
             progress beside what needs you"
        );
    }

    #[test]
    fn long_names_keep_the_suffix_that_tells_them_apart() {
        let names = ["h100-rebooted-12", "h100-rebooted-13"];
        let w = name_width(names.iter().copied(), 80);
        assert_eq!(w, 16, "the column grows to the names");
        assert_eq!(
            name_width(["a-very-long-host-name-indeed-9"].into_iter(), 80),
            16
        );
        let cut: Vec<String> = names.iter().map(|n| middle_cut(n, 14)).collect();
        assert_eq!(cut, ["h100-re…ted-12", "h100-re…ted-13"]);
        assert_eq!(middle_cut("short", 14), "short");
        assert_eq!(middle_cut("abcdef", 2), "ab");
    }
}
