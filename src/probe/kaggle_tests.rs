//! Each form quoted from the `kaggle` 2.2.5 package's source (file:line in the module's doc)
//! and from a run of that CLI against canned HTTP answers.

use super::*;

#[test]
fn every_status_the_enum_allows_reads_as_its_name() {
    for word in [
        "QUEUED",
        "RUNNING",
        "COMPLETE",
        "ERROR",
        "CANCEL_REQUESTED",
        "CANCEL_ACKNOWLEDGED",
        "NEW_SCRIPT",
    ] {
        let text = format!("alice/my-kernel has status \"KernelWorkerStatus.{word}\"\n");
        let got = parse_status("alice/my-kernel", &text).expect("parses");
        assert_eq!(got.word, word);
        assert_eq!(got.failure, None);
    }
}

#[test]
fn the_1x_bare_words_read_the_same() {
    let got = parse_status("a/bcdef", "a/bcdef has status \"cancelAcknowledged\"\n");
    assert_eq!(got.expect("parses").word, "CANCEL_ACKNOWLEDGED");
    let got = parse_status("a/bcdef", "a/bcdef has status \"running\"\n");
    assert_eq!(got.expect("parses").word, "RUNNING");
}

#[test]
fn a_failure_message_is_kept_across_its_newlines_and_warnings_are_skipped() {
    let text = "Warning: Looks like you're using an outdated `kaggle` version (installed: 2.2.5), please consider upgrading to the latest version (2.3.0)\n\
                alice/my-kernel has status \"KernelWorkerStatus.ERROR\"\n\
                Failure message: \"Your notebook tried to allocate more memory\n\
                than is available. It has restarted.\"\n";
    let got = parse_status("alice/my-kernel", text).expect("parses");
    assert_eq!(got.word, "ERROR");
    assert_eq!(
        got.failure.as_deref(),
        Some("Your notebook tried to allocate more memory than is available. It has restarted.")
    );
}

#[test]
fn another_kernels_status_or_garbage_is_a_located_error() {
    let e = parse_status(
        "alice/my-kernel",
        "bob/x has status \"KernelWorkerStatus.RUNNING\"\n",
    )
    .expect_err("another kernel");
    assert_eq!(e.line, 1);
    assert!(e.to_string().contains("not of \"alice/my-kernel\""), "{e}");
    let e = parse_status("alice/my-kernel", "<html>rate limited</html>\n").expect_err("garbage");
    assert!(
        e.to_string().starts_with("kaggle kernels status line 1"),
        "{e}"
    );
    let e = parse_status("alice/my-kernel", "").expect_err("nothing");
    assert!(
        e.to_string()
            .contains("no `alice/my-kernel has status` line"),
        "{e}"
    );
    let e = parse_status("a/bcdef", "a/bcdef has status \"x;rm\"\n").expect_err("a word");
    assert!(e.to_string().contains("not a state name"), "{e}");
}

#[test]
fn the_list_reads_refs_and_last_run_times_with_crlf_and_a_page_token() {
    let text = "Next Page Token = CAEQAA\n\
                ref,title,author,lastRunTime,totalVotes\r\n\
                alice/my-kernel,My Kernel,Alice Smith,2024-05-01 12:34:56.789000,3\r\n\
                alice/other-kernel,\"Other, \"\"quoted\"\" kernel\",Alice Smith,2024-05-02 01:02:03,0\r\n\
                alice/never-run,Never run,Alice Smith,None,0\r\n";
    let got = parse_list(text).expect("parses");
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].0, "alice/my-kernel");
    assert_eq!(
        got[0].1.map(|t| t.to_rfc3339()),
        Some("2024-05-01T12:34:56.789+00:00".into())
    );
    assert_eq!(got[1].0, "alice/other-kernel");
    assert_eq!(got[2].1, None);
    assert_eq!(parse_list("Not found\n").expect("none"), Vec::new());
    let e = parse_list("ref,title\r\nx,y\r\n").expect_err("columns");
    assert!(e.to_string().contains("ref and lastRunTime"), "{e}");
    let e = parse_list("ref,lastRunTime\r\na/b,yesterday\r\n").expect_err("time");
    assert!(
        e.to_string()
            .starts_with("kaggle kernels list --csv line 2"),
        "{e}"
    );
}

#[test]
fn the_quota_reads_the_gpu_row_in_hours() {
    let text = "resource,used,remaining,total,refreshAt\r\n\
                GPU,12.50h,17.50h,30.00h,2024-05-04T00:00:00+00:00\r\n\
                TPU,0.00h,20.00h,20.00h,2024-05-04T00:00:00+00:00\r\n";
    let q = parse_quota(text).expect("parses").expect("a GPU row");
    assert_eq!(
        (q.used_hours, q.remaining_hours, q.total_hours),
        (12.5, 17.5, 30.0)
    );
    assert_eq!(
        q.refresh_at.map(|t| t.to_rfc3339()),
        Some("2024-05-04T00:00:00+00:00".into())
    );
    assert_eq!(
        parse_quota("No quota information available\n").expect("none"),
        None
    );
    let e = parse_quota("resource,used,remaining,total,refreshAt\r\nGPU,lots,1h,2h,x\r\n")
        .expect_err("hours");
    assert!(e.to_string().contains("used \"lots\" is not hours"), "{e}");
}

#[test]
fn metadata_says_the_accelerator_in_either_boolean_form() {
    let pulled = r#"{"id": "alice/my-kernel", "enable_gpu": true, "enable_tpu": false, "machine_shape": "NvidiaTeslaT4"}"#;
    let a = parse_metadata(pulled).expect("parses");
    assert!(a.gpu && !a.tpu);
    assert_eq!(a.machine, "NvidiaTeslaT4");
    let init = r#"{"id": "alice/my-kernel", "enable_gpu": "false", "enable_tpu": "false", "machine_shape": ""}"#;
    assert_eq!(
        parse_metadata(init).expect("parses"),
        Accelerator::default()
    );
    let e = parse_metadata("{\n\"id\": ").expect_err("cut");
    assert!(
        e.to_string().starts_with("kernel-metadata.json line 2"),
        "{e}"
    );
}

/// What `kernels files --csv` prints for a version with output, with none (the API's empty
/// list: a header alone; no list: "No files found"), and what it cannot be.
#[test]
fn the_output_files_are_counted_and_none_is_zero() {
    let kept = "Next Page Token = CAEQAA\nname,size,creationDate\r\n\
                submission.csv,1024,2026-11-30 10:00:00\r\n";
    assert_eq!(parse_files(kept), Ok(1));
    assert_eq!(parse_files("name,size,creationDate\r\n"), Ok(0));
    assert_eq!(parse_files("No files found\n"), Ok(0));
    let e = parse_files("ref,title\nx,y\n").expect_err("another table");
    assert!(e.to_string().contains("expected the columns name"), "{e}");
}

proptest::proptest! {
    #[test]
    fn no_text_panics_a_parser(text in "(?s).{0,400}") {
        let _ = parse_status("alice/my-kernel", &text);
        let _ = parse_list(&text);
        let _ = parse_quota(&text);
        let _ = parse_metadata(&text);
    }
}
