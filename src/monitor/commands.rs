//! The command lines rigwatch runs on a box, and how their output becomes readings.

use std::time::Duration;

use crate::config::HostConfig;
use crate::probe::loops::{Loops, stream_loops};
use crate::probe::script::{
    ProbeTargets, QueueTargets, SLOW_EVERY, SlurmTarget, command_line, periodic_script, settings,
    sh_quote,
};
use crate::probe::{
    APPS_QUERY_FIELDS, GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY, GpuSample, ParseError,
    parse_gpu_csv, parse_query_failure,
};
use crate::readings::GpuAvailability;

/// sh's status for a command it cannot find.
pub const NOT_FOUND: u32 = 127;

pub fn targets(host: &HostConfig) -> ProbeTargets {
    ProbeTargets {
        mounts: host.mounts.clone(),
        run: host.run.clone(),
        run_process: host.run_process.clone(),
        log: host.log.clone(),
        ckpt_dir: host.ckpt_dir.clone(),
        queue: host.queue.as_ref().map(|q| QueueTargets {
            file: q.file.clone(),
            final_dir: q.final_dir.clone(),
            cell_log: q.cell_log.clone(),
        }),
        slurm: host.walltime.then(|| SlurmTarget {
            job: host.instance_id.clone(),
        }),
    }
}

pub fn new_nonce() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// The probe's command line and what goes first on its stdin (the host's paths and mounts):
/// the command is the same size whatever the config lists.
pub struct ProbeCommand {
    pub line: String,
    pub input: Vec<u8>,
}

/// The probe run once (`status`, `check`): its GPU query is one of its sections.
pub fn probe_command(host: &HostConfig, nonce: &str) -> ProbeCommand {
    command(host, nonce, None, String::new())
}

/// The live monitor's one command: the box's two nvidia-smi loops (the GPUs every `period`,
/// asked for `gpu_fields`, and the compute apps every slow period) started in the background,
/// then the probe looping every `period`, all in one shell.
pub fn live_command(
    host: &HostConfig,
    nonce: &str,
    period: Duration,
    gpu_fields: &[&str],
) -> ProbeCommand {
    let loops = Loops {
        gpu_fields,
        gpu_every: period,
        apps_fields: APPS_QUERY_FIELDS,
        apps_every: period * SLOW_EVERY,
    };
    command(host, nonce, Some(period), stream_loops(nonce, &loops))
}

fn command(
    host: &HostConfig,
    nonce: &str,
    period: Option<Duration>,
    mut script: String,
) -> ProbeCommand {
    let targets = targets(host);
    script.push_str(&periodic_script(
        &targets,
        nonce,
        period,
        GPU_QUERY_FIELDS,
        GPU_QUERY_FIELDS_LEGACY,
    ));
    ProbeCommand {
        line: command_line(&script),
        input: settings(&targets),
    }
}

/// What one run of the GPU query says, from its exit status and output.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuOutcome {
    Samples(Vec<GpuSample>),
    /// The driver rejected a field: retry with the legacy field list.
    FieldRejected(String),
    NoNvidiaSmi,
    Failed(String),
}

pub fn read_gpu_output(exit_status: Option<u32>, text: &str) -> Result<GpuOutcome, ParseError> {
    if let Some(field) = parse_query_failure(text) {
        return Ok(GpuOutcome::FieldRejected(field));
    }
    match exit_status {
        Some(NOT_FOUND) => Ok(GpuOutcome::NoNvidiaSmi),
        Some(0) | None => parse_gpu_csv(text).map(GpuOutcome::Samples),
        Some(code) => {
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output");
            Ok(GpuOutcome::Failed(format!(
                "exit {code}: {}",
                crate::sanitize::line(first, 200)
            )))
        }
    }
}

pub fn availability(outcome: &GpuOutcome) -> GpuAvailability {
    match outcome {
        GpuOutcome::Samples(_) => GpuAvailability::Present,
        GpuOutcome::NoNvidiaSmi => GpuAvailability::NoNvidiaSmi,
        GpuOutcome::FieldRejected(f) => {
            GpuAvailability::Failing(format!("field {} rejected", sh_quote(f)))
        }
        GpuOutcome::Failed(why) => GpuAvailability::Failing(why.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bogus_field_capture_asks_for_the_fallback() {
        let capture = include_str!("../../tests/fixtures/h100/q_bogus.txt");
        let body: Vec<&str> = capture
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("[exit"))
            .collect();
        let outcome = read_gpu_output(Some(2), &body.join("\n")).expect("reads");
        assert_eq!(outcome, GpuOutcome::FieldRejected("bogus.field".into()));
    }

    #[test]
    fn missing_tool_is_no_gpus_not_an_error() {
        let outcome = read_gpu_output(Some(127), "sh: 1: nvidia-smi: not found\n").expect("reads");
        assert_eq!(availability(&outcome), GpuAvailability::NoNvidiaSmi);
    }

    #[test]
    fn the_loops_loop_in_one_process_each_at_their_pace() {
        let command = live_command(
            &HostConfig::for_test("b"),
            "n",
            Duration::from_secs(2),
            &["index"],
        );
        assert!(
            command
                .line
                .contains("--query-gpu=index --format=csv,nounits -lms 2000 &")
        );
        assert!(command.line.contains("--format=csv -lms 10000 &"));
    }
}
