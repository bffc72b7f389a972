//! `df -PB1` (bytes) and `df -Pi` (inodes), merged per mount point; or both from one GNU
//! `df --output` call, which the probe asks first (one process instead of two).
//!
//! Both, because storage fails on the dimension nobody watches: a disk at 34 % bytes can be out
//! of inodes. `-P` keeps one line per mount; the rows are read by their shape (three numbers
//! and a percentage), not by splitting on spaces, since mount paths may contain spaces.

use super::ParseError;
use super::text::{lines, quoted};
use serde::Serialize;

const PROBE_BYTES: &str = "df -PB1";
const PROBE_INODES: &str = "df -Pi";
const PROBE_OUTPUT: &str = "df --output";
/// The columns the probe asks `df --output` for, in order.
pub const OUTPUT_COLUMNS: &str =
    "source,fstype,size,used,avail,pcent,itotal,iused,iavail,ipcent,target";

/// One mount from `df -PB1`. A `-` in a column is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DfBytes {
    pub filesystem: String,
    pub mount: String,
    pub total_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub avail_bytes: Option<u64>,
}

/// One mount from `df -Pi`. Filesystems without inode accounting (vfat, btrfs, some overlays)
/// report a total of 0 or `-`; all three are then `None`, since 0 of 0 is not "full".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DfInodes {
    pub filesystem: String,
    pub mount: String,
    pub total: Option<u64>,
    pub used: Option<u64>,
    pub free: Option<u64>,
}

/// A mount with both dimensions, each `None` where its `df` run did not list the mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    pub mount: String,
    pub filesystem: String,
    pub bytes: Option<DfBytes>,
    pub inodes: Option<DfInodes>,
}

pub fn parse_df_bytes(text: &str) -> Result<Vec<DfBytes>, ParseError> {
    Ok(rows(PROBE_BYTES, text)?
        .into_iter()
        .map(|r| DfBytes {
            filesystem: r.filesystem,
            mount: r.mount,
            total_bytes: r.numbers[0],
            used_bytes: r.numbers[1],
            avail_bytes: r.numbers[2],
        })
        .collect())
}

pub fn parse_df_inodes(text: &str) -> Result<Vec<DfInodes>, ParseError> {
    Ok(rows(PROBE_INODES, text)?
        .into_iter()
        .map(|r| {
            let counted = matches!(r.numbers[0], Some(n) if n > 0);
            let keep = |n: Option<u64>| n.filter(|_| counted);
            DfInodes {
                filesystem: r.filesystem,
                mount: r.mount,
                total: keep(r.numbers[0]),
                used: keep(r.numbers[1]),
                free: keep(r.numbers[2]),
            }
        })
        .collect())
}

/// `df -B1 --output=` [`OUTPUT_COLUMNS`]: per row the source, its type, bytes (three counts and
/// a percentage), inodes (the same), then the mount, which may hold spaces.
pub fn parse_df_output(text: &str) -> Result<Vec<Mount>, ParseError> {
    let mut bytes = Vec::new();
    let mut inodes = Vec::new();
    for (line, row) in lines(PROBE_OUTPUT, text)? {
        if row.starts_with("Filesystem") || row.starts_with("df: ") {
            continue;
        }
        let bad = || {
            let why = format!(
                "expected `<fs> <type> <n> <n> <n> <n>% <n> <n> <n> <n>% <mount>`, got {}",
                quoted(row)
            );
            ParseError::new(PROBE_OUTPUT, line, why)
        };
        // The bytes half is a `-P` row once the type is set aside; the inodes half follows it.
        let first = parse_row(row).ok_or_else(bad)?;
        let source = first
            .filesystem
            .rsplit_once(' ')
            .map(|(s, _type)| s.trim_end().to_string())
            .ok_or_else(bad)?;
        let second = parse_row(&format!("{source} {}", first.mount)).ok_or_else(bad)?;
        let counted = matches!(second.numbers[0], Some(n) if n > 0);
        let keep = |n: Option<u64>| n.filter(|_| counted);
        bytes.push(DfBytes {
            filesystem: source.clone(),
            mount: second.mount.clone(),
            total_bytes: first.numbers[0],
            used_bytes: first.numbers[1],
            avail_bytes: first.numbers[2],
        });
        inodes.push(DfInodes {
            filesystem: source,
            mount: second.mount,
            total: keep(second.numbers[0]),
            used: keep(second.numbers[1]),
            free: keep(second.numbers[2]),
        });
    }
    Ok(merge_df(bytes, inodes))
}

/// Joins the two listings by mount point, in `bytes` order, then mounts only `inodes` listed.
/// When a mount point is listed twice (one mount stacked on another) the later line wins,
/// because that is the filesystem a path there reaches.
pub fn merge_df(bytes: Vec<DfBytes>, inodes: Vec<DfInodes>) -> Vec<Mount> {
    let mut out: Vec<Mount> = Vec::new();
    for b in bytes {
        let m = Mount {
            mount: b.mount.clone(),
            filesystem: b.filesystem.clone(),
            bytes: Some(b),
            inodes: None,
        };
        match out.iter_mut().find(|o| o.mount == m.mount) {
            Some(o) => *o = m,
            None => out.push(m),
        }
    }
    for i in inodes {
        match out.iter_mut().find(|o| o.mount == i.mount) {
            Some(o) => o.inodes = Some(i),
            None => out.push(Mount {
                mount: i.mount.clone(),
                filesystem: i.filesystem.clone(),
                bytes: None,
                inodes: Some(i),
            }),
        }
    }
    out
}

struct Row {
    filesystem: String,
    mount: String,
    numbers: [Option<u64>; 3],
}

fn rows(probe: &'static str, text: &str) -> Result<Vec<Row>, ParseError> {
    let mut out = Vec::new();
    for (line, row) in lines(probe, text)? {
        // The header, and df's own complaints about mounts it cannot stat (it prints them,
        // exits 1 and still lists the rest).
        if row.starts_with("Filesystem") || row.starts_with("df: ") {
            continue;
        }
        out.push(parse_row(row).ok_or_else(|| {
            let why = format!(
                "expected `<fs> <n> <n> <n> <n>% <mount>`, got {}",
                quoted(row)
            );
            ParseError::new(probe, line, why)
        })?);
    }
    Ok(out)
}

/// Finds the first run of three counts and a percentage after the filesystem name; what is
/// before is the filesystem, what is after (spaces and all) is the mount.
fn parse_row(row: &str) -> Option<Row> {
    let spans = tokens(row);
    let count = |s: &str| s == "-" || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    let percent = |s: &str| s == "-" || s.strip_suffix('%').is_some_and(count);
    let word = |&(a, b): &(usize, usize)| row.get(a..b).unwrap_or("");
    let at = (1..spans.len()).find(|&i| {
        spans.get(i..i + 4).is_some_and(|w| {
            w.iter().take(3).all(|s| count(word(s))) && w.get(3).is_some_and(|s| percent(word(s)))
        })
    })?;
    let first = spans.get(at)?.0;
    let last = spans.get(at + 3)?.1;
    let mount = row.get(last..)?.trim();
    if mount.is_empty() {
        return None;
    }
    let n = |k: usize| spans.get(at + k).and_then(|s| word(s).parse::<u64>().ok());
    Some(Row {
        filesystem: row.get(..first)?.trim().to_owned(),
        mount: mount.to_owned(),
        numbers: [n(0), n(1), n(2)],
    })
}

/// Byte spans of the whitespace-separated words of `s`.
fn tokens(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (true, Some(a)) => {
                out.push((a, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_with_spaces_and_dash_columns_handwritten() {
        let text = "Filesystem 1-blocks Used Available Capacity Mounted on\n\
                    //nas/share 1000 400 600 40% /mnt/my data 2\n\
                    df: /run/user/1000/doc: Operation not permitted\n\
                    autofs - - - - /net\n";
        let d = parse_df_bytes(text).expect("parses");
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].mount, "/mnt/my data 2");
        assert_eq!(d[0].used_bytes, Some(400));
        assert_eq!((d[1].mount.as_str(), d[1].total_bytes), ("/net", None));
    }

    #[test]
    fn zero_inode_totals_are_unknown_not_full_handwritten() {
        let d = parse_df_inodes("/dev/sdb1 0 0 0 - /boot/efi\n").expect("parses");
        assert_eq!((d[0].total, d[0].used, d[0].free), (None, None, None));
    }

    #[test]
    fn garbage_row_is_an_error_with_its_line() {
        let err = parse_df_bytes("Filesystem x\nnonsense here\n").err();
        assert_eq!(err.map(|e| (e.probe, e.line)), Some(("df -PB1", 2)));
    }
}
