//! One demo box: its config, its link, and the probe text it "prints" each period, built from
//! the captures and fed through the live monitor's readers.

use chrono::{DateTime, Duration, Utc};

use super::captures::{self as c, body, with_header};
use crate::config::{HostConfig, SshTarget};
use crate::monitor::readers::{GpuBatcher, ProbeReader};
use crate::probe::GPU_QUERY_FIELDS;
use crate::readings::Observation;
use crate::transport::LinkState;

const NONCE: &str = "demo";
const BOOT_A: &str = "6f1c3a52-8e4d-4b7a-9c21-5d0e8f3b7a10";
const BOOT_B: &str = "b2d47e90-1a3c-4f5e-8d6b-0c9a7e2f4d31";

pub struct Scenario {
    pub config: HostConfig,
    /// Readings begin this many minutes before the demo starts.
    pub history_minutes: i64,
    /// The link went down then, and stays down.
    pub down_since: Option<DateTime<Utc>>,
    /// One sampling instant each, replayed in turn.
    gpu_frames: Vec<String>,
    apps: &'static str,
    tmux: (&'static str, &'static str, i32),
    run_lines: &'static str,
    inodes: &'static str,
    /// Bytes per minute `/` grows by, from the start of the history.
    disk_growth_per_min: u64,
    /// The box's 1-minute load average (of 16 CPUs) and the share of its RAM in use.
    load: f64,
    ram_used: f64,
    /// It runs the demo's sweep ([`super::queue`]).
    sweep: bool,
    /// The boot id changes at this moment: the box rebooted.
    reboot_at: Option<DateTime<Utc>>,
    started: Option<DateTime<Utc>>,
    step: usize,
    probe: ProbeReader,
}

/// Hourly prices of the kind each platform charges for one H100 (illustrative, not quotes).
fn price(profile: &str) -> f64 {
    match profile {
        "runpod" => 2.69,
        "lambda" => 2.99,
        "vastai" => 1.87,
        "paperspace" => 5.95,
        "autodl" => 2.10,
        "china" => 1.95,
        _ => 2.50,
    }
}

fn host(name: &str, profile: &str, run: Option<&str>) -> HostConfig {
    HostConfig {
        name: name.into(),
        target: SshTarget {
            user: Some("root".into()),
            host: format!("{name}.demo"),
            port: None,
        },
        identity: None,
        profile: profile.into(),
        accept_new: false,
        mounts: vec!["/".into()],
        run: run.map(String::from),
        run_process: None,
        log: None,
        ckpt_dir: None,
        billing: crate::config::Billing {
            price_per_hour: Some(price(profile)),
            stopped_price_per_hour: Some(0.2),
            currency: Some("USD".into()),
            ..Default::default()
        },
        instance_id: None,
        teardown: None,
        pull: None,
        queue: None,
        walltime: false,
    }
}

impl Scenario {
    fn new(config: HostConfig, gpu: &[&'static str], apps: &'static str) -> Self {
        Scenario {
            config,
            history_minutes: 40,
            down_since: None,
            gpu_frames: gpu
                .iter()
                .flat_map(|g| c::gpu_frames(&with_header(g)))
                .collect(),
            apps,
            tmux: (body(c::TMUX_NONE), body(c::TMUX_NONE), 1),
            run_lines: "",
            inodes: c::DF_INODES,
            disk_growth_per_min: 0,
            load: 0.05,
            ram_used: 0.03,
            sweep: false,
            reboot_at: None,
            started: None,
            step: 0,
            probe: ProbeReader::new(NONCE),
        }
    }

    /// Busy: `load` of the box's 16 CPUs and `ram_used` of its RAM.
    fn busy(mut self, load: f64, ram_used: f64) -> Self {
        (self.load, self.ram_used) = (load, ram_used);
        self
    }

    fn in_tmux(mut self) -> Self {
        let (ls, panes) = c::tmux_run_split();
        self.tmux = (ls, panes, 0);
        self
    }

    pub fn link(&self, now: DateTime<Utc>) -> LinkState {
        match self.down_since {
            Some(since) => LinkState::Down {
                since,
                reason: format!(
                    "connect to {}:22: Connection timed out (demo)",
                    self.config.target.host
                ),
                retry_in_ms: 30_000,
            },
            None => LinkState::Up {
                since: now - Duration::minutes(self.history_minutes),
                rtt_ms: 18.0 + (self.config.name.len() % 7) as f64,
                banner: "SSH-2.0-OpenSSH_9.2p1 (demo replay)".into(),
                auth: "none: demo".into(),
            },
        }
    }

    /// The readings one poll period produces at `at`: GPU rows and one probe cycle, each
    /// through the same readers the live streams use.
    pub fn observe(&mut self, at: DateTime<Utc>) -> Vec<Observation> {
        let started = *self.started.get_or_insert(at);
        let mut out = Vec::new();
        if let Some(frame) = self
            .gpu_frames
            .get(self.step % self.gpu_frames.len().max(1))
        {
            // A fresh batcher per frame: each frame is one whole instant, header included.
            let mut batcher = GpuBatcher::new(GPU_QUERY_FIELDS);
            let mut gpus = Vec::new();
            for line in frame.lines() {
                if let Ok(Some(batch)) = batcher.push(line) {
                    gpus.extend(batch);
                }
            }
            gpus.extend(batcher.flush());
            if !gpus.is_empty() {
                out.push(Observation::Gpu(crate::readings::GpuReading { at, gpus }));
            }
        }
        self.step += 1;
        let minutes = (at - started).num_minutes().max(0) as u64;
        let boot = match self.reboot_at {
            Some(t) if at >= t => BOOT_B,
            _ => BOOT_A,
        };
        let mut sections: Vec<(&str, String, i32)> = vec![
            ("uptime", body(c::UPTIME).into(), 0),
            ("loadavg", c::loadavg_at(self.load), 0),
            ("panes", self.tmux.1.into(), self.tmux.2),
            (
                "run",
                self.run_lines.into(),
                if self.run_lines.is_empty() { 1 } else { 0 },
            ),
            ("apps", with_header(self.apps), 0),
            (
                "df",
                c::df_bytes_grown(self.disk_growth_per_min * minutes),
                0,
            ),
            ("dfi", body(self.inodes).into(), 0),
            ("meminfo", c::meminfo_used(self.ram_used), 0),
            ("cpus", body(c::CPUS_ONLINE).into(), 0),
            ("bootid", format!("{boot}\n"), 0),
            ("tmux", self.tmux.0.into(), self.tmux.2),
        ];
        if self.sweep {
            sections.extend(super::queue::sections(at, started));
        }
        let mut text = format!("@@rw-{NONCE} cycle {}\n", self.step);
        for (name, body, status) in sections {
            text.push_str(&format!(
                "@@rw-{NONCE} begin {name}\n{body}\n@@rw-{NONCE} end {name} {status}\n"
            ));
        }
        text.push_str(&format!("@@rw-{NONCE} done\n"));
        for line in text.lines() {
            if let Ok(Some(reading)) = self.probe.push(line, at) {
                out.push(Observation::Host(Box::new(reading)));
            }
        }
        out
    }
}

/// The eight boxes, worst-first order is the dashboard's job.
pub fn all(now: DateTime<Utc>) -> Vec<Scenario> {
    let mut train_host = host(super::queue::HOST, "runpod", Some("train"));
    train_host.queue = Some(super::queue::config());
    let mut train = Scenario::new(train_host, &[c::Q_LOAD, c::LOOP_LOAD], c::APPS_LOAD)
        .in_tmux()
        .busy(7.9, 0.38);
    train.sweep = true;
    train.history_minutes = 55;
    let mut capped = Scenario::new(
        host("h100-capped", "lambda", None),
        &[c::Q_LOAD],
        c::APPS_LOAD,
    )
    .busy(6.2, 0.31);
    // Started with nohup, not in tmux: its process is the run.
    capped.config.run_process = Some("load.py".into());
    capped.run_lines = body(c::PGREP_LOAD);
    let mut zombie_host = host("h100-zombie", "vastai", Some("train"));
    zombie_host.instance_id = Some(super::teardown::READY_INSTANCE.into());
    // The box whose results the demo's ledger has home: every screen says the same (the detail
    // names its pull paths, T finds its pull verified-current).
    zombie_host.pull = Some(crate::config::PullConfig {
        paths: vec!["/workspace/run".into()],
        dest: "~/results/{host}".into(),
        verify: Default::default(),
    });
    let zombie = Scenario::new(zombie_host, &[c::ZOMBIE_Q], c::ZOMBIE_APPS).busy(0.4, 0.22);
    let mut idle = Scenario::new(
        host("h100-idle", "paperspace", None),
        &[c::Q_IDLE],
        c::APPS_IDLE,
    );
    idle.history_minutes = 50;
    let mut inodes = Scenario::new(
        host("h100-inodes", "autodl", Some("train")),
        &[c::Q_LOAD],
        c::APPS_LOAD,
    )
    .in_tmux()
    // Unpacking millions of small files: every CPU busy feeding one GPU.
    .busy(17.3, 0.61);
    inodes.inodes = c::DF_INODES_FULL;
    let mut down = Scenario::new(
        host("h100-down", "autodl", Some("train")),
        &[c::Q_LOAD],
        c::APPS_LOAD,
    )
    .in_tmux()
    .busy(7.6, 0.35);
    down.down_since = Some(now - Duration::minutes(17));
    let mut rebooted = Scenario::new(
        host("h100-rebooted", "china", Some("train")),
        &[c::Q_IDLE],
        c::APPS_IDLE,
    );
    rebooted.reboot_at = Some(now - Duration::minutes(3));
    let mut filling = Scenario::new(
        host("h100x2-fill", "runpod", Some("train")),
        &[c::Q_MULTI],
        c::APPS_LOAD,
    )
    .in_tmux()
    .busy(9.1, 0.47);
    filling.disk_growth_per_min = 420 * 1024 * 1024;
    filling.history_minutes = 45;
    vec![train, capped, zombie, idle, inodes, down, rebooted, filling]
}
