//! The real captures the demo replays, compiled in (the same files the tests use), and the few
//! scenario variants no capture shows, each derived from a capture and named for what changed.

/// The output of a capture file: its lines between `$ command` and `[exit N]`.
pub fn body(capture: &'static str) -> &'static str {
    let start = capture.find('\n').map_or(capture.len(), |i| i + 1);
    let end = capture.rfind("\n[exit ").map_or(capture.len(), |i| i + 1);
    capture.get(start..end.max(start)).unwrap_or("")
}

/// The capture's own `--query-*=` field list, as the header nvidia-smi prints with `csv`.
pub fn header_from_command(capture: &'static str) -> String {
    capture
        .lines()
        .next()
        .and_then(|l| {
            l.split_whitespace().find_map(|w| {
                w.split_once("-query-gpu=")
                    .or_else(|| w.split_once("-query-compute-apps="))
            })
        })
        .map(|(_, fields)| fields.split(',').collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// A capture as `--format=csv` prints it: taken with `noheader`, it gets its header back.
pub fn with_header(capture: &'static str) -> String {
    let text = body(capture);
    let command = capture.lines().next().unwrap_or("");
    if command.contains("noheader") {
        format!("{}\n{text}", header_from_command(capture))
    } else {
        text.to_string()
    }
}

pub const Q_IDLE: &str = include_str!("../../tests/fixtures/h100/q_idle_csv.txt");
pub const Q_LOAD: &str = include_str!("../../tests/fixtures/h100/q_load_csv.txt");
pub const LOOP_LOAD: &str = include_str!("../../tests/fixtures/h100/loop_load.txt");
pub const ZOMBIE_Q: &str = include_str!("../../tests/fixtures/h100/zombie_q.txt");
pub const Q_MULTI: &str =
    include_str!("../../tests/fixtures/handwritten/q_multi_gpu_handwritten.txt");
pub const APPS_IDLE: &str = include_str!("../../tests/fixtures/h100/apps_idle.txt");
pub const APPS_LOAD: &str = include_str!("../../tests/fixtures/h100/apps_load.txt");
pub const ZOMBIE_APPS: &str = include_str!("../../tests/fixtures/h100/zombie_apps.txt");
pub const DF_BYTES: &str = include_str!("../../tests/fixtures/h100/df_PB1.txt");
pub const DF_INODES: &str = include_str!("../../tests/fixtures/h100/df_Pi.txt");
pub const DF_INODES_FULL: &str =
    include_str!("../../tests/fixtures/handwritten/df_Pi_inodes_full_handwritten.txt");
pub const UPTIME: &str = include_str!("../../tests/fixtures/h100/proc_uptime.txt");
pub const LOADAVG: &str = include_str!("../../tests/fixtures/h100/loadavg.txt");
pub const MEMINFO: &str = include_str!("../../tests/fixtures/h100/meminfo.txt");
pub const CPUS_ONLINE: &str =
    include_str!("../../tests/fixtures/handwritten/cpus_online_handwritten.txt");
pub const TMUX_NONE: &str = include_str!("../../tests/fixtures/h100/tmux_ls.txt");
pub const TMUX_RUN: &str = include_str!("../../tests/fixtures/h100/tmux_run.txt");
pub const PGREP_LOAD: &str = include_str!("../../tests/fixtures/h100/pgrep_load.txt");

/// A headed `--query-gpu` capture cut into sampling instants: `loop_load.txt` holds twelve
/// one-second samples of one GPU, the multi-GPU capture one instant of two. Each frame keeps
/// the header, as nvidia-smi's stream would have printed it.
pub fn gpu_frames(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let index_col = header
        .split(',')
        .position(|c| c.trim().starts_with("index"));
    let index_of = |row: &str| {
        index_col
            .and_then(|i| row.split(',').nth(i))
            .map(|v| v.trim().to_string())
    };
    let mut frames: Vec<Vec<&str>> = Vec::new();
    for row in lines.filter(|l| !l.trim().is_empty()) {
        let starts_new = match frames.last() {
            Some(frame) => frame.iter().any(|r| index_of(r) == index_of(row)),
            None => true,
        };
        if starts_new {
            frames.push(Vec::new());
        }
        if let Some(frame) = frames.last_mut() {
            frame.push(row);
        }
    }
    frames
        .into_iter()
        .map(|rows| format!("{header}\n{}\n", rows.join("\n")))
        .collect()
}

/// `tmux_run.txt` ran `tmux ls` then `tmux list-panes`: one line of each.
pub fn tmux_run_split() -> (&'static str, &'static str) {
    let text = body(TMUX_RUN);
    match text.split_once('\n') {
        Some((ls, panes)) => (ls, panes),
        None => (text, ""),
    }
}

/// `df_PB1.txt` with `/` grown by `extra` bytes (used up, available down): a disk filling up,
/// which no capture shows over time.
pub fn df_bytes_grown(extra: u64) -> String {
    body(DF_BYTES)
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            match (f.as_slice(), f.last()) {
                ([fs, total, used, avail, _, _], Some(&"/")) => {
                    let (Ok(t), Ok(u), Ok(a)) = (
                        total.parse::<u64>(),
                        used.parse::<u64>(),
                        avail.parse::<u64>(),
                    ) else {
                        return line.to_string();
                    };
                    let grow = extra.min(a);
                    let (u, a) = (u + grow, a - grow);
                    format!("{fs} {t} {u} {a} {}% /", u * 100 / (u + a).max(1))
                }
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `loadavg.txt` (an idle box: `0.00 0.00 0.00 1/207 449`) with the box at `load`: its last
/// minutes a little busier than the quarter hour, as a run that has settled in.
pub fn loadavg_at(load: f64) -> String {
    let tail: Vec<&str> = body(LOADAVG).split_whitespace().skip(3).collect();
    format!(
        "{load:.2} {:.2} {:.2} {}\n",
        load * 0.97,
        load * 0.91,
        tail.join(" ")
    )
}

/// `meminfo.txt` with `share` of its RAM in use: `MemAvailable` lowered to the rest.
pub fn meminfo_used(share: f64) -> String {
    let total = body(MEMINFO)
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    body(MEMINFO)
        .lines()
        .map(|line| match line.strip_prefix("MemAvailable:") {
            Some(_) => format!(
                "MemAvailable:   {:>9} kB",
                (total as f64 * (1.0 - share.clamp(0.0, 1.0))) as u64
            ),
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_drop_the_command_and_exit_lines() {
        assert_eq!(body(UPTIME), "29.85 467.50\n");
        assert!(with_header(ZOMBIE_Q).starts_with("index, utilization.gpu, memory.used"));
        assert!(with_header(Q_LOAD).starts_with("index, uuid, name"));
        assert_eq!(tmux_run_split().1, "train 669 0 sleep\n");
        assert_eq!(gpu_frames(&with_header(LOOP_LOAD)).len(), 12);
        let multi = gpu_frames(&with_header(Q_MULTI));
        assert_eq!(multi.len(), 1);
        assert_eq!(multi[0].lines().count(), 3);
    }

    #[test]
    fn grown_disk_keeps_its_total() {
        let grown = df_bytes_grown(1 << 30);
        let root = grown.lines().find(|l| l.ends_with(" /")).expect("root");
        assert!(
            root.contains("270553174016 18360377344 67628560384"),
            "{root}"
        );
    }
}
