//! Tables over hand-written records for cases a capture cannot show, then the real captures
//! in tests/fixtures/slurm (22.05, the test cluster; README there gives the command).

use super::*;

const SEP: &str = "~rw5f0c2e9a7b1d3846~";

/// A record from its 16 values, as squeue prints it.
fn record(values: [&str; 16]) -> String {
    let mut out: String = values.iter().map(|v| format!("{v}{SEP}")).collect();
    out.push('\n');
    out
}

fn base() -> [&'static str; 16] {
    [
        "42",
        "train",
        "RUNNING",
        "None",
        "1:02:03",
        "2-00:00:00",
        "3-00:00:00",
        "2",
        "gpu[01-02]",
        "cpu=16,mem=64G,node=2,billing=16,gres/gpu=8",
        "gres/gpu:4",
        "1",
        "1",
        "0:0",
        "2026-11-25T17:09:07",
        "2026-11-25T17:09:06",
    ]
}

#[test]
fn the_command_asks_every_field_with_the_separator_and_a_fixed_time_format() {
    let q = SqueueQuery {
        user: None,
        partition: None,
    };
    let cmd = squeue_command(&q, SEP);
    assert!(
        cmd.starts_with("SLURM_TIME_FORMAT=%Y-%m-%dT%H:%M:%S squeue --me -h -t all -O 'JobID:~rw")
    );
    assert_eq!(cmd.matches(SEP).count(), FIELDS.len());
    let q = SqueueQuery {
        user: Some("ana"),
        partition: Some("gpu"),
    };
    assert!(squeue_command(&q, SEP).contains("squeue -u 'ana' -p 'gpu' -h"));
    assert_eq!(separator("00ff"), "~rw00ff~");
}

#[test]
fn a_running_job_with_every_field() {
    let rows = parse_squeue_rows(&record(base()), SEP).expect("parses");
    let [job] = rows.as_slice() else {
        panic!("one row: {rows:?}")
    };
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.elapsed, SlurmTime::Known(Duration::from_secs(3723)));
    assert_eq!(job.time_left(), Some(Duration::from_secs(2 * 86_400)));
    assert_eq!((job.nodes, job.gpus), (Some(2), Some(8)));
    assert_eq!((job.restarts, job.requeue), (Some(1), Some(true)));
    assert_eq!(
        job.exit,
        Some(ExitCode {
            code: 0,
            signal: None
        })
    );
    assert_eq!(job.reason, None);
    assert_eq!(job.node_list.as_deref(), Some("gpu[01-02]"));
}

/// What a table row expects of the parsed job.
type Check = dyn Fn(&SqueueRow) -> bool;

#[test]
fn states_times_gpus_and_exit_codes_in_every_spelling() {
    let cases: &[(usize, &str, &Check)] = &[
        (2, "OUT_OF_MEMORY", &|r| r.state == JobState::OutOfMemory),
        (2, "NODE_FAIL", &|r| r.state == JobState::NodeFail),
        (2, "PREEMPTED", &|r| r.state == JobState::Preempted),
        (2, "CANCELLED by 0", &|r| r.state == JobState::Cancelled),
        (2, "BOOT_FAIL", &|r| {
            r.state == JobState::Other("BOOT_FAIL".into())
        }),
        (2, "TIMEOUT", &|r| r.time_left().is_none()),
        (3, "Resources", &|r| {
            r.reason_words.as_deref() == Some("waiting for nodes, CPUs or GPUs to free up")
        }),
        (3, "Some site's own, words", &|r| {
            r.reason_words.as_deref() == Some("Some site's own, words")
        }),
        (4, "5:07", &|r| {
            r.elapsed.known() == Some(Duration::from_secs(307))
        }),
        (5, "UNLIMITED", &|r| r.left == SlurmTime::Unlimited),
        (5, "NOT_SET", &|r| r.left == SlurmTime::NotSet),
        (5, "INVALID", &|r| r.left == SlurmTime::Invalid),
        (9, "cpu=1,gres/gpu:a100=2,gres/gpu:h100=1", &|r| {
            r.gpus == Some(3)
        }),
        (9, "cpu=1,node=1", &|r| r.gpus == Some(8)),
        (13, "768", &|r| {
            r.exit
                == Some(ExitCode {
                    code: 3,
                    signal: None,
                })
        }),
        (13, "9", &|r| {
            r.exit
                == Some(ExitCode {
                    code: 0,
                    signal: Some(9),
                })
        }),
        (13, "137:9", &|r| {
            r.exit
                == Some(ExitCode {
                    code: 137,
                    signal: Some(9),
                })
        }),
        (14, "N/A", &|r| r.start.is_none()),
        (12, "0", &|r| r.requeue == Some(false)),
    ];
    for (field, value, check) in cases {
        let mut values = base();
        values[*field] = value;
        let rows = parse_squeue_rows(&record(values), SEP).expect("parses");
        assert!(
            check(&rows[0]),
            "{} = {value:?}: {:?}",
            FIELDS[*field],
            rows[0]
        );
    }
    assert_eq!(gpus_of("cpu=1,node=1", "gres:gpu:fake:1", Some(2)), Some(2));
    assert_eq!(gpus_of("cpu=1,node=1", "N/A", Some(1)), Some(0));
    assert_eq!(gpus_of("", "", None), None);
}

#[test]
fn errors_name_the_line_and_the_field() {
    let mut values = base();
    values[4] = "ten minutes";
    let text = format!("{}{}", record(base()), record(values));
    let err = parse_squeue_rows(&text, SEP).expect_err("bad time");
    assert_eq!(err.line, 2);
    assert!(err.reason.starts_with("TimeUsed: not a duration"), "{err}");
    let err = parse_squeue_rows(&format!("42{SEP}train{SEP}\n"), SEP).expect_err("short");
    assert!(
        err.reason
            .contains("record ends after 2 of 16 fields (State missing)"),
        "{err}"
    );
    let err = parse_squeue_rows("squeue: error: Invalid user: nobody\n", SEP).expect_err("prose");
    assert_eq!(err.line, 1);
}

#[test]
fn names_with_newlines_and_escapes_stay_in_their_record_and_are_sanitized() {
    let mut values = base();
    values[1] = "evil\n\u{1b}[31mname|with, commas";
    let text = format!("{}{}", record(values), record(base()));
    let rows = parse_squeue_rows(&text, SEP).expect("parses");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].name, "evilname|with, commas");
    let mut bad = base();
    bad[7] = "two";
    let err = parse_squeue_rows(&format!("{}{}", record(values), record(bad)), SEP)
        .expect_err("bad count");
    assert_eq!(err.line, 3, "the second record starts on line 3: {err}");
}

fn capture(text: &str) -> Vec<SqueueRow> {
    // The README's header lines start with '#'; the capture follows them verbatim.
    let body: String = text
        .split_inclusive('\n')
        .skip_while(|l| l.starts_with('#'))
        .collect();
    parse_squeue_rows(&body, SEP).expect("a real capture parses")
}

fn job<'a>(rows: &'a [SqueueRow], name: &str) -> &'a SqueueRow {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no job {name:?} in {rows:?}"))
}

#[test]
fn the_real_queue_early_on() {
    let rows = capture(include_str!("../../../tests/fixtures/slurm/early.txt"));
    let gpu = job(&rows, "train-gpu");
    assert_eq!((gpu.state.clone(), gpu.gpus), (JobState::Running, Some(1)));
    assert_eq!(gpu.node_list.as_deref(), Some("vm"));
    let failed = job(&rows, "exits-3");
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(
        failed.exit,
        Some(ExitCode {
            code: 3,
            signal: None
        })
    );
    let later = job(&rows, "later");
    assert_eq!(later.reason.as_deref(), Some("BeginTime"));
    assert!(later.start.is_some(), "a --begin job knows its start");
    assert_eq!(
        job(&rows, "sweep, lr=3e-4 | seed 1").state,
        JobState::Pending
    );
    assert_eq!(job(&rows, "to-cancel").state, JobState::Cancelled);
    assert_eq!(job(&rows, "ctlnlname").state, JobState::Pending);
}

#[test]
fn the_real_queue_later() {
    let rows = capture(include_str!("../../../tests/fixtures/slurm/later.txt"));
    let walltime = job(&rows, "walltime");
    assert_eq!(walltime.state, JobState::Timeout);
    assert_eq!(walltime.limit, SlurmTime::Known(Duration::from_secs(60)));
    assert_eq!(walltime.time_left(), None);
    let requeued = job(&rows, "train-gpu");
    assert_eq!(requeued.restarts, Some(1));
    assert_eq!(requeued.requeue, Some(true));
    assert!(requeued.state.is_live(), "{requeued:?}");
    let killed = job(&rows, "killed9");
    assert_eq!(killed.exit.and_then(|e| e.signal), Some(9));
}

proptest::proptest! {
    #[test]
    fn never_panics(text in "(\\PC|~rw5f0c2e9a7b1d3846~|\n){0,200}") {
        let _ = parse_squeue_rows(&text, SEP);
    }

    #[test]
    fn never_panics_on_any_value(values in proptest::array::uniform16("\\PC{0,12}")) {
        let values: [&str; 16] = std::array::from_fn(|i| values[i].as_str());
        let _ = parse_squeue_rows(&record(values), SEP);
    }
}
