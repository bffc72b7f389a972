//! `K`: ending the processes that hold VRAM on a GPU that computes nothing, when a person has
//! typed the host's name. One command over the pooled session: each process is signalled only
//! while nvidia-smi still lists its pid as holding VRAM and its name is still the one the person
//! saw (a pid ended and reused meanwhile is never hit); TERM first, KILL after a grace period
//! for what is still there. The intent is in the ledger before anything is sent.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;

use super::jobs::JobMsg;
use crate::ledger::locks::Act;
use crate::ledger::{KillIntent, Ledger};
use crate::probe::GpuProcess;
use crate::sanitize::shell_quote;
use crate::transport::{ExecLimits, Session};

/// How long a process gets to end on TERM before KILL.
pub const GRACE: Duration = Duration::from_secs(10);

/// The commands as the dialog shows them and the ledger records them.
pub fn shown(targets: &[GpuProcess]) -> String {
    let pids: Vec<String> = targets.iter().map(|p| p.pid.to_string()).collect();
    let pids = pids.join(" ");
    format!(
        "kill -TERM {pids}; after {} s, kill -KILL whichever still holds VRAM",
        GRACE.as_secs()
    )
}

/// The processes in a line, as the person saw them.
pub fn named(targets: &[GpuProcess]) -> String {
    targets
        .iter()
        .map(|p| {
            format!(
                "{} {} ({} MiB)",
                p.pid,
                crate::sanitize::line(p.name.as_deref().unwrap_or("?"), 40),
                p.used_mib.map_or("?".into(), |m| m.to_string())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The name the kernel gives the process (`/proc/PID/comm`: the executable's base name, cut
/// at 15 bytes), from the name nvidia-smi printed.
fn comm(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    base[..end].to_string()
}

/// The script: one `RW pid WORD [text]` line per step, for [`outcome`].
pub fn script(targets: &[GpuProcess]) -> String {
    let mut s = String::from(
        "held() { nvidia-smi --query-compute-apps=pid --format=csv,noheader,nounits 2>/dev/null \
         | cut -d, -f1 | tr -d ' ' | grep -qx \"$1\"; }\n\
         same() { [ \"$(cat /proc/$1/comm 2>/dev/null)\" = \"$2\" ] && held \"$1\"; }\n\
         live=\n",
    );
    for p in targets {
        let name = shell_quote(&comm(p.name.as_deref().unwrap_or("")));
        let _ = writeln!(
            s,
            "if same {pid} {name}; then if e=$(kill -TERM {pid} 2>&1); then echo 'RW {pid} term'; \
             live=\"$live {pid}\"; else echo \"RW {pid} refused $e\"; fi; else echo 'RW {pid} changed'; fi",
            pid = p.pid
        );
    }
    let tenths = GRACE.as_millis() / 100;
    let _ = writeln!(
        s,
        "i=0; while [ -n \"$live\" ] && [ $i -lt {tenths} ]; do n=; for p in $live; do \
         kill -0 $p 2>/dev/null && n=\"$n $p\"; done; live=$n; [ -n \"$live\" ] && sleep 0.1; \
         i=$((i+1)); done"
    );
    for p in targets {
        let name = shell_quote(&comm(p.name.as_deref().unwrap_or("")));
        let _ = writeln!(
            s,
            "case \" $live \" in *' {pid} '*) if same {pid} {name}; then \
             if e=$(kill -KILL {pid} 2>&1); then echo 'RW {pid} kill'; else echo \"RW {pid} refused $e\"; fi; \
             else echo 'RW {pid} changed'; fi;; esac",
            pid = p.pid
        );
    }
    s.push_str("[ -n \"$live\" ] && sleep 1\n");
    for p in targets {
        let _ = writeln!(
            s,
            "if kill -0 {pid} 2>/dev/null; then echo 'RW {pid} alive'; else echo 'RW {pid} gone'; fi",
            pid = p.pid
        );
    }
    s
}

/// What became of each process, in a line: `pid 585 ended on TERM`, `pid 586 ended on KILL`,
/// `pid 587 is still there: kill: Operation not permitted`, `pid 588 was left alone: it no
/// longer holds VRAM under that name`.
pub fn outcome(output: &str, targets: &[GpuProcess]) -> String {
    let mut said = Vec::new();
    for p in targets {
        let words: Vec<String> = output
            .lines()
            .filter_map(|l| l.strip_prefix("RW "))
            .filter_map(|l| l.split_once(' '))
            .filter(|(pid, _)| *pid == p.pid.to_string())
            .map(|(_, rest)| rest.to_string())
            .collect();
        let has = |w: &str| {
            words
                .iter()
                .any(|x| x == w || x.starts_with(&format!("{w} ")))
        };
        let refused = words
            .iter()
            .find_map(|w| w.strip_prefix("refused "))
            .map(|e| crate::sanitize::line(e, 80));
        let pid = p.pid;
        said.push(if has("changed") && !has("term") {
            format!("pid {pid} was left alone: it no longer holds VRAM under that name")
        } else if has("gone") && has("kill") {
            format!("pid {pid} ended on KILL")
        } else if has("gone") && has("term") {
            format!("pid {pid} ended on TERM")
        } else if has("gone") {
            format!("pid {pid} is gone")
        } else if let Some(e) = refused {
            format!("pid {pid} is still there: {e}")
        } else if has("alive") {
            format!("pid {pid} is still there")
        } else {
            format!("pid {pid}: no answer from the box")
        });
    }
    said.join("; ")
}

/// Records the intent, runs the script over `session`, records what came of it, and says it in
/// a line (for the dialog and the status bar).
pub(super) fn spawn(
    session: std::sync::Arc<Session>,
    host: String,
    targets: Vec<GpuProcess>,
    tx: mpsc::Sender<JobMsg>,
) {
    tokio::spawn(async move {
        let said = run(&session, &host, &targets).await;
        let _ = tx.send(JobMsg::Killed { host, said }).await;
    });
}

async fn run(session: &Session, host: &str, targets: &[GpuProcess]) -> String {
    // No kill while a pull or teardown of the box runs: held until the kill's outcome is
    // recorded.
    let Some(dir) = crate::ledger::locks::default_dir() else {
        return "nothing sent: no state folder to hold the box in".into();
    };
    let what = format!("box {host}");
    let _held = match crate::ledger::locks::try_take(&dir, host, Act::Kill, &what, Utc::now()) {
        Ok(held) => held,
        Err(busy) => return format!("nothing sent: {busy}"),
    };
    let Some(path) = crate::ledger::default_path() else {
        return "nothing sent: no state folder for the ledger, where a kill is recorded first"
            .into();
    };
    let ledger = match Ledger::open(&path) {
        Ok(l) => l,
        Err(e) => return format!("nothing sent: {e}"),
    };
    let intent = KillIntent {
        at: Utc::now(),
        host: host.to_string(),
        pids: named(targets),
        command: shown(targets),
    };
    let id = match ledger.record_kill_intent(&intent) {
        Ok(id) => id,
        Err(e) => return format!("nothing sent: {e}"),
    };
    let limits = ExecLimits {
        timeout: GRACE + Duration::from_secs(15),
        max_output: 64 * 1024,
    };
    let (said, output) = match session.exec(&script(targets), limits).await {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            (outcome(&text, targets), text)
        }
        Err(e) => (
            format!("the box did not answer ({e}): whether anything ended is not known"),
            String::new(),
        ),
    };
    let recorded = match ledger.record_kill_outcome(id, Utc::now(), &said, &output) {
        Ok(_) => format!("; recorded in the ledger (kill #{id})"),
        Err(e) => format!("; NOT recorded: {e}"),
    };
    format!("{said}{recorded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, name: &str) -> GpuProcess {
        GpuProcess {
            pid,
            name: Some(name.into()),
            used_mib: Some(29130),
            gpu_uuid: None,
        }
    }

    #[test]
    fn the_script_checks_each_pid_and_name_before_each_signal() {
        let s = script(&[p(585, "/usr/bin/python3"), p(9, "it's-a-very-long-process")]);
        assert!(
            s.contains("if same 585 'python3'; then if e=$(kill -TERM 585"),
            "{s}"
        );
        // comm is cut at 15 bytes, and the name is quoted whatever the box called it.
        assert!(s.contains("same 9 'it'\\''s-a-very-lon'"), "{s}");
        assert!(
            s.contains("if same 585 'python3'; then if e=$(kill -KILL 585"),
            "{s}"
        );
        assert_eq!(s.matches("kill -KILL").count(), 2);
    }

    #[test]
    fn the_outcome_says_which_signal_ended_each() {
        let targets = [p(1, "a"), p(2, "b"), p(3, "c"), p(4, "d")];
        let out = "RW 1 term\nRW 2 term\nRW 2 kill\nRW 3 refused kill: (3) - Operation not permitted\n\
                   RW 4 changed\nRW 1 gone\nRW 2 gone\nRW 3 alive\nRW 4 alive\n";
        assert_eq!(
            outcome(out, &targets),
            "pid 1 ended on TERM; pid 2 ended on KILL; pid 3 is still there: kill: (3) - \
             Operation not permitted; pid 4 was left alone: it no longer holds VRAM under that name"
        );
        assert_eq!(outcome("", &targets[..1]), "pid 1: no answer from the box");
    }
}
