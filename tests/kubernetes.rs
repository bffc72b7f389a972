//! `[[kubernetes]]` through the real kubectl (/usr/bin/kubectl, which picks its kubectl.1.NN by
//! the server's /version) against the fake API server of tests/support/kube.rs, serving the
//! hand-written fixtures of tests/fixtures/kubernetes: what `status --json` reads, what kubectl
//! asked the server for, and the teardown primitive's DELETE.

mod support;

use std::process::Command;
use std::time::Duration;

use support::kube::FakeKube;

const ALL: [&str; 6] = [
    "running-pvc",
    "oom-restarted",
    "evicted",
    "backoff-failed",
    "unschedulable",
    "checkpoint-emptydir",
];

/// `rigwatch status --json` on `fleet` (text), HOME the server's; (exit code, document).
fn status(fake: &FakeKube, fleet: &str) -> (Option<i32>, serde_json::Value) {
    let out = run_status(fake, fleet, &["--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), json)
}

fn run_status(fake: &FakeKube, fleet: &str, args: &[&str]) -> std::process::Output {
    let config = fake.dir.path().join("fleet.toml");
    std::fs::write(&config, fleet).expect("fleet.toml");
    Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .arg("status")
        .args(args)
        .args(["--timeout", "60", "--config"])
        .arg(&config)
        .env("HOME", fake.home())
        .env("XDG_STATE_HOME", fake.dir.path().join("state"))
        .env_remove("KUBECONFIG")
        .env_remove("RIGWATCH_CONFIG")
        .output()
        .expect("status")
}

/// The table says each Job's state and reason, and a danger on a line of its own.
#[test]
fn the_status_table_shows_reasons_and_dangers() {
    let fake = FakeKube::start(&["checkpoint-emptydir", "unschedulable"]);
    let out = run_status(&fake, &fake.entry("lab", "checkpoints = \"/ckpt\"\n"), &[]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("cluster lab"), "{table}");
    assert!(
        table.contains("Pending: no node can take it: 0/3 nodes are available"),
        "{table}"
    );
    assert!(
        table.contains("danger: checkpoints in /ckpt are on emptyDir \"scratch\""),
        "{table}"
    );
}

#[test]
fn status_reads_every_kind_of_job_through_real_kubectl() {
    let fake = FakeKube::start(&ALL);
    let (code, json) = status(&fake, &fake.entry("lab", "checkpoints = \"/ckpt\"\n"));
    let lab = &json["clusters"][0];
    assert_eq!(lab["name"], "lab", "{json}");
    assert_eq!(lab["scheduler"], "kubernetes", "{lab}");
    assert!(lab["error"].is_null(), "{lab}");
    let job = |id: &str| {
        lab["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("job {id} missing: {lab}"))
    };
    let pvc = job("train-pvc");
    assert_eq!(
        (&pvc["phase"], &pvc["state"]),
        (&"running".into(), &"Running".into())
    );
    assert_eq!(pvc["gpus"], 2, "{pvc}");
    assert_eq!(pvc["node_list"], "gpu-node-1", "{pvc}");
    assert_eq!(pvc["dangers"], serde_json::json!([]), "{pvc}");
    assert_eq!(pvc["pods"][0]["phase"], "Running", "{pvc}");

    let oom = job("train-oom");
    assert_eq!(oom["reason"], "OOMKilled", "{oom}");
    assert_eq!(
        oom["reason_words"],
        "restarted after being killed for using more than its 16Gi memory limit"
    );
    assert_eq!(
        (&oom["restarts"], &oom["restart_limit"]),
        (&2.into(), &4.into())
    );

    let evicted = job("train-evicted");
    assert_eq!(evicted["reason"], "Evicted", "{evicted}");
    assert!(
        evicted["reason_words"].as_str().is_some_and(|w| w.contains(
            "The node was low on resource: ephemeral-storage. Container train was using 20Ki"
        )),
        "{evicted}"
    );
    assert_eq!(evicted["restarts"], 1, "{evicted}");

    let crash = job("train-crash");
    assert_eq!(
        (&crash["phase"], &crash["state"]),
        (&"failed".into(), &"Failed".into())
    );
    assert_eq!(crash["reason"], "BackoffLimitExceeded", "{crash}");
    assert_eq!(
        crash["reason_words"],
        "failed 3 times, past its backoff limit of 2; last: container train exited with code 3"
    );
    assert_eq!(crash["exit"]["code"], 3, "{crash}");
    assert_eq!(
        (&crash["restarts"], &crash["restart_limit"]),
        (&3.into(), &2.into())
    );

    let big = job("train-big");
    assert_eq!(
        (&big["phase"], &big["reason"]),
        (&"pending".into(), &"Unschedulable".into())
    );
    assert!(
        big["reason_words"].as_str().is_some_and(|w| w.starts_with(
            "no node can take it: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
        )),
        "{big}"
    );
    assert_eq!(big["gpus"], 8, "{big}");

    let scratch = job("train-scratch");
    assert_eq!(
        scratch["dangers"][0],
        "checkpoints in /ckpt are on emptyDir \"scratch\": lost when the pod is rescheduled; \
         mount a PVC there"
    );
    assert_eq!(lab["jobs"].as_array().map(Vec::len), Some(6), "{lab}");
    assert_eq!(code, Some(2), "a failed Job needs action now");

    // What kubectl asked: the version, then the lists with the selector, in the namespace.
    let requests = fake.requests();
    let gets: Vec<&str> = requests
        .iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.path.as_str())
        .collect();
    assert!(gets.iter().any(|p| p.starts_with("/version")), "{gets:?}");
    let selector = "labelSelector=rigwatch%3Dtrain";
    for list in [
        "/apis/batch/v1/namespaces/ml/jobs?",
        "/api/v1/namespaces/ml/pods?",
    ] {
        assert!(
            gets.iter()
                .any(|p| p.starts_with(list) && p.contains(selector)),
            "no {list} with {selector}: {gets:?}"
        );
    }
    assert!(
        fake.home().join(".kube/cache").is_dir(),
        "kubectl ran with the test's HOME, not the user's"
    );
    assert!(
        requests.iter().all(|r| r.method == "GET"),
        "reading never changes anything: {requests:?}"
    );
}

#[test]
fn a_kubectl_failure_names_the_cluster_the_command_and_kubectls_words() {
    let fake = FakeKube::start(&["running-pvc"]);
    let entry = fake
        .entry("lab", "")
        .replace("context = \"fake\"", "context = \"nope\"");
    let (code, json) = status(&fake, &entry);
    let error = json["clusters"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(error.starts_with("lab: kubectl get "), "{json}");
    assert!(
        error.contains("exit 1") && error.contains("nope"),
        "{error}"
    );
    assert!(!error.contains('\n'), "{error}");
    assert_eq!(code, Some(1), "a cluster not read is a warning");
}

/// Runs the `#[ignore]`d test `name` of this binary in a child whose HOME is `fake`'s (a
/// test cannot change its own process's environment), its kubeconfig in
/// RIGWATCH_TEST_KUBECONFIG; fails when the child's test fails.
fn in_child(fake: &FakeKube, name: &str) {
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--ignored", "--exact", name, "--nocapture"])
        .env("HOME", fake.home())
        .env("RIGWATCH_TEST_KUBECONFIG", fake.kubeconfig())
        .env_remove("KUBECONFIG")
        .output()
        .expect("child");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && said.contains("1 passed"), "{said}");
}

/// The child's cluster: the fake server's context and namespace.
fn child_cluster(period_secs: u64) -> rigwatch::config::KubeConfig {
    let kubeconfig = std::env::var("RIGWATCH_TEST_KUBECONFIG").expect("run by its parent test");
    rigwatch::config::KubeConfig {
        name: "lab".into(),
        context: "fake".into(),
        kubeconfig: Some(kubeconfig.into()),
        namespace: "ml".into(),
        selector: "rigwatch=train".into(),
        period: Duration::from_secs(period_secs),
        checkpoints: None,
        nvidia_smi: false,
        pull: None,
    }
}

/// Live, the runtime reads each Kubernetes cluster at once and then every period: one
/// `get jobs` and one `get pods` per read, never one per Job.
#[test]
fn the_runtime_polls_a_cluster_each_period() {
    let fake = FakeKube::start(&["running-pvc", "backoff-failed"]);
    in_child(&fake, "polls_child");
    let lists = |what: &str| {
        fake.requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.contains(what))
            .count()
    };
    assert_eq!(
        (lists("/jobs?"), lists("/pods?")),
        (2, 2),
        "{:?}",
        fake.requests()
    );
}

#[tokio::test]
#[ignore = "run by the_runtime_polls_a_cluster_each_period, in a child with the server's HOME"]
async fn polls_child() {
    use rigwatch::runtime::clusters::Clusters;
    let text = "poll_secs = 2\n";
    let mut fleet =
        rigwatch::config::fleet::parse(std::path::Path::new("f.toml"), text).expect("fleet");
    fleet.kubernetes.push(child_cluster(10));
    let (clusters, rx) = Clusters::start(&fleet);
    let mut rx = rx.expect("a receiver for the Kubernetes cluster");
    let started = std::time::Instant::now();
    let first = next(&mut rx).await;
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "the first read is at once"
    );
    assert_eq!(first.error, None);
    let ids: Vec<&str> = first.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["train-pvc", "train-crash"]);
    let second = next(&mut rx).await;
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "the next read waits its period"
    );
    assert_eq!(second.jobs.len(), 2);
    clusters.shutdown().await;
}

async fn next(
    rx: &mut tokio::sync::mpsc::Receiver<rigwatch::cluster::ClusterReading>,
) -> rigwatch::cluster::ClusterReading {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("a reading within 30 s")
        .expect("the channel is open")
}

/// The DELETE rigwatch sends carries propagationPolicy Background, and afterwards no pod of
/// the Job is left. The library calls run in a child (the `#[ignore]`d test below) so kubectl
/// gets this server's HOME: a test cannot change its own process's environment.
#[test]
fn delete_job_takes_its_pods_with_it() {
    let fake = FakeKube::start(&["evicted", "running-pvc"]);
    in_child(&fake, "delete_job_child");
    let deletes: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    // Two: the delete, then the child's second one, answered "not found".
    assert_eq!(deletes.len(), 2, "{deletes:?}");
    for delete in &deletes {
        assert_eq!(
            delete.path,
            "/apis/batch/v1/namespaces/ml/jobs/train-evicted"
        );
        let body: serde_json::Value = serde_json::from_str(&delete.body).expect("JSON body");
        assert_eq!(body["propagationPolicy"], "Background", "{body}");
    }
    assert_eq!(
        fake.pod_names(),
        ["train-pvc-x7k2q"],
        "the other Job's pod stays"
    );
    // --wait=false: the DELETE alone, no GET or watch of the Job until it is gone.
    let job = "/apis/batch/v1/namespaces/ml/jobs/train-evicted";
    let waits: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path.starts_with(job))
        .collect();
    assert!(waits.is_empty(), "{waits:?}");
}

#[tokio::test]
#[ignore = "run by delete_job_takes_its_pods_with_it, in a child with the server's HOME"]
async fn delete_job_child() {
    use rigwatch::transport::kubectl::{delete_job, pods_left};
    let cluster = child_cluster(30);
    let t = Duration::from_secs(60);
    assert_eq!(pods_left(&cluster, "train-evicted", t).await, Ok(2));
    delete_job(&cluster, "train-evicted", t)
        .await
        .expect("deleted");
    assert_eq!(pods_left(&cluster, "train-evicted", t).await, Ok(0));
    let gone = delete_job(&cluster, "train-evicted", t).await;
    assert!(
        gone.as_ref()
            .is_err_and(|e| e.to_string().contains("not found")),
        "{gone:?}"
    );
}

/// Why the DELETE must say Background: without a body the server orphans the pods (the
/// batch/v1 default), and the fake server does the same, so the test above can fail.
#[test]
fn a_bare_delete_orphans_the_pods() {
    use std::io::{Read, Write};
    let fake = FakeKube::start(&["running-pvc"]);
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", fake.port)).expect("connect");
    write!(
        conn,
        "DELETE /apis/batch/v1/namespaces/ml/jobs/train-pvc HTTP/1.1\r\nHost: x\r\n\
         Content-Length: 0\r\n\r\n"
    )
    .expect("send");
    let mut reply = String::new();
    conn.read_to_string(&mut reply).expect("reply");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert_eq!(fake.pod_names(), ["train-pvc-x7k2q"]);
}

/// The fake server speaks kubectl exec's WebSocket protocol (v5.channel.k8s.io): stdout
/// arrives, and the final Status sets kubectl's exit code.
#[test]
fn kubectl_exec_reaches_the_pod_over_websocket() {
    use support::kube_exec::ExecAnswer;
    let fake = FakeKube::start(&["running-pvc"]);
    fake.answer_exec(
        "train-pvc-x7k2q",
        ExecAnswer {
            stdout: "0, 97\n".into(),
            ..ExecAnswer::default()
        },
    );
    let args = [
        "--context=fake",
        "-n",
        "ml",
        "exec",
        "train-pvc-x7k2q",
        "-c",
        "train",
        "--",
    ];
    let out = fake.kubectl(&[&args[..], &["nvidia-smi", "-L"]].concat());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said} {:?}", fake.requests());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0, 97\n");
    let exec = fake
        .requests()
        .into_iter()
        .find(|r| r.path.contains("/exec?"))
        .expect("an exec request");
    assert!(
        exec.path
            .starts_with("/api/v1/namespaces/ml/pods/train-pvc-x7k2q/exec?")
            && exec.path.contains("command=nvidia-smi&command=-L")
            && exec.path.contains("container=train"),
        "{exec:?}"
    );
    fake.answer_exec(
        "train-pvc-x7k2q",
        ExecAnswer {
            stderr: "boom\n".into(),
            code: 3,
            ..ExecAnswer::default()
        },
    );
    let out = fake.kubectl(&[&args[..], &["false"]].concat());
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        fake.requests().iter().all(|r| r.method != "POST"),
        "never the SPDY fallback: {:?}",
        fake.requests()
    );
}

/// With `nvidia_smi = true`, each running pod's GPUs are read inside it through kubectl exec
/// (its first container): what the Job holds next to how busy it is. A pod whose exec fails
/// says why; a pod that ended is never exec'd.
#[test]
fn status_reads_gpu_use_inside_running_pods() {
    use support::kube_exec::ExecAnswer;
    let fake = FakeKube::start(&["running-pvc", "evicted", "backoff-failed"]);
    fake.answer_exec(
        "train-pvc-x7k2q",
        ExecAnswer {
            stdout: "0, GPU-6f1c, 97, 40211, 81559\n1, GPU-8a2e, 0, 2, 81559\n".into(),
            ..ExecAnswer::default()
        },
    );
    fake.answer_exec(
        "train-evicted-f6g8h",
        ExecAnswer {
            stderr: "NVIDIA-SMI has failed because it couldn't communicate with the driver\n"
                .into(),
            code: 9,
            ..ExecAnswer::default()
        },
    );
    let (_, json) = status(&fake, &fake.entry("lab", "nvidia_smi = true\n"));
    let lab = &json["clusters"][0];
    let pod = |job: &str, pod: &str| {
        lab["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == job))
            .and_then(|j| j["pods"].as_array())
            .and_then(|pods| pods.iter().find(|p| p["name"] == pod))
            .cloned()
            .unwrap_or_else(|| panic!("pod {pod} missing: {lab}"))
    };
    let busy = pod("train-pvc", "train-pvc-x7k2q");
    assert_eq!(busy["gpus"][0]["util_pct"], 97, "{busy}");
    assert_eq!(busy["gpus"][0]["uuid"], "GPU-6f1c", "{busy}");
    assert_eq!(busy["gpus"][1]["util_pct"], 0, "{busy}");
    assert_eq!(busy["gpus"][1]["mem_total_mib"], 81559, "{busy}");
    let broken = pod("train-evicted", "train-evicted-f6g8h");
    let error = broken["gpu_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("exit 9") && error.contains("couldn't communicate with the driver"),
        "{broken}"
    );
    let execs: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/exec?"))
        .map(|r| r.path)
        .collect();
    assert_eq!(execs.len(), 2, "only the two running pods: {execs:?}");
    assert!(
        execs.iter().all(|p| p.contains("command=nvidia-smi")
            && p.contains("container=train")
            && p.contains("--format%3Dcsv%2Cnoheader%2Cnounits")),
        "{execs:?}"
    );
}

/// An API server that accepts and never answers: kubectl (and the kubectl.1.NN the dispatcher
/// started) is ended at the timeout, and the cluster says so in one line.
#[test]
fn a_silent_api_server_is_given_up_on_at_the_timeout() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let fake = FakeKube::start(&[]);
    let kubeconfig = fake.dir.path().join("silent.kubeconfig");
    let text = std::fs::read_to_string(fake.kubeconfig()).expect("kubeconfig");
    let text = text.replace(&format!(":{}", fake.port), &format!(":{port}"));
    std::fs::write(&kubeconfig, text).expect("write");
    let entry = fake.entry("lab", "").replace(
        &fake.kubeconfig().display().to_string(),
        &kubeconfig.display().to_string(),
    );
    let config = fake.dir.path().join("fleet.toml");
    std::fs::write(&config, entry).expect("fleet.toml");
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_rigwatch"))
        .args(["status", "--json", "--timeout", "3", "--config"])
        .arg(&config)
        .env("HOME", fake.home())
        .env("XDG_STATE_HOME", fake.dir.path().join("state"))
        .env_remove("KUBECONFIG")
        .output()
        .expect("status");
    let took = started.elapsed();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let error = json["clusters"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("lab: ") && error.contains("no answer within"),
        "{json}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
    drop(silent);
}
