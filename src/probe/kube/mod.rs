//! `kubectl get jobs -o json` and `kubectl get pods -o json`: Kubernetes Jobs and their pods,
//! typed, with only the fields rigwatch reads. Both print a `kind: List` with `items`. Pure:
//! text in, typed items or a located error out (line and column from serde_json, naming the
//! probe). Unknown fields are ignored (every release adds some); a field of the wrong type is
//! an error, never a made-up value. Input is capped at [`MAX_KUBE_BYTES`], and serde_json's own
//! nesting limit keeps hostile JSON from exhausting the stack.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ParseError;

/// The most text one list may hold: a namespace's thousands of pods fit.
pub const MAX_KUBE_BYTES: usize = 32 * 1024 * 1024;

pub const JOBS_PROBE: &str = "kubectl get jobs -o json";
pub const PODS_PROBE: &str = "kubectl get pods -o json";

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Meta {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub creation_timestamp: Option<String>,
}

/// A condition of a Job or a pod: `type`, `status` ("True"), reason and message.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub last_transition_time: Option<String>,
}

impl Condition {
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// A resource amount: the API prints quantities as strings ("16Gi", "1"); a number is taken
/// too, as kubectl's own decoder does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Quantity {
    Text(String),
    Number(serde_json::Number),
}

impl Quantity {
    pub fn text(&self) -> String {
        match self {
            Quantity::Text(t) => t.clone(),
            Quantity::Number(n) => n.to_string(),
        }
    }

    /// A whole count (GPUs are whole): None for "500m", "1.5" or anything else.
    pub fn whole(&self) -> Option<u32> {
        self.text().parse().ok()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Resources {
    pub limits: BTreeMap<String, Quantity>,
    pub requests: BTreeMap<String, Quantity>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: String,
    pub mount_path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    pub resources: Resources,
    pub volume_mounts: Vec<VolumeMount>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClaimSource {
    pub claim_name: String,
}

/// A pod volume: only whether it is a PVC, an emptyDir or a hostPath matters here (each
/// source is an object; `emptyDir: {}` is the common spelling).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    pub persistent_volume_claim: Option<ClaimSource>,
    pub empty_dir: Option<serde_json::Map<String, serde_json::Value>>,
    pub host_path: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodSpec {
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
    pub node_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct PodTemplate {
    pub spec: PodSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct JobSpec {
    pub backoff_limit: Option<u32>,
    pub active_deadline_seconds: Option<u64>,
    pub template: PodTemplate,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct JobStatus {
    pub conditions: Vec<Condition>,
    pub start_time: Option<String>,
    pub completion_time: Option<String>,
    pub active: Option<u32>,
    pub succeeded: Option<u32>,
    pub failed: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct KubeJob {
    pub metadata: Meta,
    pub spec: JobSpec,
    pub status: JobStatus,
}

impl KubeJob {
    /// The condition of this type whose status is "True".
    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        self.status
            .conditions
            .iter()
            .find(|c| c.kind == kind && c.is_true())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Terminated {
    pub exit_code: Option<i64>,
    pub signal: Option<u32>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Waiting {
    pub reason: Option<String>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ContainerState {
    pub running: Option<serde_json::Map<String, serde_json::Value>>,
    pub waiting: Option<Waiting>,
    pub terminated: Option<Terminated>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContainerStatus {
    pub name: String,
    pub restart_count: u32,
    pub state: ContainerState,
    pub last_state: ContainerState,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodStatus {
    pub phase: Option<String>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub conditions: Vec<Condition>,
    pub container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct KubePod {
    pub metadata: Meta,
    pub spec: PodSpec,
    pub status: PodStatus,
}

impl KubePod {
    /// The Job this pod belongs to, by the label the Job controller sets (the legacy
    /// `job-name` on clusters older than 1.27).
    pub fn job_name(&self) -> Option<&str> {
        let labels = &self.metadata.labels;
        labels
            .get("batch.kubernetes.io/job-name")
            .or_else(|| labels.get("job-name"))
            .map(String::as_str)
    }

    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.kind == kind)
    }
}

#[derive(Debug, Deserialize)]
struct List<T> {
    kind: String,
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

fn parse_list<T: serde::de::DeserializeOwned>(
    text: &str,
    probe: &'static str,
) -> Result<Vec<T>, ParseError> {
    if text.len() > MAX_KUBE_BYTES {
        return Err(ParseError::new(
            probe,
            1,
            format!("output over {} MiB", MAX_KUBE_BYTES / (1024 * 1024)),
        ));
    }
    let list: List<T> = serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        // serde_json ends its message with " at line L column C": the line goes in its own
        // field, the column stays in the reason.
        let what = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(w, _)| w);
        ParseError::new(
            probe,
            e.line().max(1),
            format!("column {}: {what}", e.column()),
        )
    })?;
    if list.kind != "List" && !list.kind.ends_with("List") {
        return Err(ParseError::new(
            probe,
            1,
            format!(
                "expected kind List, got {:?}",
                crate::sanitize::line(&list.kind, 40)
            ),
        ));
    }
    Ok(list.items)
}

/// `kubectl get jobs -l SEL -o json`.
pub fn parse_jobs(text: &str) -> Result<Vec<KubeJob>, ParseError> {
    parse_list(text, JOBS_PROBE)
}

/// `kubectl get pods -l SEL -o json`.
pub fn parse_pods(text: &str) -> Result<Vec<KubePod>, ParseError> {
    parse_list(text, PODS_PROBE)
}

#[cfg(test)]
pub(crate) mod tests;
