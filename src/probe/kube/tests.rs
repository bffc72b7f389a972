//! The hand-written fixtures in tests/fixtures/kubernetes read back typed; each refusal located.

use super::*;

/// A fixture's items split by kind into the two lists kubectl prints, as text.
pub(crate) fn fixture_lists(name: &str) -> (String, String) {
    let path = format!(
        "{}/tests/fixtures/kubernetes/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    let items = doc["items"].as_array().expect("items");
    let list = |kind: &str| {
        let of: Vec<_> = items
            .iter()
            .filter(|i| i["kind"] == kind)
            .cloned()
            .collect();
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": of}).to_string()
    };
    (list("Job"), list("Pod"))
}

/// A fixture's Jobs and pods, parsed.
pub(crate) fn fixture(name: &str) -> (Vec<KubeJob>, Vec<KubePod>) {
    let (jobs, pods) = fixture_lists(name);
    (
        parse_jobs(&jobs).expect("jobs parse"),
        parse_pods(&pods).expect("pods parse"),
    )
}

#[test]
fn jobs_and_pods_read_typed_from_every_fixture() {
    let (jobs, pods) = fixture("backoff-failed");
    let [job] = jobs.as_slice() else {
        panic!("one job: {jobs:?}")
    };
    assert_eq!(job.metadata.name, "train-crash");
    assert_eq!(job.spec.backoff_limit, Some(2));
    assert_eq!(job.status.failed, Some(3));
    let failed = job.condition("Failed").expect("Failed condition");
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert_eq!(pods.len(), 3);
    assert!(pods.iter().all(|p| p.job_name() == Some("train-crash")));
    let term = pods[0].status.container_statuses[0]
        .state
        .terminated
        .as_ref()
        .expect("terminated");
    assert_eq!(term.exit_code, Some(3));

    let (_, pods) = fixture("oom-restarted");
    let status = &pods[0].status.container_statuses[0];
    assert_eq!(status.restart_count, 2);
    let last = status.last_state.terminated.as_ref().expect("lastState");
    assert_eq!(last.reason.as_deref(), Some("OOMKilled"));
    let limit = pods[0].spec.containers[0].resources.limits.get("memory");
    assert_eq!(limit.map(Quantity::text).as_deref(), Some("16Gi"));

    let (_, pods) = fixture("checkpoint-emptydir");
    let volumes = &pods[0].spec.volumes;
    assert!(volumes[0].empty_dir.is_some() && volumes[0].persistent_volume_claim.is_none());
    assert_eq!(
        volumes[1]
            .persistent_volume_claim
            .as_ref()
            .map(|c| c.claim_name.as_str()),
        Some("datasets")
    );
    for name in ["running-pvc", "evicted", "unschedulable"] {
        let (jobs, pods) = fixture(name);
        assert_eq!(jobs.len(), 1, "{name}");
        assert!(!pods.is_empty(), "{name}");
    }
}

#[test]
fn the_legacy_job_name_label_joins_too() {
    let text = r#"{"kind":"List","items":[{"metadata":{"name":"p","labels":{"job-name":"old"}}}]}"#;
    let pods = parse_pods(text).expect("parses");
    assert_eq!(pods[0].job_name(), Some("old"));
}

#[test]
fn a_quantity_may_be_a_number_and_a_gpu_count_is_whole() {
    let text = r#"{"kind":"List","items":[{"spec":{"containers":[{"resources":
        {"limits":{"nvidia.com/gpu":2,"cpu":"500m"}}}]}}]}"#;
    let pods = parse_pods(text).expect("parses");
    let limits = &pods[0].spec.containers[0].resources.limits;
    assert_eq!(
        limits.get("nvidia.com/gpu").and_then(Quantity::whole),
        Some(2)
    );
    assert_eq!(limits.get("cpu").and_then(Quantity::whole), None);
}

#[test]
fn each_refusal_names_the_probe_line_and_column() {
    let bad_type = "{\"kind\": \"List\",\n \"items\": [{\"spec\": {\"backoffLimit\": \"six\"}}]}";
    let e = parse_jobs(bad_type).expect_err("refused");
    assert_eq!((e.probe, e.line), (JOBS_PROBE, 2));
    assert!(e.reason.starts_with("column "), "{e}");
    assert!(e.reason.contains("invalid type"), "{e}");
    assert!(!e.reason.contains(" at line "), "{e}");

    let cut = "{\"kind\": \"List\", \"items\": [\n{\"metadata\": ";
    let e = parse_pods(cut).expect_err("refused");
    assert_eq!((e.probe, e.line), (PODS_PROBE, 2));

    let status = r#"{"kind": "Status", "status": "Failure", "message": "forbidden"}"#;
    let e = parse_jobs(status).expect_err("refused");
    assert!(e.reason.contains("expected kind List"), "{e}");

    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let e = parse_pods(&deep).expect_err("too deep is refused, not a stack overflow");
    assert_eq!(e.probe, PODS_PROBE);

    let huge = " ".repeat(MAX_KUBE_BYTES + 1);
    let e = parse_jobs(&huge).expect_err("too big");
    assert!(e.reason.contains("over 32 MiB"), "{e}");
}

proptest::proptest! {
    #[test]
    fn never_panics(text in "\\PC{0,300}") {
        let _ = parse_jobs(&text);
        let _ = parse_pods(&text);
    }

    /// Valid JSON of the right outer shape with arbitrary values where fields go.
    #[test]
    fn never_panics_on_any_value(
        key in "(name|labels|status|phase|conditions|containerStatuses|restartCount|spec|limits)",
        value in "(null|true|-1|1e400|\"x\"|\\{\\}|\\[\\]|\\[1,\"a\"\\]|18446744073709551616)",
    ) {
        let text = format!(
            r#"{{"kind":"List","items":[{{"metadata":{{"{key}":{value}}},"spec":{{"{key}":{value},"template":{{"spec":{{"{key}":{value}}}}}}},"status":{{"{key}":{value},"containerStatuses":[{{"{key}":{value}}}]}}}}]}}"#
        );
        let _ = parse_jobs(&text);
        let _ = parse_pods(&text);
    }
}
