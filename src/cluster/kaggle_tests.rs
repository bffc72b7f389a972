//! A Kaggle member's kernels as rows: each state Kaggle reports, the commit's limit as a clock,
//! the notebook traps as dangers, and a read that failed as no news.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use super::*;
use crate::config::KaggleConfig;
use crate::probe::kaggle::{Accelerator, GpuQuota, KernelStatus};

fn member(gpu: Option<bool>) -> KaggleConfig {
    KaggleConfig {
        name: "kaggle".into(),
        kernels: vec!["alice/train-llama".into()],
        period: Duration::from_secs(300),
        gpu,
        program: "kaggle".into(),
        pull: None,
    }
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 2, 12, 0, 0)
        .single()
        .expect("time")
}

fn kernel(word: &str, failure: Option<&str>, ran_hours: f64) -> KernelRead {
    KernelRead {
        kernel: "alice/train-llama".into(),
        status: Ok(KernelStatus {
            word: word.into(),
            failure: failure.map(String::from),
        }),
        last_run: Some(now() - chrono::Duration::seconds((ran_hours * 3600.0) as i64)),
        accelerator: None,
        outputs: None,
    }
}

fn one(read: KernelRead, gpu: Option<bool>) -> JobRow {
    let r = reading(
        &member(gpu),
        KaggleRead {
            kernels: vec![read],
            quota: Ok(None),
            quota_note: None,
        },
        now(),
    );
    assert_eq!(r.error, None);
    r.jobs.into_iter().next().expect("a row")
}

#[test]
fn each_state_is_a_phase_and_an_error_says_it_saved_nothing() {
    for (word, phase) in [
        ("QUEUED", Phase::Pending),
        ("RUNNING", Phase::Running),
        ("COMPLETE", Phase::Succeeded),
        ("ERROR", Phase::Failed),
        ("CANCEL_REQUESTED", Phase::Ending),
        ("CANCEL_ACKNOWLEDGED", Phase::Cancelled),
        ("NEW_SCRIPT", Phase::Other),
        ("PAUSED", Phase::Other),
    ] {
        let job = one(kernel(word, None, 0.5), None);
        assert_eq!((job.phase, job.state.as_str()), (phase, word));
        assert_eq!(job.id, "alice/train-llama");
        assert_eq!(job.name, "train-llama");
    }
    let job = one(
        kernel(
            "ERROR",
            Some("Your notebook tried to allocate more memory"),
            1.0,
        ),
        None,
    );
    assert_eq!(
        job.summary(),
        "ERROR: a commit with a failing cell saves nothing: Your notebook tried to allocate more memory"
    );
    assert_eq!(job.severity(), crate::signals::Severity::Crit);
    let job = one(kernel("PAUSED", None, 1.0), None);
    assert_eq!(
        job.reason_words.as_deref(),
        Some("a state rigwatch does not know: PAUSED")
    );
}

#[test]
fn a_running_commit_has_its_limit_as_a_walltime_clock() {
    let job = one(kernel("RUNNING", None, 8.5), None);
    assert_eq!(job.elapsed_secs, Some(8 * 3600 + 1800));
    assert_eq!(job.limit_secs, Some(9 * 3600));
    let clock = job.walltime.as_ref().expect("a clock");
    assert_eq!(clock.remaining_secs, Some(1800));
    assert!(
        clock
            .message
            .starts_with("commit of alice/train-llama reaches Kaggle's 9 h limit in 30m"),
        "{}",
        clock.message
    );
    let (severity, why) = job.judged();
    assert_eq!(severity, crate::signals::Severity::Warn);
    assert_eq!(why.as_deref(), Some("reaches its walltime in 30m"));
    // On CPU the limit is 12 h.
    let mut cpu = kernel("RUNNING", None, 8.5);
    cpu.accelerator = Some(Accelerator::default());
    assert_eq!(one(cpu, None).limit_secs, Some(12 * 3600));
}

#[test]
fn a_gpu_notebook_left_on_none_and_a_long_queue_are_dangers() {
    let mut cpu = kernel("RUNNING", None, 1.0);
    cpu.accelerator = Some(Accelerator::default());
    let job = one(cpu.clone(), Some(true));
    assert!(
        job.dangers[0].starts_with("runs on CPU"),
        "{:?}",
        job.dangers
    );
    assert!(
        one(cpu, None).dangers.is_empty(),
        "no intent stated, nothing judged"
    );
    let job = one(kernel("QUEUED", None, 1.5), None);
    assert!(
        job.dangers[0].starts_with("queued for 1h30m"),
        "{:?}",
        job.dangers
    );
    assert!(one(kernel("QUEUED", None, 0.2), None).dangers.is_empty());
}

#[test]
fn the_quota_is_kept_and_a_commit_that_would_outrun_it_is_a_danger() {
    let r = reading(
        &member(Some(true)),
        KaggleRead {
            kernels: vec![kernel("RUNNING", None, 1.0)],
            quota: Ok(Some(GpuQuota {
                used_hours: 28.5,
                remaining_hours: 1.5,
                total_hours: 30.0,
                refresh_at: None,
                lower_bound: false,
            })),
            quota_note: None,
        },
        now(),
    );
    assert_eq!(r.quota.as_ref().map(|q| q.remaining_hours), Some(1.5));
    assert!(
        r.jobs[0].dangers[0].starts_with("the account's weekly GPU quota has 1.5 h left of 30 h"),
        "{:?}",
        r.jobs[0].dangers
    );
}

#[test]
fn one_unread_kernel_makes_the_read_an_error_with_its_words_masked() {
    let mut bad = kernel("RUNNING", None, 1.0);
    bad.status =
        Err("kaggle: 404 Client Error: Not Found \x1b[31mtoken=sk-abcdefghijklmnop".into());
    let r = reading(
        &member(None),
        KaggleRead {
            kernels: vec![kernel("RUNNING", None, 1.0), bad.clone(), bad],
            quota: Err("exit 1: KeyError".into()),
            quota_note: None,
        },
        now(),
    );
    let error = r.error.expect("an error");
    assert!(r.jobs.is_empty());
    assert_eq!(
        error,
        "kaggle: 404 Client Error: Not Found token=**** (2 of 3 kernels unread)"
    );
}

/// A complete version that kept no output is said so in its words and carries it as a danger
/// (its "ended" notice a warning); one that kept files, or whose files were not read, is not.
#[test]
fn a_complete_commit_that_kept_no_output_says_so() {
    let empty = one(
        KernelRead {
            outputs: Some(0),
            ..kernel("COMPLETE", None, 2.0)
        },
        None,
    );
    assert_eq!(empty.reason_words.as_deref(), Some(KEPT_NOTHING));
    assert_eq!(empty.dangers, vec![KEPT_NOTHING.to_string()]);
    for outputs in [Some(1), None] {
        let kept = one(
            KernelRead {
                outputs,
                ..kernel("COMPLETE", None, 2.0)
            },
            None,
        );
        assert_eq!(
            (kept.reason_words, kept.dangers.len()),
            (None, 0),
            "{outputs:?}"
        );
    }
}
