//! The H200 captures (tests/fixtures/h200): the probe's own commands, as it runs them, against
//! a real driver 580 on a 141 GB part, idle and under a bf16 matmul loop holding ~21 GB.

use super::{capture, query_fields};
use crate::probe::*;

const H200_UUID: &str = "GPU-f5578bcb-d2b3-cedf-c4ae-db106b9e297f";

fn one_gpu(c: &super::Capture) -> GpuSample {
    assert!(
        c.command.contains(&GPU_QUERY_FIELDS.join(",")),
        "captured with the probe's own field list: {}",
        c.command
    );
    let samples = parse_gpu_query(&query_fields(c.command), &c.body).expect("capture parses");
    assert_eq!(samples.len(), 1, "one H200 in {}", c.command);
    samples.into_iter().next().expect("one sample")
}

#[test]
fn idle_h200_reads_its_141_gb_and_the_idle_reason() {
    let s = one_gpu(&capture!("h200", "q_idle"));
    assert_eq!(s.uuid.as_deref(), Some(H200_UUID));
    assert_eq!(s.name.as_deref(), Some("NVIDIA H200"));
    assert_eq!((s.mem_used_mib, s.mem_total_mib), (Some(0), Some(143771)));
    // Idle, the SM clock drops to 345 MHz: not a throttle, the GPU-idle reason says why.
    assert_eq!(
        (s.sm_clock_mhz, s.sm_clock_max_mhz),
        (Some(345), Some(1980))
    );
    assert_eq!(
        (s.power_draw_w, s.power_limit_w),
        (Some(79.46), Some(700.0))
    );
    let r = s.event_reasons.expect("mask present");
    assert_eq!(r.active(), [ClockEventReason::GpuIdle]);
    assert!(r.is_unthrottled());
}

#[test]
fn loaded_h200_is_held_at_its_power_cap() {
    let s = one_gpu(&capture!("h200", "q_load"));
    assert_eq!(s.util_gpu_pct, Some(100));
    assert_eq!(
        (s.mem_used_mib, s.mem_total_mib),
        (Some(21619), Some(143771))
    );
    assert_eq!(
        (s.sm_clock_mhz, s.sm_clock_max_mhz),
        (Some(1440), Some(1980))
    );
    assert_eq!(
        (s.power_draw_w, s.power_limit_w),
        (Some(692.27), Some(700.0))
    );
    assert_eq!(s.temp_gpu_c, Some(60));
    let r = s.event_reasons.expect("mask present");
    assert_eq!(r.active(), [ClockEventReason::SwPowerCap]);
}

#[test]
fn the_probe_loop_prints_its_header_once_then_a_row_a_period() {
    for (name, c) in [
        ("loop_idle", capture!("h200", "loop_idle")),
        ("loop_load", capture!("h200", "loop_load")),
    ] {
        // `timeout` ended the loop: 124 is the capture's, not the driver's.
        assert_eq!(c.exit, 124, "{name}");
        let samples = parse_gpu_query(&query_fields(c.command), &c.body).expect(name);
        assert_eq!(samples.len(), 3, "{name}: three rows in 5 s at -lms 2000");
        assert!(samples.iter().all(|s| s.uuid.as_deref() == Some(H200_UUID)));
    }
}

#[test]
fn the_loaded_h200_lists_the_process_holding_its_vram() {
    let c = capture!("h200", "apps_load");
    let apps = parse_compute_apps(&query_fields(c.command), &c.body).expect("apps parse");
    assert_eq!(apps.len(), 1);
    assert_eq!(apps[0].pid, 674);
    assert_eq!(apps[0].name.as_deref(), Some("python3"));
    assert_eq!(apps[0].used_mib, Some(21610));
    assert_eq!(apps[0].gpu_uuid.as_deref(), Some(H200_UUID));
    let idle = capture!("h200", "apps_idle");
    let none = parse_compute_apps(&query_fields(idle.command), &idle.body).expect("idle apps");
    assert!(none.is_empty(), "{none:?}");
}

#[test]
fn nvidia_smi_l_names_the_h200() {
    let c = capture!("h200", "nvsmi_L");
    let want = GpuListing {
        index: 0,
        name: "NVIDIA H200".into(),
        uuid: H200_UUID.into(),
        mig_uuids: vec![],
    };
    assert_eq!(parse_gpu_list(&c.body), Ok(vec![want]));
}
