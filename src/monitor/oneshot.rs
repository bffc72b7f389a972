//! One reading of one host, on demand (`rigwatch status`): the GPU query and the probe script,
//! each run once, concurrently, over the host's pooled connection.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::commands::{
    GpuOutcome, availability, gpu_command, new_nonce, probe_command, read_gpu_output,
};
use crate::config::HostConfig;
use crate::fleet::{GpuAvailability, GpuReading, HostReading};
use crate::probe::frame::parse_once;
use crate::probe::sample::HostSample;
use crate::probe::{GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY};
use crate::transport::{ExecLimits, Session};

const LIMITS: ExecLimits = ExecLimits {
    timeout: Duration::from_secs(20),
    max_output: 2 * 1024 * 1024,
};

#[derive(Debug, Clone)]
pub struct HostProbe {
    pub gpu: GpuAvailability,
    pub gpus: Option<GpuReading>,
    pub host: Option<HostReading>,
    /// What could not be read, with where it came from.
    pub errors: Vec<String>,
}

pub async fn probe_once(session: &Arc<Session>, host: &HostConfig) -> HostProbe {
    let (gpu, sample) = tokio::join!(gpu_once(session), sample_once(session, host));
    let mut errors = Vec::new();
    let (availability, gpus) = match gpu {
        Ok(GpuOutcome::Samples(gpus)) => (
            GpuAvailability::Present,
            Some(GpuReading {
                at: Utc::now(),
                gpus,
            }),
        ),
        Ok(outcome) => (availability(&outcome), None),
        Err(e) => {
            errors.push(format!("{}: nvidia-smi --query-gpu: {e}", host.name));
            (GpuAvailability::Unknown, None)
        }
    };
    let host_reading = match sample {
        Ok(sample) => Some(HostReading {
            at: Utc::now(),
            sample,
        }),
        Err(e) => {
            errors.push(format!("{}: probe script: {e}", host.name));
            None
        }
    };
    HostProbe {
        gpu: availability,
        gpus,
        host: host_reading,
        errors,
    }
}

async fn gpu_once(session: &Session) -> Result<GpuOutcome, String> {
    let mut outcome = run_gpu_query(session, GPU_QUERY_FIELDS).await?;
    if matches!(outcome, GpuOutcome::FieldRejected(_)) {
        outcome = run_gpu_query(session, GPU_QUERY_FIELDS_LEGACY).await?;
    }
    Ok(outcome)
}

async fn run_gpu_query(session: &Session, fields: &[&str]) -> Result<GpuOutcome, String> {
    let out = session
        .exec(&gpu_command(fields, None), LIMITS)
        .await
        .map_err(|e| e.to_string())?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    read_gpu_output(out.exit_status, &text).map_err(|e| e.to_string())
}

async fn sample_once(session: &Session, host: &HostConfig) -> Result<HostSample, String> {
    let nonce = new_nonce();
    let out = session
        .exec(&probe_command(host, &nonce, None), LIMITS)
        .await
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let cycle = parse_once(&nonce, &text).map_err(|e| e.to_string())?;
    Ok(HostSample::from_cycle(&cycle))
}
