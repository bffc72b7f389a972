//! Cost and danger clocks from the outside world: the providers' CLIs (recording shims that
//! print their documented JSON) and Slurm's squeue on a real sshd host, through
//! `rigwatch status --json`.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{GpuShim, Lab, json_host as host, rigwatch_json_env};

fn shims() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers")
}

fn status(config: &Path, state: &Path, shim_log: &Path) -> Value {
    rigwatch_json_env(
        &["status", "--json"],
        config,
        state,
        &[("RIGWATCH_SHIM_LOG", shim_log)],
    )
    .1
}

fn clock<'a>(h: &'a Value, kind: &str) -> Option<&'a Value> {
    h["clocks"]
        .as_array()
        .expect("clocks")
        .iter()
        .find(|c| c["kind"] == kind)
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-6)
}

#[test]
fn the_providers_figures_replace_the_remembered_ones() {
    let mut lab = Lab::new();
    let up = lab.start_host("vast-up");
    let mut stopped = lab.start_host("vast-stopped");
    for h in [&up, &stopped] {
        h.shim_nvidia_smi(&GpuShim {
            query_gpu: "h100/q_load_csv.txt",
            apps: "h100/apps_load.txt",
            legacy_driver: false,
        });
    }
    let up_body = format!(
        "{}\nprofile = \"vastai\"\ninstance_id = \"21437001\"",
        lab.host_entry(&up)
    );
    // fleet.toml remembers a price the provider no longer charges.
    let stopped_body = format!(
        "{}\nprofile = \"vastai\"\ninstance_id = \"21437002\"\nprice_per_hour = 5.0\nstopped_price_per_hour = 1.0",
        lab.host_entry(&stopped)
    );
    let providers = format!(
        "[providers]\nvastai = \"{}\"",
        shims().join("vastai").display()
    );
    let config = lab.fleet(
        "fleet.toml",
        &providers,
        &[("vast-up", up_body), ("vast-stopped", stopped_body)],
    );
    let state = lab.path("state");
    let shim_log = lab.path("shim.log");

    let json = status(&config, &state, &shim_log);
    let h = host(&json, "vast-up");
    assert_eq!(h["provider"]["provider"], "vastai");
    assert_eq!(h["provider"]["state"]["state"], "running");
    assert!(
        close(&h["cost"]["per_hour"], 0.35 + 0.15 * 50.0 / 720.0),
        "the provider's dph_total: {}",
        h["cost"]
    );
    assert_eq!(h["cost"]["per_hour_from"], "provider");
    let h = host(&json, "vast-stopped");
    assert_eq!(h["link"]["state"], "up");
    assert!(
        close(&h["cost"]["per_hour"], 2.4555555555555553),
        "up: the provider's running price, not fleet.toml's 5.0: {}",
        h["cost"]
    );

    // The box goes out of sight; the provider says it is stopped, so its disk bills at the
    // provider's storage rate, and the accrual is exact rather than a guess.
    stopped.kill();
    let json = status(&config, &state, &shim_log);
    let h = host(&json, "vast-stopped");
    assert_eq!(h["link"]["state"], "down");
    assert_eq!(h["provider"]["state"]["state"], "stopped");
    assert!(
        close(&h["cost"]["per_hour"], 0.2 * 200.0 / 720.0),
        "stopped: the provider's storage cost: {}",
        h["cost"]
    );
    let accrual = clock(h, "stopped_billing").expect("stopped accrual");
    assert_eq!(accrual["confidence"], "exact", "{accrual}");
    assert!(
        accrual["message"]
            .as_str()
            .is_some_and(|m| m.contains("vast.ai says it is stopped")),
        "{accrual}"
    );

    // Read-only, and one call per provider per status however many of its boxes there are.
    let calls = std::fs::read_to_string(&shim_log).expect("shim log");
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(
        lines,
        vec!["vastai show instances --raw"; 2],
        "only the list call, once per run"
    );
}

#[test]
fn a_provider_cli_that_is_missing_or_lists_no_such_box_is_said_and_costs_fall_back() {
    let mut lab = Lab::new();
    let rented = lab.start_host("rented");
    let other = lab.start_host("other");
    let rented_body = format!(
        "{}\nprofile = \"runpod\"\ninstance_id = \"not-a-pod\"\nprice_per_hour = 0.5",
        lab.host_entry(&rented)
    );
    let other_body = format!(
        "{}\nprofile = \"vastai\"\ninstance_id = \"1\"\nprice_per_hour = 0.7",
        lab.host_entry(&other)
    );
    let providers = format!(
        "[providers]\nrunpod = \"{}\"\nvastai = \"{}\"",
        shims().join("runpodctl").display(),
        lab.path("no-such-vastai").display()
    );
    let config = lab.fleet(
        "fleet.toml",
        &providers,
        &[("rented", rented_body), ("other", other_body)],
    );
    let json = status(&config, &lab.path("state"), &lab.path("shim.log"));
    let h = host(&json, "rented");
    assert!(
        h["provider"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("runpod lists no instance not-a-pod")),
        "{}",
        h["provider"]
    );
    assert!(close(&h["cost"]["per_hour"], 0.5));
    assert_eq!(h["cost"]["per_hour_from"], "config");
    let h = host(&json, "other");
    assert!(
        h["provider"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not installed")),
        "{}",
        h["provider"]
    );
    assert!(close(&h["cost"]["per_hour"], 0.7));
}

#[test]
fn a_slurm_job_counts_down_to_its_walltime() {
    let mut lab = Lab::new();
    let login = lab.start_host("login");
    let args = login.shim_squeue("4242|RUNNING|3:12:00|12:00:00|8:48:00\n");
    let body = format!(
        "{}\nprofile = \"slurm\"\ninstance_id = \"4242\"",
        lab.host_entry(&login)
    );
    let config = lab.fleet("fleet.toml", "", &[("login", body)]);
    let json = status(&config, &lab.path("state"), &lab.path("shim.log"));
    let h = host(&json, "login");
    let wall = clock(h, "walltime").unwrap_or_else(|| panic!("no walltime clock: {h}"));
    let left = wall["remaining_secs"].as_i64().expect("remaining");
    let expected = 8 * 3600 + 48 * 60;
    assert!(
        (expected - 120..=expected).contains(&left),
        "8:48:00 left as squeue said: {left}"
    );
    assert_eq!(wall["confidence"], "exact");
    assert!(
        wall["message"]
            .as_str()
            .is_some_and(|m| m.contains("job 4242 (RUNNING)")),
        "{wall}"
    );
    let asked = std::fs::read_to_string(args).expect("squeue was run");
    assert!(asked.contains("-j 4242"), "asked about the job: {asked}");
}
