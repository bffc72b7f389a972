//! `squeue -h -o '%i|%T|%M|%l|%L'`: a Slurm job's state, time used, time limit and time left.
//!
//! Slurm prints durations as `[days-]hours:minutes:seconds`, shorter as `minutes:seconds`, and
//! words (`UNLIMITED`, `NOT_SET`, `INVALID`) where there is no number; those become `None`.

use std::time::Duration;

use serde::Serialize;

use super::error::ParseError;

const PROBE: &str = "squeue";

/// The `-o` format the probe asks for; the parser reads these five fields in this order.
pub const SQUEUE_FORMAT: &str = "%i|%T|%M|%l|%L";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlurmJob {
    pub id: String,
    /// The job's name where the reader knows it (a cluster's queue does; a box inside a job
    /// reads only its own times).
    pub name: Option<String>,
    /// RUNNING, PENDING, COMPLETING, …
    pub state: String,
    pub used: Option<Duration>,
    pub limit: Option<Duration>,
    pub left: Option<Duration>,
}

/// `1-02:03:04`, `02:03:04`, `3:04`; None for Slurm's words for "no limit".
pub fn parse_slurm_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (days, clock) = match text.split_once('-') {
        Some((d, rest)) => (d.parse::<u64>().ok()?, rest),
        None => (0, text),
    };
    let parts: Vec<u64> = clock
        .split(':')
        .map(|p| p.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    let (h, m, s) = match parts.as_slice() {
        [h, m, s] => (*h, *m, *s),
        [m, s] => (0, *m, *s),
        [m] => (0, *m, 0),
        _ => return None,
    };
    if m >= 60 || s >= 60 {
        return None;
    }
    let hours = days.checked_mul(24)?.checked_add(h)?;
    let secs = hours.checked_mul(3600)?.checked_add(m * 60 + s)?;
    Some(Duration::from_secs(secs))
}

/// Every job line; `id` picks the job when the user named it (`instance_id`), else a lone job
/// or the only RUNNING one is taken, and several running jobs with no id named is an error
/// saying so.
pub fn parse_squeue(text: &str, id: Option<&str>) -> Result<Option<SlurmJob>, ParseError> {
    let mut jobs = Vec::new();
    for (n, line) in text.lines().enumerate().take(super::MAX_LINES) {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('|').map(str::trim).collect();
        let [job, state, used, limit, left] = fields.as_slice() else {
            return Err(ParseError::new(
                PROBE,
                n + 1,
                format!(
                    "expected 5 fields ({SQUEUE_FORMAT}), found {}: {}",
                    fields.len(),
                    crate::sanitize::line(line, 120)
                ),
            ));
        };
        jobs.push(SlurmJob {
            name: None,
            id: crate::sanitize::line(job, 40),
            state: crate::sanitize::line(state, 40),
            used: parse_slurm_duration(used),
            limit: parse_slurm_duration(limit),
            left: parse_slurm_duration(left),
        });
    }
    if let Some(id) = id {
        return Ok(jobs.into_iter().find(|j| j.id == id));
    }
    if jobs.len() == 1 {
        return Ok(jobs.pop());
    }
    let mut running = jobs.into_iter().filter(|j| j.state == "RUNNING");
    match (running.next(), running.next()) {
        (Some(_), Some(_)) => Err(ParseError::new(
            PROBE,
            1,
            "several running jobs: set instance_id to the job id to pick one",
        )),
        (job, _) => Ok(job),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_durations_in_every_spelling() {
        let d = |s| parse_slurm_duration(s).map(|d| d.as_secs());
        assert_eq!(d("1-02:03:04"), Some(93_784));
        assert_eq!(d("02:03:04"), Some(7_384));
        assert_eq!(d("3:04"), Some(184));
        assert_eq!(d("0:00"), Some(0));
        assert_eq!(d("UNLIMITED"), None);
        assert_eq!(d("NOT_SET"), None);
        assert_eq!(d("INVALID"), None);
        assert_eq!(d("1:75:00"), None);
        assert_eq!(d("99999999999999999-00:00:00"), None);
    }

    #[test]
    fn the_named_job_or_the_only_running_one() {
        let text =
            "4242|RUNNING|3:12:00|12:00:00|8:48:00\n4243|PENDING|0:00|1-00:00:00|1-00:00:00\n";
        let job = parse_squeue(text, None).expect("parses").expect("a job");
        assert_eq!(job.id, "4242");
        assert_eq!(job.left, Some(Duration::from_secs(8 * 3600 + 48 * 60)));
        let pending = parse_squeue(text, Some("4243"))
            .expect("parses")
            .expect("a job");
        assert_eq!(pending.state, "PENDING");
        assert_eq!(parse_squeue(text, Some("1")).expect("parses"), None);
        assert_eq!(parse_squeue("", None).expect("parses"), None);
    }

    #[test]
    fn garbage_and_ambiguity_are_located_errors() {
        let err = parse_squeue("4242|RUNNING\n", None).expect_err("short line");
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("expected 5 fields"), "{err}");
        let two = "1|RUNNING|0:01|1:00:00|59:59\n2|RUNNING|0:01|1:00:00|59:59\n";
        let err = parse_squeue(two, None).expect_err("ambiguous");
        assert!(err.reason.contains("instance_id"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "\\PC*") {
            let _ = parse_squeue(&text, None);
            let _ = parse_slurm_duration(&text);
        }
    }
}
