//! Signals on the real H100 and H200 captures, with time passed in.
//!
//! Past 400 lines: a table of cases, each read on its own.

use chrono::{DateTime, Duration, Utc};

use super::*;
use crate::config::fleet::{HostConfig, SshTarget, Thresholds};
use crate::probe::sample::{HostSample, TmuxPane};
use crate::probe::{
    merge_df, parse_compute_apps, parse_df_bytes, parse_df_inodes, parse_gpu_csv, parse_gpu_query,
};
use crate::readings::{GpuReading, HostReading};

fn body(capture: &str) -> (Vec<String>, String) {
    let mut lines: Vec<&str> = capture.lines().collect();
    let command = lines.remove(0);
    lines.pop();
    let fields = command
        .split("--query-gpu=")
        .nth(1)
        .or_else(|| command.split("--query-compute-apps=").nth(1))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or("")
                .split(',')
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    (fields, lines.join("\n"))
}

fn gpus(capture: &str) -> Vec<crate::probe::GpuSample> {
    let (fields, text) = body(capture);
    let names: Vec<&str> = fields.iter().map(String::as_str).collect();
    parse_gpu_query(&names, &text).expect("capture parses")
}

fn host(run: Option<&str>) -> HostConfig {
    HostConfig {
        name: "h100".into(),
        target: SshTarget {
            user: None,
            host: "h".into(),
            port: None,
        },
        identity: None,
        profile: "generic-ssh".into(),
        accept_new: false,
        mounts: Vec::new(),
        run: run.map(String::from),
        run_process: None,
        log: None,
        ckpt_dir: None,
        billing: Default::default(),
        instance_id: None,
        teardown: None,
        pull: None,
        queue: None,
        walltime: false,
    }
}

fn t0() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000)
}

fn up() -> LinkState {
    LinkState::Up {
        since: t0(),
        rtt_ms: 1.0,
        banner: String::new(),
        auth: String::new(),
    }
}

struct Case {
    host: HostConfig,
    link: LinkState,
    history: HostHistory,
    gpu: GpuAvailability,
    previous_boot: Option<BootMark>,
    thresholds: Thresholds,
    now: DateTime<Utc>,
}

impl Case {
    fn new(run: Option<&str>) -> Case {
        Case {
            host: host(run),
            link: up(),
            history: HostHistory::default(),
            gpu: GpuAvailability::Present,
            previous_boot: None,
            thresholds: Thresholds::default(),
            now: t0(),
        }
    }

    /// One reading every 2 s for `span`, ending at `now`.
    fn gpu_for(&mut self, span: Duration, sample: &[crate::probe::GpuSample]) {
        let n = span.num_seconds() / 2;
        for i in 0..=n {
            let at = self.now - span + Duration::seconds(i * 2);
            self.history.push_gpu(GpuReading {
                at,
                gpus: sample.to_vec(),
            });
        }
    }

    fn host_sample(&mut self, sample: HostSample) {
        self.history.push_host(HostReading {
            at: self.now,
            sample,
        });
    }

    fn run(&self) -> (RunState, Vec<Signal>) {
        evaluate(&HostFacts {
            host: &self.host,
            link: &self.link,
            history: &self.history,
            gpu: &self.gpu,
            previous_boot: self.previous_boot.clone(),
            bills: true,
            thresholds: &self.thresholds,
            stale_after: chrono::Duration::seconds(6),
            now: self.now,
        })
    }
}

fn find(signals: &[Signal], kind: SignalKind) -> Option<&Signal> {
    signals.iter().find(|s| s.kind == kind)
}

#[test]
fn loaded_h100_is_power_capped_with_the_reason_named() {
    let mut case = Case::new(None);
    case.gpu_for(
        Duration::seconds(10),
        &gpus(include_str!("../../tests/fixtures/h100/q_load_csv.txt")),
    );
    let (_, signals) = case.run();
    let capped = find(&signals, SignalKind::PowerCapped).expect("power-capped");
    assert!(
        capped.message.contains("1365/1980 MHz") && capped.message.contains("SW power cap"),
        "{}",
        capped.message
    );
    assert!(capped.message.contains("719/700 W"), "{}", capped.message);
    assert!(find(&signals, SignalKind::ZombieVram).is_none());
    assert!(find(&signals, SignalKind::IdleButBilling).is_none());
}

/// The H200 capture (tests/fixtures/h200): at its cap, under it by a hair (692 of 700 W), the
/// SW power cap reason still says why the clock is 1440 of 1980 MHz.
#[test]
fn h200_under_load_is_power_capped_not_throttled() {
    let mut case = Case::new(None);
    case.gpu_for(
        Duration::seconds(10),
        &gpus(include_str!("../../tests/fixtures/h200/q_load.txt")),
    );
    let (_, signals) = case.run();
    let capped = find(&signals, SignalKind::PowerCapped).expect("power-capped");
    assert!(
        capped.message.contains("1440/1980 MHz") && capped.message.contains("692/700 W"),
        "{}",
        capped.message
    );
    assert!(find(&signals, SignalKind::Throttled).is_none());
}

#[test]
fn zombie_capture_raises_zombie_vram_naming_the_holder() {
    let mut case = Case::new(None);
    let zombie = gpus(include_str!("../../tests/fixtures/h100/zombie_q.txt"));
    let (fields, text) = body(include_str!("../../tests/fixtures/h100/zombie_apps.txt"));
    let names: Vec<&str> = fields.iter().map(String::as_str).collect();
    let apps = parse_compute_apps(&names, &text).expect("apps");
    case.host_sample(HostSample {
        gpu_processes: Some(apps),
        ..HostSample::default()
    });
    case.gpu_for(Duration::minutes(2), &zombie);
    let (_, signals) = case.run();
    let early = find(&signals, SignalKind::ZombieVram).expect("zombie");
    assert_eq!(
        early.severity,
        Severity::Warn,
        "two minutes is not yet the threshold"
    );
    case.now += Duration::minutes(4);
    case.gpu_for(Duration::minutes(4), &zombie);
    let (_, signals) = case.run();
    let zombie = find(&signals, SignalKind::ZombieVram).expect("zombie");
    assert_eq!(zombie.severity, Severity::Crit);
    assert!(
        zombie.message.contains("pid 585 python3 (29130 MiB)"),
        "{}",
        zombie.message
    );
    assert!(
        zombie.message.contains("28.5 GiB") && zombie.message.contains("util 0%"),
        "{}",
        zombie.message
    );
}

#[test]
fn idle_h100_bills_idle_only_after_the_threshold_and_not_with_a_live_run() {
    let idle = gpus(include_str!("../../tests/fixtures/h100/q_idle_csv.txt"));
    let mut case = Case::new(None);
    case.gpu_for(Duration::minutes(31), &idle);
    let (_, signals) = case.run();
    let billing = find(&signals, SignalKind::IdleButBilling).expect("idle but billing");
    assert_eq!(billing.severity, Severity::Crit);
    assert!(
        find(&signals, SignalKind::ZombieVram).is_none(),
        "0 MiB used is not a zombie"
    );

    let mut busy = Case::new(Some("train"));
    busy.gpu_for(Duration::minutes(31), &idle);
    busy.host_sample(HostSample {
        tmux_panes: vec![TmuxPane {
            session: "train".into(),
            pid: 669,
            dead: false,
            command: "sleep".into(),
            has_children: None,
        }],
        ..HostSample::default()
    });
    let (run, signals) = busy.run();
    assert!(matches!(run, RunState::Alive { .. }), "{run:?}");
    assert!(find(&signals, SignalKind::IdleButBilling).is_none());
}

#[test]
fn a_missing_run_is_dead_only_while_the_link_is_up() {
    let mut case = Case::new(Some("train"));
    case.host_sample(HostSample::default());
    let (run, signals) = case.run();
    assert!(matches!(run, RunState::Dead { .. }), "{run:?}");
    assert_eq!(
        find(&signals, SignalKind::RunDead).map(|s| s.severity),
        Some(Severity::Crit)
    );

    case.link = LinkState::Down {
        since: t0(),
        reason: "connection refused".into(),
        retry_in_ms: 500,
    };
    let (run, signals) = case.run();
    assert!(matches!(run, RunState::Unknown { .. }), "{run:?}");
    assert!(find(&signals, SignalKind::RunDead).is_none());
    let unknown = find(&signals, SignalKind::RunUnknown).expect("unknown");
    assert!(unknown.message.contains("not a dead run"));
}

#[test]
fn boot_id_change_or_uptime_going_back_is_a_reboot() {
    let mut case = Case::new(None);
    let uptime = crate::probe::parse_uptime("120.5 100.0").ok();
    case.host_sample(HostSample {
        boot_id: Some("b".into()),
        uptime,
        ..HostSample::default()
    });
    case.previous_boot = Some(BootMark {
        at: t0() - Duration::minutes(5),
        boot_id: Some("a".into()),
        uptime_secs: Some(9000.0),
    });
    let (_, signals) = case.run();
    let reboot = find(&signals, SignalKind::Rebooted).expect("rebooted");
    assert!(reboot.message.contains("orphaned"), "{}", reboot.message);
    case.previous_boot = Some(BootMark {
        at: t0() - Duration::minutes(5),
        boot_id: Some("b".into()),
        uptime_secs: Some(20.0),
    });
    assert!(find(&case.run().1, SignalKind::Rebooted).is_none());
}

#[test]
fn inodes_nearly_full_while_bytes_are_not_handwritten() {
    let bytes = parse_df_bytes(
        include_str!("../../tests/fixtures/h100/df_PB1.txt")
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("[exit"))
            .collect::<Vec<_>>()
            .join("\n")
            .as_str(),
    )
    .expect("df");
    // No capture shows inode pressure; this variant of df_Pi is written by hand.
    let inodes = parse_df_inodes(
        "Filesystem Inodes IUsed IFree IUse% Mounted on\n/dev/vda 16777216 16600000 177216 99% /\n",
    )
    .expect("dfi");
    let mut case = Case::new(None);
    case.host_sample(HostSample {
        mounts: merge_df(bytes, inodes),
        ..HostSample::default()
    });
    let (_, signals) = case.run();
    let inode = find(&signals, SignalKind::DiskInodes).expect("inode signal");
    assert_eq!(inode.severity, Severity::Crit);
    assert!(
        inode.message.starts_with("/: inodes 99% used"),
        "{}",
        inode.message
    );
    assert!(
        find(&signals, SignalKind::DiskBytes).is_none(),
        "bytes are at 20%"
    );
}

#[test]
fn no_nvidia_smi_is_said_plainly() {
    let mut case = Case::new(None);
    case.gpu = GpuAvailability::NoNvidiaSmi;
    let (_, signals) = case.run();
    assert!(find(&signals, SignalKind::NoGpu).is_some_and(|s| s.message.contains("not installed")));
}

#[test]
fn headed_replay_of_a_capture_parses_like_the_capture() {
    let (_, text) = body(include_str!("../../tests/fixtures/h100/q_load_csv.txt"));
    let g = parse_gpu_csv(&text).expect("headed");
    assert_eq!(g[0].sm_clock_max_mhz, Some(1980));
}

#[test]
fn xid_and_oom_lines_become_signals_handwritten() {
    let text = "[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n\
                [ 1300.1] Out of memory: Killed process 4243 (python3) total-vm:1000kB, anon-rss:900kB, file-rss:0kB, shmem-rss:0kB\n";
    let events = crate::probe::parse_kernel_log(text).expect("kernel");
    let mut case = Case::new(None);
    case.host_sample(HostSample {
        kernel_events: events,
        ..HostSample::default()
    });
    let (_, signals) = case.run();
    let xid = find(&signals, SignalKind::GpuXid).expect("xid");
    assert!(xid.message.contains("Xid 79"), "{}", xid.message);
    assert!(find(&signals, SignalKind::OomKill).is_some_and(|s| s.message.contains("pid 4243")));
}

#[test]
fn zombie_vram_with_no_visible_process_says_it_is_held_outside_the_container() {
    let mut case = Case::new(None);
    case.host_sample(HostSample {
        gpu_processes: Some(Vec::new()),
        ..HostSample::default()
    });
    case.gpu_for(
        Duration::minutes(6),
        &gpus(include_str!("../../tests/fixtures/h100/zombie_q.txt")),
    );
    let (_, signals) = case.run();
    let zombie = find(&signals, SignalKind::ZombieVram).expect("zombie from the GPU's own figures");
    assert!(
        zombie.message.contains("outside this container"),
        "{}",
        zombie.message
    );
}

mod fill_cases;
mod run_cases;

/// The first seconds after start, before any reading: the run is unknown, said in the row, but
/// that is loading, not something that needs the person (NEEDS YOU counts only warnings).
#[test]
fn a_run_not_read_yet_is_said_without_needing_you() {
    let case = Case::new(Some("train"));
    let (run, signals) = case.run();
    assert!(
        matches!(run, RunState::Unknown { since: None, .. }),
        "{run:?}"
    );
    let unknown = find(&signals, SignalKind::RunUnknown).expect("said");
    assert!(
        unknown.message.starts_with("run state not read yet"),
        "{unknown:?}"
    );
    assert_eq!(unknown.severity, Severity::Info);
}

/// A box whose CPUs are all busy (the 5-minute load) or whose RAM is nearly gone says so in
/// words, as a warning: not a yellow cell alone.
#[test]
fn every_cpu_busy_and_ram_nearly_gone_are_warnings_in_words() {
    let mut case = Case::new(None);
    case.host_sample(HostSample {
        load: crate::probe::parse_loadavg("12.40 9.10 6.00 9/800 4242").ok(),
        cpus: Some(8),
        memory: Some(crate::probe::MemInfo {
            total_bytes: 64 << 30,
            available_bytes: Some(4 << 30),
            swap_total_bytes: None,
            swap_free_bytes: None,
        }),
        ..HostSample::default()
    });
    let (_, signals) = case.run();
    let cpu = find(&signals, SignalKind::CpuBound).expect("cpu-bound");
    assert_eq!(cpu.severity, Severity::Warn);
    assert!(
        cpu.message
            .starts_with("load 9.1 over 5 min on 8 CPUs: every CPU is busy"),
        "{}",
        cpu.message
    );
    let ram = find(&signals, SignalKind::RamLow).expect("ram");
    assert!(
        ram.message.starts_with("RAM 94% used (60.0/64.0 GiB)"),
        "{}",
        ram.message
    );
    // A burst (the 1-minute load) on a box with room is not a warning.
    let mut burst = Case::new(None);
    burst.host_sample(HostSample {
        load: crate::probe::parse_loadavg("12.40 3.10 2.00 9/800 4242").ok(),
        cpus: Some(8),
        ..HostSample::default()
    });
    let (_, signals) = burst.run();
    assert!(
        find(&signals, SignalKind::CpuBound).is_none(),
        "{signals:?}"
    );
}
