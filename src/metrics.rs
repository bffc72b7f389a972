//! The fleet's figures in Prometheus's format, for teams whose Prometheus, Alertmanager and
//! Grafana should take the fleet over: `rigwatch watch --metrics 127.0.0.1:9464`. Built on
//! prometheus-client (the Prometheus project's Rust client) rather than text written here; the
//! figures are set from the fleet's state each tick and read by a small loopback HTTP server.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use chrono::{DateTime, Utc};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::fleet::FleetState;
use crate::signals::{RunState, Severity, disk_usage};

type Labels = Vec<(String, String)>;
type Figure = Family<Labels, Gauge<f64, AtomicU64>>;

/// Every family, registered once; `set_from` replaces their values each tick.
pub struct Metrics {
    registry: Registry,
    up: Figure,
    rtt: Figure,
    data_age: Figure,
    run: Figure,
    needs_you: Figure,
    sm_clock: Figure,
    sm_clock_max: Figure,
    power: Figure,
    power_limit: Figure,
    util: Figure,
    vram_used: Figure,
    vram_total: Figure,
    disk_used: Figure,
    clock_left: Figure,
    cost_per_hour: Figure,
    spent: Figure,
    cluster_read: Figure,
    job: Figure,
    job_gpus: Figure,
    job_restarts: Figure,
    job_walltime_left: Figure,
    gpu_quota_left: Figure,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("rigwatch");
        let mut family = |name: &str, help: &str| {
            let f = Figure::default();
            registry.register(name, help, f.clone());
            f
        };
        Metrics {
            up: family("host_up", "1 when rigwatch is connected to the host"),
            rtt: family("host_rtt_seconds", "Round trip of the host's SSH link"),
            data_age: family("host_data_age_seconds", "Age of the host's newest reading"),
            run: family(
                "run_state",
                "1 for the run's state (alive, dead, unknown, not-configured)",
            ),
            needs_you: family(
                "host_signals",
                "Signals at warn or crit on the host, by severity",
            ),
            sm_clock: family("gpu_sm_clock_mhz", "GPU SM clock"),
            sm_clock_max: family("gpu_sm_clock_max_mhz", "GPU SM clock limit"),
            power: family("gpu_power_watts", "GPU power draw"),
            power_limit: family("gpu_power_limit_watts", "GPU power cap"),
            util: family("gpu_utilization_ratio", "GPU utilisation, 0 to 1"),
            vram_used: family("gpu_memory_used_bytes", "GPU memory in use"),
            vram_total: family("gpu_memory_total_bytes", "GPU memory in all"),
            disk_used: family(
                "disk_used_ratio",
                "Share of a mount's bytes or inodes in use",
            ),
            clock_left: family("clock_remaining_seconds", "Time left on a danger clock"),
            cost_per_hour: family("cost_per_hour", "What the host bills per hour now"),
            spent: family(
                "cost_spent",
                "Money spent on the host since rigwatch first saw it",
            ),
            cluster_read: family(
                "cluster_queue_read",
                "1 when the cluster's queue was read at the last try",
            ),
            job: family(
                "job_phase",
                "1 for a cluster job's phase (pending, running, failed, gone, ...) and state",
            ),
            job_gpus: family("job_gpus", "GPUs a cluster job holds or asks for"),
            job_restarts: family(
                "job_restarts",
                "Requeues or restarts of a cluster job so far",
            ),
            job_walltime_left: family(
                "job_walltime_remaining_seconds",
                "Time until the scheduler kills a running job at its walltime",
            ),
            gpu_quota_left: family(
                "gpu_quota_remaining_seconds",
                "GPU time left this week on a Kaggle member's account",
            ),
            registry,
        }
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

impl Metrics {
    /// Replaces every figure with the fleet's state at `now`.
    pub fn set_from(&self, state: &FleetState, now: DateTime<Utc>) {
        for f in [
            &self.up,
            &self.rtt,
            &self.data_age,
            &self.run,
            &self.needs_you,
            &self.sm_clock,
            &self.sm_clock_max,
            &self.power,
            &self.power_limit,
            &self.util,
            &self.vram_used,
            &self.vram_total,
            &self.disk_used,
            &self.clock_left,
            &self.cost_per_hour,
            &self.spent,
            &self.cluster_read,
            &self.job,
            &self.job_gpus,
            &self.job_restarts,
            &self.job_walltime_left,
            &self.gpu_quota_left,
        ] {
            f.clear();
        }
        let set = |f: &Figure, l: &[(&str, &str)], v: f64| {
            f.get_or_create(&labels(l)).set(v);
        };
        for h in &state.hosts {
            let host = h.config.name.as_str();
            let one = [("host", host)];
            set(&self.up, &one, f64::from(u8::from(h.link.is_usable())));
            if let Some(rtt) = h.link.rtt_ms().filter(|r| r.is_finite()) {
                set(&self.rtt, &one, rtt / 1000.0);
            }
            if let Some(at) = h.last_reading {
                set(
                    &self.data_age,
                    &one,
                    (now - at).num_milliseconds() as f64 / 1000.0,
                );
            }
            let run = match &h.run {
                RunState::Alive { .. } => "alive",
                RunState::Dead { .. } => "dead",
                RunState::Unknown { .. } => "unknown",
                RunState::NotConfigured => "not-configured",
            };
            set(&self.run, &[("host", host), ("state", run)], 1.0);
            for (severity, word) in [(Severity::Warn, "warn"), (Severity::Crit, "crit")] {
                let n = h.signals.iter().filter(|s| s.severity == severity).count();
                set(
                    &self.needs_you,
                    &[("host", host), ("severity", word)],
                    n as f64,
                );
            }
            if let Some(latest) = h.history.latest_gpu() {
                for (i, g) in latest.gpus.iter().enumerate() {
                    let index = g.index.unwrap_or(i as u32).to_string();
                    let l = [("host", host), ("gpu", index.as_str())];
                    let pairs: [(&Figure, Option<f64>); 7] = [
                        (&self.sm_clock, g.sm_clock_mhz.map(f64::from)),
                        (&self.sm_clock_max, g.sm_clock_max_mhz.map(f64::from)),
                        (&self.power, g.power_draw_w),
                        (&self.power_limit, g.power_limit_w),
                        (&self.util, g.util_gpu_pct.map(|u| f64::from(u) / 100.0)),
                        (
                            &self.vram_used,
                            g.mem_used_mib.map(|m| m as f64 * 1048576.0),
                        ),
                        (
                            &self.vram_total,
                            g.mem_total_mib.map(|m| m as f64 * 1048576.0),
                        ),
                    ];
                    for (f, v) in pairs {
                        if let Some(v) = v {
                            set(f, &l, v);
                        }
                    }
                }
            }
            if let Some(latest) = h.history.latest_host() {
                for m in &latest.sample.mounts {
                    let (bytes, inodes) = disk_usage(m);
                    for (what, usage) in [("bytes", bytes), ("inodes", inodes)] {
                        if let Some(u) = usage {
                            let l = [("host", host), ("mount", m.mount.as_str()), ("what", what)];
                            set(&self.disk_used, &l, u.pct() / 100.0);
                        }
                    }
                }
            }
            for c in &h.clocks {
                if let Some(left) = c.remaining_secs {
                    let kind = serde_json::to_value(c.kind).ok();
                    let kind = kind.as_ref().and_then(|k| k.as_str()).unwrap_or("?");
                    set(
                        &self.clock_left,
                        &[("host", host), ("kind", kind)],
                        left as f64,
                    );
                }
            }
            if let Some(ledger) = &h.ledger {
                set(&self.spent, &one, ledger.spent);
            }
            if let Some(rate) = state.rate_now(host) {
                set(&self.cost_per_hour, &one, rate);
            }
        }
        self.set_clusters(state);
    }

    /// Each cluster's queue and each of its jobs, labelled by cluster and job id.
    fn set_clusters(&self, state: &FleetState) {
        let set = |f: &Figure, l: &[(&str, &str)], v: f64| {
            f.get_or_create(&labels(l)).set(v);
        };
        for c in &state.clusters {
            let cluster = c.name.as_str();
            let read = f64::from(u8::from(c.error.is_none()));
            set(&self.cluster_read, &[("cluster", cluster)], read);
            if let Some(q) = &c.quota {
                let left = q.remaining_hours * 3600.0;
                // "seen": rigwatch's own count of the runs it saw, at most this much is left.
                let source = if q.lower_bound { "seen" } else { "account" };
                let l = [("cluster", cluster), ("source", source)];
                set(&self.gpu_quota_left, &l, left);
            }
            for j in &c.jobs {
                let one = [("cluster", cluster), ("job", j.id.as_str())];
                let phase = serde_json::to_value(j.phase).ok();
                let phase = phase.as_ref().and_then(|p| p.as_str()).unwrap_or("?");
                let l = [
                    ("cluster", cluster),
                    ("job", j.id.as_str()),
                    ("name", j.name.as_str()),
                    ("phase", phase),
                    ("state", j.state.as_str()),
                ];
                set(&self.job, &l, 1.0);
                if let Some(gpus) = j.gpus {
                    set(&self.job_gpus, &one, f64::from(gpus));
                }
                if let Some(restarts) = j.restarts {
                    set(&self.job_restarts, &one, f64::from(restarts));
                }
                if let Some(left) = j.walltime.as_ref().and_then(|w| w.remaining_secs) {
                    set(&self.job_walltime_left, &one, left as f64);
                }
            }
        }
    }

    /// The exposition text a scrape gets.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Serves `metrics` on `listener` until the task is aborted: any GET gets the figures.
pub async fn serve(listener: TcpListener, metrics: Arc<std::sync::Mutex<Metrics>>) {
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            continue;
        };
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            // The request is read only as far as its head; nothing in it changes the answer.
            let mut head = vec![0u8; 4096];
            let _ =
                tokio::time::timeout(std::time::Duration::from_secs(5), conn.read(&mut head)).await;
            let body = metrics.lock().map(|m| m.render()).unwrap_or_default();
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; \
                 charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(response.as_bytes()).await;
            let _ = conn.shutdown().await;
        });
    }
}
