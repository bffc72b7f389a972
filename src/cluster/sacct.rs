//! The end state of jobs that left the queue: `sacct` where accounting exists, else `sacct -c`,
//! the job completion log (`JobCompType=jobcomp/filetxt`, no database needed). A job neither
//! knows stays "ended, state unknown"; nothing here ever says a job is running.

use std::time::Duration;

use super::{Exit, JobRow};
use crate::probe::squeue::{ExitCode, JobState, SlurmTime};
use crate::transport::{ExecLimits, Session};

/// The fields asked for, JobName last: `-P` separates with `|`, which a job name may hold.
const FIELDS: &str = "JobID,State,ExitCode,Elapsed,NNodes,NodeList,JobName";

/// The most ids asked about at once.
const MAX_IDS: usize = 200;

/// `sacct` (or, with `completion`, `sacct -c`) for `ids`, which must be plain job ids.
pub fn sacct_command(ids: &[String], completion: bool) -> String {
    format!(
        "sacct{} -X -n -P -j {} -o {FIELDS}",
        if completion { " -c" } else { "" },
        ids.join(",")
    )
}

/// The jobs among `ids` that accounting (or the completion log) knows, as rows in their end
/// state; Err says why neither could be asked.
pub async fn end_states(
    session: &Session,
    ids: &[String],
    timeout: Duration,
) -> Result<Vec<JobRow>, String> {
    let ids: Vec<String> = ids
        .iter()
        .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit() || c == '_'))
        .take(MAX_IDS)
        .cloned()
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let limits = ExecLimits {
        timeout,
        max_output: 1024 * 1024,
    };
    let mut why = String::new();
    for completion in [false, true] {
        let out = session
            .exec(
                &super::bounded(&sacct_command(&ids, completion), timeout),
                limits,
            )
            .await
            .map_err(|e| e.to_string())?;
        if out.truncated {
            // Fewer end states than asked for would leave jobs "ended, state unknown" that
            // accounting knows; nothing is taken from a cut answer.
            return Err(format!(
                "sacct's answer was cut at {} KiB: too many jobs asked at once",
                limits.max_output >> 10
            ));
        }
        if out.exit_status == Some(0) {
            return Ok(parse(&String::from_utf8_lossy(&out.stdout), &ids));
        }
        why = crate::sanitize::mask_secrets(&crate::sanitize::line(
            String::from_utf8_lossy(&out.stderr).trim(),
            200,
        ));
    }
    Err(format!("sacct: {why}"))
}

/// Rows of `sacct -X -n -P -o FIELDS` for the asked `ids` (a line it cannot read is skipped:
/// the job then stays unknown, never guessed).
pub fn parse(text: &str, ids: &[String]) -> Vec<JobRow> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.splitn(7, '|').collect();
            let [id, state, exit, elapsed, nodes, node_list, name] = f.as_slice() else {
                return None;
            };
            let id = id.trim();
            if !ids.iter().any(|i| i == id) {
                return None;
            }
            let state = JobState::parse(state);
            let phase = super::slurm::phase(&state);
            if !phase.is_over() {
                return None;
            }
            Some(JobRow {
                id: id.to_string(),
                name: crate::sanitize::line(name.trim(), 120),
                phase,
                state: state.word().to_string(),
                reason: None,
                reason_words: super::slurm::end_words(&state)
                    .map(|w| format!("{w} (from accounting)"))
                    .or_else(|| Some("read from accounting after it left the queue".into())),
                exit: ExitCode::parse(exit).map(|e| Exit {
                    code: i64::from(e.code),
                    signal: e.signal,
                }),
                nodes: nodes.trim().parse().ok(),
                node_list: Some(crate::sanitize::line(node_list.trim(), 200))
                    .filter(|n| !n.is_empty() && n != "None assigned"),
                gpus: None,
                elapsed_secs: SlurmTime::parse(elapsed)
                    .and_then(|t| t.known())
                    .map(|d| d.as_secs()),
                limit_secs: None,
                left: None,
                restarts: None,
                restart_limit: None,
                requeue: None,
                walltime: None,
                checkpoint_age_secs: None,
                dangers: Vec::new(),
                gpu_truth: Vec::new(),
                pods: Vec::new(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Phase;

    #[test]
    fn the_completion_log_as_sacct_prints_it() {
        // Verbatim `sacct -c -X -n -P -j 1,2 -o …` from the one-node test cluster (22.05.8).
        let text = "1|FAILED|3:0|00:00:00|1|vm|fails|x\n2|CANCELLED|0:0|00:00:00|1|vm|runs\n";
        let ids = ["1".to_string(), "2".to_string(), "9".to_string()];
        let rows = parse(text, &ids);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "fails|x", "a | in a name stays in the name");
        assert_eq!(
            (rows[0].phase, rows[0].exit.map(|e| e.code)),
            (Phase::Failed, Some(3))
        );
        assert_eq!(rows[1].state, "CANCELLED");
        assert!(parse("3|RUNNING|0:0|00:01:00|1|vm|x\n", &["3".into()]).is_empty());
        assert!(parse("garbage\n", &ids).is_empty());
        assert_eq!(
            sacct_command(&["1".into(), "2".into()], true),
            "sacct -c -X -n -P -j 1,2 -o JobID,State,ExitCode,Elapsed,NNodes,NodeList,JobName"
        );
    }
}
