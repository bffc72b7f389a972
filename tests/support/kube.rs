//! A small fake Kubernetes API server for the real `kubectl`: plain HTTP/1.1 on a random
//! loopback port, one thread per connection. It serves `/version` (1.31: 1.29 and older make
//! kubectl exec fall back to SPDY), discovery (`/api`, `/apis`, `/apis/batch/v1`, `/api/v1`)
//! and the Jobs and pods of hand-written fixtures (tests/fixtures/kubernetes), filtered by an
//! equality `labelSelector`; a GET of one Job; and a DELETE of one, which removes its pods only
//! when the body asks for propagation Background or Foreground (the server default for a
//! batch/v1 Job orphans them), or never with [`FakeKube::keep_pods_on_delete`] (pods that
//! survive their Job). Every request is recorded: method, path with query, body.
//!
//! Each server has its own HOME (kubectl caches discovery under `$HOME/.kube/cache`) and a
//! kubeconfig whose context `fake` points at it. No kubectl on the machine is a failure, never
//! a skip.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::kube_exec::{ExecAnswer, serve_exec};

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path with its query, as sent (`/api/v1/namespaces/ml/pods?labelSelector=...`).
    pub path: String,
    pub body: String,
}

#[derive(Default)]
struct State {
    jobs: Vec<Value>,
    pods: Vec<Value>,
    requests: Vec<Request>,
    /// What `kubectl exec` in each pod answers; a pod not named answers exit 127.
    exec: std::collections::BTreeMap<String, ExecAnswer>,
    /// A DELETE of a Job leaves its pods, whatever it asks.
    keep_pods: bool,
    /// What `kubectl auth can-i` is told no: "verb resource[/subresource]".
    denied: std::collections::BTreeSet<String>,
}

pub struct FakeKube {
    pub port: u16,
    pub dir: tempfile::TempDir,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

/// Fails the test loudly when the real kubectl is missing.
pub fn require_kubectl() {
    let out = Command::new("kubectl")
        .args(["version", "--client"])
        .output();
    match out {
        Ok(out) if out.status.success() => {}
        other => panic!(
            "the real kubectl is needed (these tests never skip): `kubectl version --client` \
             gave {other:?}"
        ),
    }
}

/// The items of fixture `name`, all kinds.
pub fn fixture_items(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kubernetes")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let doc: Value = serde_json::from_str(&text).expect("fixture is JSON");
    doc["items"].as_array().expect("items").clone()
}

impl FakeKube {
    /// A server holding the Jobs and pods of `fixtures`.
    pub fn start(fixtures: &[&str]) -> FakeKube {
        require_kubectl();
        let mut state = State::default();
        for item in fixtures.iter().flat_map(|f| fixture_items(f)) {
            match item["kind"].as_str() {
                Some("Job") => state.jobs.push(item),
                Some("Pod") => state.pods.push(item),
                other => panic!("fixture item of kind {other:?}"),
            }
        }
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: \
             http://127.0.0.1:{port}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    \
             user: fake\n    namespace: default\ncurrent-context: fake\nusers:\n- name: fake\n  \
             user: {{}}\n"
        );
        std::fs::write(dir.path().join("kubeconfig"), kubeconfig).expect("kubeconfig");
        let state = Arc::new(Mutex::new(state));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopped) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, &shared));
            }
        });
        FakeKube {
            port,
            dir,
            state,
            stop,
        }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// The HOME every kubectl of this server runs with.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().expect("state").requests.clone()
    }

    /// The names of the pods the server still holds.
    pub fn pod_names(&self) -> Vec<String> {
        let state = self.state.lock().expect("state");
        state
            .pods
            .iter()
            .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
            .collect()
    }

    /// What `kubectl exec` in `pod` answers from now on.
    pub fn answer_exec(&self, pod: &str, answer: ExecAnswer) {
        let mut state = self.state.lock().expect("state");
        state.exec.insert(pod.to_string(), answer);
    }

    /// From now on a Job's DELETE leaves its pods running.
    pub fn keep_pods_on_delete(&self) {
        self.state.lock().expect("state").keep_pods = true;
    }

    /// A SelfSubjectAccessReview for `right` ("delete jobs", "create pods/exec") is answered
    /// not allowed; every other is allowed.
    pub fn deny(&self, right: &str) {
        self.state
            .lock()
            .expect("state")
            .denied
            .insert(right.to_string());
    }

    /// A `[[kubernetes]]` entry for this server.
    pub fn entry(&self, name: &str, extra: &str) -> String {
        format!(
            "[[kubernetes]]\nname = \"{name}\"\ncontext = \"fake\"\nkubeconfig = \"{}\"\n\
             namespace = \"ml\"\nselector = \"rigwatch=train\"\n{extra}",
            self.kubeconfig().display()
        )
    }

    /// The real kubectl on this server, with its own HOME.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .env("HOME", self.home())
            .env_remove("KUBECONFIG")
            .output()
            .expect("run kubectl")
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One request per connection (`Connection: close`): kubectl's Go client reconnects.
fn serve(conn: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() || first.is_empty() {
        return;
    }
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let (mut length, mut chunked, mut key) = (0usize, false, None);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        let lower = header.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
        if lower.starts_with("sec-websocket-key:") {
            key = header.split_once(':').map(|(_, k)| k.trim().to_string());
        }
    }
    if let Some(key) = key {
        let answer = {
            let mut state = state.lock().expect("state");
            state.requests.push(Request {
                method: method.clone(),
                path: path.clone(),
                body: String::new(),
            });
            let pod = path.split('/').nth(6).unwrap_or_default();
            state.exec.get(pod).cloned().unwrap_or(ExecAnswer {
                stderr: "exec: no answer set for this pod\n".into(),
                code: 127,
                ..ExecAnswer::default()
            })
        };
        serve_exec(conn, reader, &key, &path, &answer);
        return;
    }
    let body = if chunked {
        read_chunked(&mut reader)
    } else {
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok();
        body
    };
    let body = String::from_utf8_lossy(&body).into_owned();
    let (status, reply) = {
        let mut state = state.lock().expect("state");
        state.requests.push(Request {
            method: method.clone(),
            path: path.clone(),
            body: body.clone(),
        });
        answer(&mut state, &method, &path, &body)
    };
    let text = reply.to_string();
    let reason = match status {
        200 => "OK",
        201 => "Created",
        _ => "Not Found",
    };
    let mut conn = conn;
    let _ = write!(
        conn,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{text}",
        text.len()
    );
}

fn read_chunked(reader: &mut impl BufRead) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).is_err() {
            break;
        }
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        let mut chunk = vec![0; n + 2];
        if n == 0 || reader.read_exact(&mut chunk).is_err() {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body
}

/// Whether `item`'s labels match an equality selector `k=v,k2==v2` (empty matches all).
fn selected(item: &Value, selector: &str) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (key, value) = term
            .split_once("==")
            .or_else(|| term.split_once('='))
            .unwrap_or((term, ""));
        item["metadata"]["labels"][key].as_str() == Some(value)
    })
}

/// The `labelSelector` of a query, percent-decoded.
fn label_selector(query: &str) -> String {
    let raw = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("labelSelector="))
        .unwrap_or("");
    percent_decoded(raw)
}

/// A query value as Go's `url.QueryEscape` wrote it (`+` is a space).
pub fn percent_decoded(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn not_found(what: &str) -> (u16, Value) {
    (
        404,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
               "message": format!("{what} not found"), "reason": "NotFound", "code": 404}),
    )
}

fn list(kind: &str, api: &str, items: Vec<Value>) -> (u16, Value) {
    (
        200,
        json!({"kind": kind, "apiVersion": api, "metadata": {"resourceVersion": "7"},
               "items": items}),
    )
}

fn answer(state: &mut State, method: &str, path: &str, body: &str) -> (u16, Value) {
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    let selector = label_selector(query);
    let segments: Vec<&str> = route.trim_matches('/').split('/').collect();
    let verbs = json!([
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch"
    ]);
    match (method, segments.as_slice()) {
        ("GET", ["version"]) => (
            200,
            json!({"major": "1", "minor": "31", "gitVersion": "v1.31.4", "gitCommit": "fake",
                   "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                   "goVersion": "go1.22.0", "compiler": "gc", "platform": "linux/amd64"}),
        ),
        ("GET", ["api"]) => (
            200,
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
        ),
        ("GET", ["apis"]) => (
            200,
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{"name": "batch",
                   "versions": [{"groupVersion": "batch/v1", "version": "v1"}],
                   "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"}}]}),
        ),
        ("GET", ["apis", "batch", "v1"]) => (
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "batch/v1",
                   "resources": [{"name": "jobs", "singularName": "job", "namespaced": true,
                                  "kind": "Job", "verbs": verbs, "categories": ["all"]}]}),
        ),
        ("GET", ["api", "v1"]) => (
            200,
            json!({"kind": "APIResourceList", "groupVersion": "v1",
                   "resources": [{"name": "pods", "singularName": "pod", "namespaced": true,
                                  "kind": "Pod", "verbs": verbs, "shortNames": ["po"],
                                  "categories": ["all"]}]}),
        ),
        ("GET", ["apis", "batch", "v1", "namespaces", _, "jobs"]) => {
            let items = state
                .jobs
                .iter()
                .filter(|j| selected(j, &selector))
                .cloned();
            list("JobList", "batch/v1", items.collect())
        }
        ("GET", ["api", "v1", "namespaces", _, "pods"]) => {
            let items = state
                .pods
                .iter()
                .filter(|p| selected(p, &selector))
                .cloned();
            list("PodList", "v1", items.collect())
        }
        ("GET", ["api", "v1", "namespaces", _, "pods", name]) => {
            match state.pods.iter().find(|p| p["metadata"]["name"] == *name) {
                Some(pod) => (200, pod.clone()),
                None => not_found(&format!("pods \"{name}\"")),
            }
        }
        ("GET", ["apis", "batch", "v1", "namespaces", _, "jobs", name]) => {
            match state.jobs.iter().find(|j| j["metadata"]["name"] == *name) {
                Some(job) => (200, job.clone()),
                None => not_found(&format!("jobs.batch \"{name}\"")),
            }
        }
        ("DELETE", ["apis", "batch", "v1", "namespaces", _, "jobs", name]) => {
            let Some(at) = state
                .jobs
                .iter()
                .position(|j| j["metadata"]["name"] == *name)
            else {
                return not_found(&format!("jobs.batch \"{name}\""));
            };
            let job = state.jobs.remove(at);
            let policy: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let cascades = matches!(
                policy["propagationPolicy"].as_str(),
                Some("Background") | Some("Foreground")
            );
            if cascades && !state.keep_pods {
                state
                    .pods
                    .retain(|p| p["metadata"]["labels"]["job-name"] != *name);
            }
            (200, job)
        }
        // `kubectl auth can-i`: a SelfSubjectAccessReview, answered from `denied`.
        (
            "POST",
            [
                "apis",
                "authorization.k8s.io",
                "v1",
                "selfsubjectaccessreviews",
            ],
        ) => {
            let review: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let attrs = &review["spec"]["resourceAttributes"];
            let mut right = format!(
                "{} {}",
                attrs["verb"].as_str().unwrap_or(""),
                attrs["resource"].as_str().unwrap_or("")
            );
            if let Some(sub) = attrs["subresource"].as_str().filter(|s| !s.is_empty()) {
                right = format!("{right}/{sub}");
            }
            let allowed = !state.denied.contains(&right);
            let mut answer = review.clone();
            answer["status"] = json!({"allowed": allowed});
            (201, answer)
        }
        _ => not_found(path),
    }
}
