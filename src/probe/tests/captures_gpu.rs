//! nvidia-smi captures: GPU query in every format captured, event reasons, -L, compute apps.

use super::{capture, query_fields};
use crate::probe::*;

const H100_UUID: &str = "GPU-8e5759bf-9118-4884-149b-e9d93aa91558";

fn gpu(c: &super::Capture) -> GpuSample {
    let samples = parse_gpu_query(&query_fields(c.command), &c.body).expect("capture parses");
    assert_eq!(samples.len(), 1, "one H100 in {}", c.command);
    samples.into_iter().next().expect("one sample")
}

#[test]
fn idle_with_header_and_units() {
    let c = capture!("q_idle_csv");
    assert!(
        c.command.contains("clocks_throttle_reasons.active"),
        "legacy name, new header"
    );
    let s = gpu(&c);
    assert_eq!(s.index, Some(0));
    assert_eq!(s.uuid.as_deref(), Some(H100_UUID));
    assert_eq!(s.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(s.pstate.as_deref(), Some("P0"));
    assert_eq!((s.util_gpu_pct, s.util_mem_pct), (Some(0), Some(0)));
    assert_eq!((s.mem_used_mib, s.mem_total_mib), (Some(0), Some(81559)));
    assert_eq!(
        (s.sm_clock_mhz, s.sm_clock_max_mhz),
        (Some(1980), Some(1980))
    );
    assert_eq!(
        (s.power_draw_w, s.power_limit_w),
        (Some(127.98), Some(700.0))
    );
    assert_eq!(s.temp_gpu_c, Some(45));
    let r = s.event_reasons.expect("mask present");
    assert_eq!(r.active(), [ClockEventReason::GpuIdle]);
    assert!(r.is_unthrottled());
}

#[test]
fn idle_noheader_nounits_reads_the_same() {
    let a = gpu(&capture!("q_idle_csv"));
    let b = gpu(&capture!("q_idle_csv_nn"));
    assert_eq!(b.power_draw_w, Some(128.0));
    assert_eq!(
        GpuSample {
            power_draw_w: a.power_draw_w,
            ..b
        },
        a
    );
}

#[test]
fn load_is_power_capped_not_clock_bound() {
    let s = gpu(&capture!("q_load_csv"));
    assert_eq!((s.util_gpu_pct, s.util_mem_pct), (Some(100), Some(29)));
    assert_eq!(
        (s.mem_used_mib, s.mem_total_mib),
        (Some(20213), Some(81559))
    );
    assert_eq!(
        (s.sm_clock_mhz, s.sm_clock_max_mhz),
        (Some(1365), Some(1980))
    );
    // This one sample reads above the cap: power.draw is a 1 s average that overshoots.
    assert_eq!(
        (s.power_draw_w, s.power_limit_w),
        (Some(718.74), Some(700.0))
    );
    assert_eq!(s.temp_gpu_c, Some(60));
    let r = s.event_reasons.expect("mask present");
    assert_eq!(r.active(), [ClockEventReason::SwPowerCap]);
    assert_eq!(r.active()[0].label(), "SW power cap");
}

#[test]
fn q2_lists_with_and_without_header() {
    for (c, power) in [
        (capture!("q2_idle"), 128.01),
        (capture!("q2_idle_nn"), 128.04),
    ] {
        let s = gpu(&c);
        assert_eq!((s.index, s.uuid.as_deref()), (Some(0), None));
        assert_eq!((s.sm_clock_mhz, s.power_draw_w), (Some(1980), Some(power)));
        assert_eq!(
            (s.temp_gpu_c, s.util_gpu_pct, s.mem_used_mib),
            (Some(45), Some(0), Some(0))
        );
        assert_eq!(s.event_reasons.map(|r| r.mask), Some(1));
    }
}

#[test]
fn zombie_holds_vram_and_computes_nothing() {
    let s = gpu(&capture!("zombie_q"));
    assert_eq!(s.util_gpu_pct, Some(0));
    assert_eq!(
        (s.mem_used_mib, s.mem_total_mib),
        (Some(29139), Some(81559))
    );
    assert_eq!((s.sm_clock_mhz, s.power_draw_w), (Some(1980), Some(124.43)));
    assert_eq!((s.pstate.as_deref(), s.event_reasons), (Some("P0"), None));
    let apps = capture!("zombie_apps");
    let fields = query_fields(apps.command);
    assert_eq!(
        fields,
        ["pid", "process_name", "used_memory"],
        "no gpu_uuid in this list"
    );
    let apps = parse_compute_apps(&fields, &apps.body).expect("parses");
    let want = GpuProcess {
        pid: 585,
        name: Some("python3".into()),
        used_mib: Some(29130),
        gpu_uuid: None,
    };
    assert_eq!(apps, [want]);
}

#[test]
fn timed_loop_gives_twelve_power_capped_samples() {
    let c = capture!("loop_load");
    assert_eq!(c.exit, 124, "stopped by timeout(1)");
    let samples = parse_gpu_query(&query_fields(c.command), &c.body).expect("parses");
    assert_eq!(samples.len(), 12);
    let first = samples[0].timestamp.map(|t| t.to_string());
    assert_eq!(first.as_deref(), Some("2026-11-22 14:39:34.254"));
    for s in &samples {
        assert!(matches!(s.util_gpu_pct, Some(99 | 100)));
        assert!(s.power_draw_w.is_some_and(|w| (695.0..700.0).contains(&w)));
        assert!(s.sm_clock_mhz.is_some_and(|c| (1335..=1380).contains(&c)));
        assert_eq!((s.mem_used_mib, s.power_limit_w), (Some(20213), None));
    }
    assert_eq!(samples[11].temp_gpu_c, Some(74));
}

#[test]
fn per_reason_columns_agree_with_the_mask() {
    let c = capture!("load_reasons");
    let fields = query_fields(c.command);
    let s = gpu(&c);
    assert_eq!((s.sm_clock_mhz, s.power_draw_w), (Some(1305), Some(693.90)));
    assert_eq!(
        s.event_reasons.map(|r| r.active()),
        Some(vec![ClockEventReason::SwPowerCap])
    );
    // Without the mask column the Active / Not Active columns stand in for it.
    let keep: Vec<usize> = (0..fields.len()).filter(|&i| i != 5).collect();
    let body: String = c
        .body
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split(", ").collect();
            keep.iter()
                .map(|&i| cells[i])
                .collect::<Vec<_>>()
                .join(", ")
                + "\n"
        })
        .collect();
    let fewer: Vec<&str> = keep.iter().map(|&i| fields[i]).collect();
    let t = parse_gpu_query(&fewer, &body).expect("parses");
    assert_eq!(t[0].event_reasons.map(|r| r.mask), Some(0x4));
}

#[test]
fn bogus_field_is_named_for_the_fallback() {
    let c = capture!("q_bogus");
    assert_eq!(c.exit, 2);
    assert_eq!(parse_query_failure(&c.body).as_deref(), Some("bogus.field"));
    let err = parse_gpu_query(&query_fields(c.command), &c.body).expect_err("not a sample");
    assert_eq!(
        err.to_string(),
        "nvidia-smi --query-gpu line 1: nvidia-smi refused field \"bogus.field\""
    );
    assert_eq!(parse_query_failure(&capture!("q_idle_csv").body), None);
}

#[test]
fn gpu_list() {
    let c = capture!("nvsmi_L");
    let want = GpuListing {
        index: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
        uuid: H100_UUID.into(),
        mig_uuids: vec![],
    };
    assert_eq!(parse_gpu_list(&c.body), Ok(vec![want]));
}

#[test]
fn compute_apps_idle_load_and_noheader() {
    let idle = capture!("apps_idle");
    assert_eq!(
        parse_compute_apps(&query_fields(idle.command), &idle.body),
        Ok(vec![])
    );
    for c in [capture!("apps_load"), capture!("apps_load_nn")] {
        let fields = query_fields(c.command);
        assert_eq!(fields, APPS_QUERY_FIELDS);
        let apps = parse_compute_apps(&fields, &c.body).expect("parses");
        let want = GpuProcess {
            pid: 467,
            name: Some("python3".into()),
            used_mib: Some(20204),
            gpu_uuid: Some(H100_UUID.into()),
        };
        assert_eq!(apps, [want]);
    }
}

#[test]
fn multi_gpu_missing_values_and_short_rows_handwritten() {
    let text = "0, GPU-a, NVIDIA A100-SXM4-80GB, P0, 97 %, 70000 MiB, 81920 MiB, 1410 MHz, \
                1410 MHz, 399.10 W, 400.00 W, 71, 0x0000000000000000\n\
                1, GPU-b, NVIDIA A100-SXM4-80GB, P8, [N/A], [Not Supported], 81920, N/A, , \
                [Unknown Error], 400.00 W, 30, [N/A]\n";
    let s = parse_gpu_query(GPU_QUERY_FIELDS, text).expect("parses");
    assert_eq!(s.len(), 2);
    assert_eq!(
        (s[0].util_gpu_pct, s[0].power_draw_w),
        (Some(97), Some(399.1))
    );
    assert!(s[0].event_reasons.is_some_and(|r| r.active().is_empty()));
    let b = &s[1];
    assert_eq!(
        (b.util_gpu_pct, b.mem_used_mib, b.sm_clock_mhz),
        (None, None, None)
    );
    assert_eq!(
        (b.sm_clock_max_mhz, b.power_draw_w, b.event_reasons),
        (None, None, None)
    );
    assert_eq!(b.mem_total_mib, Some(81920));
    let short = "0, GPU-a, x, P0, 1, 2, 3, 4, 5, 6, 7, 8\n";
    let err = parse_gpu_query(GPU_QUERY_FIELDS, &format!("{text}{short}")).expect_err("short");
    assert_eq!(
        err.to_string(),
        "nvidia-smi --query-gpu line 3: expected 13 fields, got 12"
    );
    let legacy = parse_gpu_query(GPU_QUERY_FIELDS_LEGACY, text).expect("same shape");
    assert_eq!(legacy, s);
}
