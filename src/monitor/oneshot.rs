//! One reading of one host, on demand (`rigwatch status`): the probe script run once with the
//! GPU query as one of its sections, so the box starts one shell, over the pooled connection.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::commands::{GpuOutcome, availability, new_nonce, probe_command, read_gpu_output};
use crate::config::HostConfig;
use crate::probe::frame::parse_once;
use crate::probe::sample::HostSample;
use crate::readings::{GpuAvailability, GpuReading, HostReading};
use crate::transport::{ExecLimits, Session};

const LIMITS: ExecLimits = ExecLimits {
    timeout: Duration::from_secs(30),
    max_output: 4 * 1024 * 1024,
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
    let mut probe = HostProbe {
        gpu: GpuAvailability::Unknown,
        gpus: None,
        host: None,
        errors: Vec::new(),
    };
    let nonce = new_nonce();
    let probe_command = probe_command(host, &nonce);
    let out = match session
        .exec_with_input(&probe_command.line, &probe_command.input, LIMITS)
        .await
    {
        Ok(out) => out,
        Err(e) => {
            probe
                .errors
                .push(format!("{}: probe script: {e}", host.name));
            return probe;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let cycle = match parse_once(&nonce, &text) {
        Ok(cycle) => cycle,
        Err(e) => {
            probe
                .errors
                .push(format!("{}: probe script: {e}", host.name));
            return probe;
        }
    };
    let at = Utc::now();
    match cycle.section("gpu") {
        Some(gpu) => {
            match read_gpu_output(gpu.status.and_then(|s| u32::try_from(s).ok()), &gpu.body) {
                Ok(GpuOutcome::Samples(gpus)) => {
                    probe.gpu = GpuAvailability::Present;
                    probe.gpus = Some(GpuReading { at, gpus });
                }
                Ok(outcome) => probe.gpu = availability(&outcome),
                Err(e) => probe
                    .errors
                    .push(format!("{}: nvidia-smi --query-gpu {e}", host.name)),
            }
        }
        None => probe.errors.push(format!(
            "{}: probe script printed no gpu section",
            host.name
        )),
    }
    probe.host = Some(HostReading {
        at,
        sample: HostSample::from_cycle(&cycle),
    });
    probe
}
