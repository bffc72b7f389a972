//! The periodic probe: ONE long-lived POSIX sh loop per host that prints every section each
//! period, so the box pays its shell start-up (conda, pyenv: 0.1–0.2 CPU-s) once, not per poll.
//! Every section is framed by a per-session nonce, so a log line cannot forge a frame, and keeps
//! its own exit status; output of each section is capped on the box.

use std::fmt::Write as _;
use std::time::Duration;

use super::SQUEUE_FORMAT;
use super::df::OUTPUT_COLUMNS;

/// What the probe looks at on one host; from the host's config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeTargets {
    /// Mount points for `df`; empty means every filesystem.
    pub mounts: Vec<String>,
    /// The run's tmux session, by exact name.
    pub run: Option<String>,
    /// The run's `pgrep -f` pattern.
    pub run_process: Option<String>,
    pub log: Option<String>,
    pub ckpt_dir: Option<String>,
    pub queue: Option<QueueTargets>,
    /// Ask Slurm for the job's time left (profiles with a walltime).
    pub slurm: Option<SlurmTarget>,
}

/// The Slurm job to ask about: the user's `instance_id`, else the user's own jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmTarget {
    pub job: Option<String>,
}

/// A sweep queue on the box: its file, the durable `final_dir`, and the per-cell log pattern
/// (`{name}` stands for any cell).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueTargets {
    pub file: String,
    pub final_dir: String,
    pub cell_log: Option<String>,
}

/// Output of one section kept by the reader; the commands themselves print bounded output
/// (`tail -c`, `tail -n`, one line of `ls`), so this only guards against surprises.
pub const SECTION_CAP_BYTES: usize = 64 * 1024;
/// Bytes of the run's log sent each cycle: tqdm bars rewrite one line with `\r`, so lines
/// are no unit to count in.
pub const LOG_TAIL_BYTES: usize = 8 * 1024;
/// Slow sections run every this many cycles (10 s at a 2 s period): nvidia-smi's compute apps
/// (nvidia-smi start-up is the costliest thing the probe does), df, memory, the CPUs online,
/// boot id, the log, the checkpoint and the tmux session list. Every cycle keeps only what says whether the run
/// is alive (its tmux panes, its processes) and the cheap /proc reads.
pub const SLOW_EVERY: u32 = 5;
/// The kernel log is read every this many cycles: dmesg reads the whole ring buffer.
pub const KERNEL_EVERY: u32 = 15;

/// Sections every cycle prints; the slow ones appear every [`SLOW_EVERY`] cycles.
pub const FAST_SECTIONS: &[&str] = &["uptime", "loadavg", "panes", "kids", "run"];
pub const SLOW_SECTIONS: &[&str] = &[
    "apps", "df", "dfi", "meminfo", "cpus", "bootid", "tmux", "log", "ckpt",
];
pub const KERNEL_SECTION: &str = "kernel";
/// Slow sections a host with a queue adds: the queue file, the `final_dir` listing, the
/// `run_queue*.sh` processes and the newest cell log.
pub const QUEUE_SECTIONS: &[&str] = &["qfile", "qfinal", "qproc", "qlog"];
/// The largest queue file read (about a thousand cells): under [`SECTION_CAP_BYTES`], so the
/// reader never cuts it. It is read every slow cycle on every queue host, so it stays small.
pub const QUEUE_FILE_CAP_BYTES: usize = 60 * 1024;
/// `qfile`'s exit status for a queue file over [`QUEUE_FILE_CAP_BYTES`]; its output is the size.
/// Such a file is refused whole rather than cut: a cut file would drop its last cells from the
/// roster without a word.
pub const QUEUE_FILE_OVER_CAP: i32 = 90;

/// Single-quotes a value for sh: the only character needing care inside '...' is ' itself.
pub fn sh_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// A pattern that matches `pattern` with pgrep -f but not the probe's own command line, which
/// contains the pattern as text: `train` becomes `[t]rain`.
pub fn self_excluding_pattern(pattern: &str) -> String {
    let mut chars = pattern.chars();
    match chars.next() {
        Some(first) if first.is_ascii_alphanumeric() => format!("[{first}]{}", chars.as_str()),
        _ => pattern.to_string(),
    }
}

/// The script; `period` None runs every section once (for `rigwatch status`), and then also
/// queries the GPUs (section `gpu`) with `gpu_fields`, falling back to `legacy_fields` when the
/// driver rejects a field, so a one-shot status costs the box one shell, not two.
///
/// Cheap on the box is the point: no subshell or pipe per section, /proc files read with the
/// shell's own `read`, no `sleep` (rigwatch paces the loop through its stdin), so a fast cycle
/// forks only `tmux` (and `pgrep` when the run's process has gone).
pub fn periodic_script(
    targets: &ProbeTargets,
    nonce: &str,
    period: Option<Duration>,
    gpu_fields: &[&str],
    legacy_fields: &[&str],
) -> String {
    let mut s = String::new();
    s.push_str("LC_ALL=C; export LC_ALL\n");
    let _ = writeln!(s, "M={}", sh_quote(&format!("@@rw-{nonce}")));
    // Every command that touches the user's files (a hung network mount blocks forever in
    // stat, ls, tail, find) runs under a timeout, so a hang never holds the probe's channel.
    s.push_str("T=''; command -v timeout >/dev/null 2>&1 && T='timeout -k 2 10'\n");
    // The paths, patterns and mounts arrive first on stdin (`settings`), one a line, so the
    // script is the same size whatever the config lists. The mounts are kept one a line in MS
    // and split on newlines only, unglobbed, where df takes them.
    s.push_str("NL='\n'; P=''\n");
    s.push_str(
        "for v in LOG CK RUN PROC QF QD QL RW_JOB NM; do IFS= read -r \"$v\" || exit 0; done\n",
    );
    s.push_str("MS=''; j=0; while [ \"$j\" -lt \"$NM\" ] && IFS= read -r m; do MS=\"$MS$m$NL\"; j=$((j + 1)); done\n");
    s.push_str(
        "mdf() { oi=$IFS; IFS=$NL; set -f; set -- \"$@\" $MS; IFS=$oi; set +f; $T df \"$@\"; }\n",
    );
    // Sections read nothing: their stdin is /dev/null, so the loop's own stdin carries only
    // the pacing lines (a redirection on a function call forks nothing).
    s.push_str("sec() { n=$1; shift; printf '%s begin %s\\n' \"$M\" \"$n\"; \"$@\" </dev/null 2>&1; r=$?; printf '\\n%s end %s %s\\n' \"$M\" \"$n\" \"$r\"; }\n");
    s.push_str("rd() { while IFS= read -r l || [ -n \"$l\" ]; do printf '%s\\n' \"$l\"; done < \"$1\"; }\n");
    s.push_str("apps() { $T nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv; }\n");
    // GNU df gives bytes and inodes in one call; another df (busybox) takes two, and then the
    // `dfi` section runs too. A df that fails on one mount still lists the rest.
    let _ = writeln!(
        s,
        "dfb() {{ o=$(mdf -B1 --output={OUTPUT_COLUMNS} 2>&1); r=$?; \
         case \"$o\" in *IUse%*) DFI=''; printf '%s\\n' \"$o\"; return $r;; esac; \
         DFI=1; mdf -PB1; }}"
    );
    s.push_str("dfi() { [ -n \"$DFI\" ] || return 0; mdf -Pi; }\n");
    // Only the run's own session, named exactly (`=NAME:`; without the colon tmux 3.3 still
    // takes a prefix, `=train` finding `train2`): `tmux ls | grep` or `pgrep -f NAME` would
    // also find `train2`, or the tmux server that still carries `new -s train` in its argv.
    s.push_str("panes() { [ -n \"$RUN\" ] || return 0; P=$(tmux list-panes -s -t \"=$RUN:\" -F '#{session_name} #{pane_pid} #{pane_dead} #{pane_current_command}' 2>&1); r=$?; printf '%s\\n' \"$P\"; return $r; }\n");
    // Whether each pane's process has children (the kernel lists them; no fork to ask): a shell
    // with none is sitting at its prompt, so whatever ran in the session has ended.
    s.push_str("kids() { for w in $P; do case $w in *[!0-9]*|0|1) continue;; esac; [ -r /proc/$w/task/$w/children ] || continue; c=''; read -r c < /proc/$w/task/$w/children; if [ -n \"$c\" ]; then printf '%s 1\\n' \"$w\"; else printf '%s 0\\n' \"$w\"; fi; done; }\n");
    // pgrep reads every process's command line (14 ms here): between slow cycles, while the
    // process it found last still exists (or none was found), repeat that answer instead.
    s.push_str("RO=''; RP=''; RR=1\n");
    let _ = writeln!(
        s,
        "run() {{ [ -n \"$PROC\" ] || return 0; \
         if [ $((i % {SLOW_EVERY})) != 0 ] && {{ [ -z \"$RP\" ] || [ -d \"/proc/$RP\" ]; }}; then \
         [ -n \"$RO\" ] && printf '%s\\n' \"$RO\"; return $RR; fi; \
         RO=$(pgrep -af -- \"$PROC\"); RR=$?; RP=${{RO%% *}}; [ -n \"$RO\" ] && printf '%s\\n' \"$RO\"; return $RR; }}"
    );
    let _ = writeln!(
        s,
        "lg() {{ [ -n \"$LOG\" ] || return 0; $T stat -c '%s %Y' -- \"$LOG\" && $T tail -c {LOG_TAIL_BYTES} -- \"$LOG\"; }}"
    );
    s.push_str("ck() { [ -n \"$CK\" ] || return 0; f=$($T ls -t -- \"$CK\" | head -n 1); [ -n \"$f\" ] || return 0; $T stat -c '%s %Y %n' -- \"$CK/$f\"; }\n");
    if targets.queue.is_some() {
        queue_functions(&mut s);
    }
    if targets.slurm.is_some() {
        let _ = writeln!(
            s,
            "sj() {{ if [ -n \"$RW_JOB\" ]; then $T squeue -h -j \"$RW_JOB\" -o '{SQUEUE_FORMAT}'; \
             else $T squeue -h -u \"$(id -un)\" -o '{SQUEUE_FORMAT}'; fi; }}"
        );
    }
    s.push_str("kern() { { dmesg 2>/dev/null || journalctl -k -q --no-pager -n 2000 2>/dev/null; } | grep -E 'NVRM: Xid|Out of memory|oom-kill|Killed process' | tail -n 20; }\n");
    let _ = writeln!(
        s,
        "gpuq() {{ o=$($T nvidia-smi --query-gpu={} --format=csv,nounits 2>&1); r=$?; \
         case \"$o\" in *'not a valid field'*) $T nvidia-smi --query-gpu={} --format=csv,nounits; return;; esac; \
         printf '%s\\n' \"$o\"; return $r; }}",
        gpu_fields.join(","),
        legacy_fields.join(",")
    );
    s.push_str("i=0\nwhile :; do\n");
    s.push_str("printf '%s cycle %s\\n' \"$M\" \"$i\"\n");
    s.push_str("sec uptime rd /proc/uptime\nsec loadavg rd /proc/loadavg\n");
    s.push_str("sec panes panes\nsec kids kids\nsec run run\n");
    // The CPUs online come from sysfs with the shell's own read: `nproc` would fork, and it
    // counts only this process's affinity where the load average counts the whole machine.
    let _ = writeln!(
        s,
        "if [ $((i % {SLOW_EVERY})) = 0 ]; then {}sec df dfb; sec dfi dfi; \
         sec meminfo rd /proc/meminfo; sec cpus rd /sys/devices/system/cpu/online; sec bootid cat /proc/sys/kernel/random/boot_id; \
         sec tmux $T tmux ls; sec log lg; sec ckpt ck;{} fi",
        // The live monitor reads compute apps from its own long-lived nvidia-smi loop; a
        // one-shot probe asks once.
        if period.is_none() {
            "sec apps apps; "
        } else {
            ""
        },
        if targets.queue.is_some() {
            " sec qfile qf; sec qfinal qd; sec qproc qp; sec qlog ql;"
        } else {
            ""
        }
    );
    if targets.slurm.is_some() {
        let _ = writeln!(s, "if [ $((i % {SLOW_EVERY})) = 0 ]; then sec slurm sj; fi");
    }
    let _ = writeln!(
        s,
        "if [ $((i % {KERNEL_EVERY})) = 0 ]; then sec kernel kern; fi"
    );
    if period.is_none() {
        s.push_str("sec gpu gpuq\n");
    }
    s.push_str("printf '%s done\\n' \"$M\"\ni=$((i + 1))\n");
    // The next cycle starts when rigwatch sends a line, one period after this cycle began:
    // no `sleep` forked per cycle, cycles never pile up behind a slow one, and the loop ends
    // by itself when the channel does (EOF).
    match period {
        Some(_) => s.push_str("read -r _ || exit 0\n"),
        None => s.push_str("break\n"),
    }
    s.push_str("done\n");
    s
}

/// The queue's sections. `final_dir` is listed from inside it (in a subshell, so the loop's
/// directory stays put) so names arrive as `./<name>/<file>`; `$QL` is left unquoted so its `*`
/// globs (a cell-log pattern with spaces is not supported). pgrep's `[r]` keeps the probe from
/// matching its own script text.
fn queue_functions(s: &mut String) {
    // `head -c` still bounds what is sent if the file grows between the stat and the read; `qn`,
    // not `n`: sh functions share variables, and `sec` holds the section's name in `n`.
    let _ = writeln!(
        s,
        "qf() {{ qn=$($T stat -L -c %s -- \"$QF\") || return; \
         if [ \"$qn\" -gt {QUEUE_FILE_CAP_BYTES} ]; then printf '%s\\n' \"$qn\"; return {QUEUE_FILE_OVER_CAP}; fi; \
         $T head -c {QUEUE_FILE_CAP_BYTES} -- \"$QF\"; }}"
    );
    s.push_str("qd() { $T test -d \"$QD\" || return 0; (cd -- \"$QD\" && $T find . -mindepth 2 -maxdepth 2 -type f -exec stat -c '%s\t%Y\t%n' {} +); }\n");
    s.push_str("qp() { pgrep -af -- '[r]un_queue'; r=$?; [ $r = 1 ] && return 0; return $r; }\n");
    let _ = writeln!(
        s,
        "ql() {{ [ -n \"$QL\" ] || return 0; f=$($T ls -t -- $QL 2>/dev/null | head -n 1); [ -n \"$f\" ] || return 0; \
         $T stat -c '%s %Y %n' -- \"$f\" && $T tail -c {LOG_TAIL_BYTES} -- \"$f\"; }}"
    );
}

/// The exec command line: the script handed to `sh -c`, so it runs under POSIX sh whatever the
/// user's login shell is. It carries no path, pattern or mount: those go on its stdin
/// ([`settings`]), so the command is the same size whatever the config lists (sshd hands it to
/// the login shell as one argument, which Linux caps at 128 KiB), and `pgrep -f` for the run
/// never finds the probe itself.
pub fn command_line(script: &str) -> String {
    format!("exec sh -c {}", sh_quote(script))
}

/// What the script reads first on its stdin: the log, checkpoint folder, run session, run
/// pattern, queue file, final folder, cell-log pattern and Slurm job, one a line (empty when
/// not set), then the number of mounts and each mount. Config refuses a newline in any of them
/// at load (`config::ranges::probe_paths`), so one line is one value.
pub fn settings(targets: &ProbeTargets) -> Vec<u8> {
    let process = targets
        .run_process
        .as_deref()
        .map(self_excluding_pattern)
        .unwrap_or_default();
    let queue = targets.queue.as_ref();
    let cell_log = queue
        .and_then(|q| q.cell_log.as_deref())
        .map_or(String::new(), |l| l.replace("{name}", "*"));
    let values = [
        targets.log.as_deref().unwrap_or(""),
        targets.ckpt_dir.as_deref().unwrap_or(""),
        targets.run.as_deref().unwrap_or(""),
        &process,
        queue.map_or("", |q| q.file.as_str()),
        queue.map_or("", |q| q.final_dir.as_str()),
        &cell_log,
        targets
            .slurm
            .as_ref()
            .and_then(|j| j.job.as_deref())
            .unwrap_or(""),
    ];
    let mut out = String::new();
    for value in values {
        let _ = writeln!(out, "{value}");
    }
    let _ = writeln!(out, "{}", targets.mounts.len());
    for mount in &targets.mounts {
        let _ = writeln!(out, "{mount}");
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_on_the_users_files_runs_under_a_timeout() {
        let targets = ProbeTargets {
            run: Some("train".into()),
            log: Some("/w/train.log".into()),
            ckpt_dir: Some("/w/ckpt".into()),
            queue: Some(QueueTargets {
                file: "/w/q.txt".into(),
                final_dir: "/w/final".into(),
                cell_log: Some("/w/logs/*.log".into()),
            }),
            ..ProbeTargets::default()
        };
        let script = periodic_script(&targets, "n", None, &["name"], &["name"]);
        for tool in [
            "stat ",
            "tail ",
            "ls ",
            "find ",
            "head -c",
            "df \"$@\"",
            "tmux ls",
        ] {
            for (i, _) in script.match_indices(tool) {
                let before = &script[..i];
                assert!(
                    before.ends_with("$T ") || before.ends_with("-exec ") || before.ends_with("| "),
                    "{tool}at {i} runs without $T: …{}",
                    &script[i.saturating_sub(40)..(i + 20).min(script.len())]
                );
            }
        }
    }
}
