//! A running pod's GPUs as nvidia-smi inside it reports them (`kubectl exec`), next to what
//! its Job holds: an allocation that sits idle is the waste users ask to see.

use serde::Serialize;

use super::ClusterReading;
use crate::probe::GpuSample;

/// nvidia-smi's fields read inside a pod: few, since this runs in every running pod.
pub const POD_GPU_FIELDS: &[&str] = &[
    "index",
    "uuid",
    "utilization.gpu",
    "memory.used",
    "memory.total",
];

/// One GPU as seen inside a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuUse {
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub util_pct: Option<u32>,
    pub mem_used_mib: Option<u64>,
    pub mem_total_mib: Option<u64>,
}

impl From<&GpuSample> for GpuUse {
    fn from(s: &GpuSample) -> GpuUse {
        GpuUse {
            index: s.index,
            uuid: s.uuid.as_deref().map(|u| crate::sanitize::line(u, 64)),
            util_pct: s.util_gpu_pct,
            mem_used_mib: s.mem_used_mib,
            mem_total_mib: s.mem_total_mib,
        }
    }
}

/// What reading pod `pod`'s GPUs gave, put on its row (the Job's pod list), sanitized.
pub fn attach(reading: &mut ClusterReading, pod: &str, read: Result<Vec<GpuSample>, String>) {
    let row = reading
        .jobs
        .iter_mut()
        .flat_map(|j| j.pods.iter_mut())
        .find(|p| p.name == pod);
    let Some(row) = row else { return };
    match read {
        Ok(samples) => row.gpus = samples.iter().map(GpuUse::from).collect(),
        Err(e) => row.gpu_error = Some(crate::sanitize::line(&e, 300)),
    }
}
