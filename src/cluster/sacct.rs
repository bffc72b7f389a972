//! The end state of jobs that left the queue: `sacct` where accounting exists, else `sacct -c`,
//! the job completion log (`JobCompType=jobcomp/filetxt`, no database needed). A job neither
//! knows stays "ended, state unknown"; nothing here ever says a job is running.

use std::time::Duration;

use super::{Exit, JobRow};
use crate::probe::squeue::{ExitCode, JobState, SlurmTime};
use crate::transport::{ExecLimits, Session};

/// The fields asked for. No JobName: `-P` neither escapes `|` nor newlines in it, so a job
/// named `x\n201|COMPLETED|0:0|…` printed a second, forged row; every field asked here is
/// Slurm's own. Names are asked on their own (`names_command`), where one can forge nothing.
const FIELDS: &str = "JobID,State,ExitCode,Elapsed,NNodes,NodeList";

/// How many fields each row has: a line with any other count is not a row.
const FIELD_COUNT: usize = 6;

/// The most ids asked about at once.
const MAX_IDS: usize = 200;

/// The names of `ids`, asked apart from their states: a name that forges a line can only
/// repeat an asked id, which is then believed neither time, or name an id not asked.
pub fn names_command(ids: &[String], completion: bool) -> String {
    format!(
        "sacct{} -X -n -P -j {} -o JobID,JobName",
        if completion { " -c" } else { "" },
        ids.join(",")
    )
}

/// Each asked id's name, where its line is the only one that starts with it.
pub fn parse_names(text: &str, ids: &[String]) -> Vec<(String, String)> {
    let lines: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(id, name)| (id.trim(), name))
        .collect();
    lines
        .iter()
        .filter(|(id, _)| ids.iter().any(|i| i == id))
        .filter(|(id, _)| lines.iter().filter(|(o, _)| o == id).count() == 1)
        .map(|(id, name)| (id.to_string(), crate::sanitize::line(name.trim(), 120)))
        .collect()
}

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
            let mut rows = parse(&String::from_utf8_lossy(&out.stdout), &ids);
            // The names, asked apart; a row whose name is not read keeps the queue's.
            let command = super::bounded(&names_command(&ids, completion), timeout);
            if let Ok(named) = session.exec(&command, limits).await
                && named.exit_status == Some(0)
                && !named.truncated
            {
                let names = parse_names(&String::from_utf8_lossy(&named.stdout), &ids);
                for row in &mut rows {
                    if let Some((_, name)) = names.iter().find(|(id, _)| *id == row.id) {
                        row.name = name.clone();
                    }
                }
            }
            return Ok(rows);
        }
        why = crate::sanitize::words(String::from_utf8_lossy(&out.stderr).trim(), 200);
    }
    Err(format!("sacct: {why}"))
}

/// Rows of `sacct -X -n -P -o FIELDS` for the asked `ids`. A line without exactly the fields
/// asked is not a row, and an id printed twice is believed neither time: the job then stays
/// unknown, never guessed.
pub fn parse(text: &str, ids: &[String]) -> Vec<JobRow> {
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|line| line.split('|').collect::<Vec<_>>())
        .filter(|f| f.len() == FIELD_COUNT)
        .collect();
    let once = |id: &str| rows.iter().filter(|f| f[0].trim() == id).count() == 1;
    rows.iter()
        .filter_map(|f| {
            let [id, state, exit, elapsed, nodes, node_list] = f.as_slice() else {
                return None;
            };
            let id = id.trim();
            if !ids.iter().any(|i| i == id) || !once(id) {
                return None;
            }
            let state = JobState::parse(state);
            let phase = super::slurm::phase(&state);
            if !phase.is_over() {
                return None;
            }
            Some(JobRow {
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
                elapsed_secs: SlurmTime::parse(elapsed)
                    .and_then(|t| t.known())
                    .map(|d| d.as_secs()),
                // The name from `names_command`, or the queue's last read
                // (`ClusterReading::merge`).
                ..JobRow::new(
                    id.to_string(),
                    String::new(),
                    phase,
                    state.word().to_string(),
                )
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
        // The rows `sacct -c -X -n -P -j 1,2` printed on the one-node test cluster (22.05.8),
        // without the JobName column, which is no longer asked for.
        let text = "1|FAILED|3:0|00:00:00|1|vm\n2|CANCELLED|0:0|00:00:00|1|vm\n";
        let ids = ["1".to_string(), "2".to_string(), "9".to_string()];
        let rows = parse(text, &ids);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].phase, rows[0].exit.map(|e| e.code)),
            (Phase::Failed, Some(3))
        );
        assert_eq!(rows[1].state, "CANCELLED");
        assert!(parse("3|RUNNING|0:0|00:01:00|1|vm\n", &["3".into()]).is_empty());
        assert!(parse("garbage\n", &ids).is_empty());
        assert_eq!(
            sacct_command(&["1".into(), "2".into()], true),
            "sacct -c -X -n -P -j 1,2 -o JobID,State,ExitCode,Elapsed,NNodes,NodeList"
        );
    }

    /// A job name holding a newline and `|` (as a stand-in sacct printed it when JobName was
    /// asked) made a second row: job 201 COMPLETED beside its real FAILED. Without JobName no
    /// field is free text; a line of another shape is no row, and an id printed twice is
    /// believed neither time.
    #[test]
    fn a_forged_row_is_never_a_job() {
        let ids = ["200".to_string(), "201".to_string()];
        let forged = "200|FAILED|1:0|00:01:00|1|n1|evil\n201|COMPLETED|0:0|00:01:00|1|n1|x\n";
        assert!(parse(forged, &ids).is_empty(), "seven fields: not rows");
        let twice = "201|FAILED|1:0|00:01:00|1|n1\n201|COMPLETED|0:0|00:01:00|1|n1\n";
        assert!(
            parse(twice, &ids).is_empty(),
            "an id twice is believed neither time"
        );
        let one = parse("201|FAILED|1:0|00:01:00|1|n1\n", &ids);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].phase, Phase::Failed);
        // Names, asked apart: a name forging a line repeats an id and is believed neither
        // time; a | in a name stays in it; an id not asked is not named.
        let names = "200|evil\n201|forged\n201|train|x\n999|other\n";
        assert_eq!(
            parse_names(names, &ids),
            [("200".to_string(), "evil".to_string())]
        );
        assert_eq!(
            parse_names("201|train|x\n", &ids),
            [("201".to_string(), "train|x".to_string())]
        );
    }
}
