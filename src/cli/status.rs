//! `rigwatch status`: every host probed once, in parallel through the pool; a compact table, or
//! with `--json` the document README describes. Exit 0 when every host is up with nothing
//! critical, 1 otherwise.

use std::process::ExitCode;
use std::time::Duration;

use chrono::{DateTime, Utc};
use color_eyre::eyre::WrapErr;

use super::roster::{Known, reconcile_probes};
use super::status_report::{
    FileReport, HostStatus, StatusReport, gpu_reports, link_report, mount_reports,
};
use super::status_table::table;
use crate::clocks::profiles::find;
use crate::clocks::{Billed, ClockFacts, CostLedger, CostReport, Profile, billed, clocks, rates};
use crate::config::{FleetConfig, HostConfig};
use crate::fleet::{BootMark, GpuAvailability, HostHistory};
use crate::monitor::memory::{self, HostMemory};
use crate::monitor::queues;
use crate::monitor::{HostProbe, probe_once};
use crate::signals::{HostFacts, RunState, Severity, SignalKind, evaluate};
use crate::transport::{LinkState, Pool};

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print one JSON document instead of a table
    #[arg(long)]
    pub json: bool,
    /// Give up on hosts that have not answered after this many seconds
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub timeout: f64,
}

pub async fn run(
    fleet: &FleetConfig,
    profiles: &[Profile],
    args: &StatusArgs,
) -> color_eyre::Result<ExitCode> {
    // A destroy whose rigwatch was stopped while it ran is said on stderr (stdout may be JSON),
    // after asking the provider where one is configured.
    if let Some(ledger) = crate::ledger::default_path() {
        for line in crate::teardown::unfinished(&ledger, Some((fleet, profiles))).await {
            eprintln!("WARNING: {line}");
        }
    }
    let ((states, probes), provider_reports) = tokio::join!(
        probe_fleet(fleet, args.timeout),
        crate::monitor::providers::ask_all(fleet)
    );
    let provider_of = |host: &str| {
        provider_reports
            .iter()
            .find(|(h, _)| h == host)
            .map(|(_, r)| r)
    };

    let memory_path = memory::path();
    let mut memory = memory::load(memory_path.as_deref());
    let now = Utc::now();
    let burn: f64 = fleet
        .hosts
        .iter()
        .zip(&states)
        .filter(|(h, (_, link))| {
            link.is_usable()
                || memory
                    .get(&h.name)
                    .is_some_and(|m| m.last_seen_up.is_some())
        })
        .filter_map(|(h, (_, link))| {
            let provider = provider_of(&h.name).and_then(|r| r.state.as_ref());
            rates(find(profiles, &h.profile), &h.billing, provider).now(billed(
                link.is_usable(),
                false,
                provider.map(|p| &p.state),
            ))
        })
        .sum();
    let verified = super::verified_cells(&fleet.hosts);
    let known = Known {
        memory: &memory,
        verified: &verified,
        providers: &provider_reports,
    };
    let queues = reconcile_probes(&fleet.hosts, &states, &probes, &known, now);
    queues.remember(&fleet.hosts, &mut memory);
    let mut hosts = Vec::new();
    for ((host, (_, link)), probe) in fleet.hosts.iter().zip(&states).zip(probes) {
        let remembered = memory.entry(host.name.clone()).or_default();
        let judged = Judge {
            fleet,
            host,
            link,
            profile: find(profiles, &host.profile),
            provider: provider_of(&host.name),
            burn,
            now,
            timeout: args.timeout,
        };
        hosts.push(judged.host_status(probe, remembered));
    }
    for summary in queues.roster.iter().flat_map(|r| &r.hosts) {
        let Some(i) = fleet.hosts.iter().position(|h| h.name == summary.host) else {
            continue;
        };
        if let (Some(facts), Some(status)) = (&queues.facts[i], hosts.get_mut(i)) {
            status.queue = Some(queues::status(summary, facts, &[], now));
        }
    }
    for u in &queues.unread {
        let Some(status) = fleet
            .hosts
            .iter()
            .position(|h| h.name == u.host)
            .and_then(|i| hosts.get_mut(i))
        else {
            continue;
        };
        status.errors.push(format!(
            "{}: probe section qfile: queue file {} not read: {}{}",
            u.host,
            crate::sanitize::line(&u.file, 200),
            crate::sanitize::line(&u.why, 300),
            if u.remembered {
                "; its cells are as last read"
            } else {
                ""
            }
        ));
    }
    if let Some(path) = &memory_path {
        memory::save(path, &memory).wrap_err_with(|| format!("saving {}", path.display()))?;
    }
    let report = StatusReport {
        taken_at: now,
        hosts,
    };
    let code = exit_code(&report);
    if args.json {
        println!("{}", crate::sanitize::json(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(ExitCode::from(code))
}

/// For scripts: 0 healthy, 1 something to look at (a warning, or a probe that failed or did not
/// answer: a host nothing was read from is never healthy), 2 something needs action now (a
/// critical signal, or a host that is not up); 3 is a config or usage mistake (cli::run).
fn exit_code(report: &StatusReport) -> u8 {
    let probe_failed = report.hosts.iter().any(|h| !h.errors.is_empty());
    let worst = report
        .hosts
        .iter()
        .flat_map(|h| h.signals.iter().map(|s| s.severity))
        .chain(probe_failed.then_some(Severity::Warn))
        .max();
    if report.hosts.iter().any(|h| h.link.state != "up") || worst == Some(Severity::Crit) {
        2
    } else if worst == Some(Severity::Warn) {
        1
    } else {
        0
    }
}

/// Every host probed once, in parallel through the pool: the link states and the probes (None
/// for a host that did not answer within `timeout_secs`). One deadline covers both the
/// connection and the probe: `--timeout T` means the whole wait, not T to connect and T more.
pub async fn probe_fleet(
    fleet: &FleetConfig,
    timeout_secs: f64,
) -> (Vec<(String, LinkState)>, Vec<Option<HostProbe>>) {
    let timeout =
        Duration::try_from_secs_f64(timeout_secs.max(0.1)).unwrap_or(Duration::from_secs(30));
    let deadline = tokio::time::Instant::now() + timeout;
    let pool = Pool::start(fleet);
    let states = pool.settle(timeout).await;
    let probes = futures::future::join_all(fleet.hosts.iter().map(|host| {
        let session = pool.get(&host.name).and_then(|l| l.session());
        async move {
            tokio::time::timeout_at(deadline, probe_once(&session?, host))
                .await
                .ok()
        }
    }))
    .await;
    pool.shutdown().await;
    (states, probes)
}

struct Judge<'a> {
    fleet: &'a FleetConfig,
    host: &'a HostConfig,
    link: &'a LinkState,
    profile: Option<&'a Profile>,
    provider: Option<&'a crate::provider::ProviderReport>,
    burn: f64,
    now: DateTime<Utc>,
    timeout: f64,
}

impl Judge<'_> {
    fn host_status(&self, probe: Option<HostProbe>, remembered: &mut HostMemory) -> HostStatus {
        let (host, link, now) = (self.host, self.link, self.now);
        let mut history = HostHistory::with_capacity(2, 0);
        let mut errors = Vec::new();
        let mut gpu_state = GpuAvailability::Unknown;
        if let Some(probe) = probe {
            gpu_state = probe.gpu;
            errors = probe.errors;
            history.extend(probe.gpus, probe.host);
        } else if link.is_usable() {
            errors.push(format!(
                "{}: probes did not answer within {}s",
                host.name, self.timeout
            ));
        }
        let (run, signals) = evaluate(&HostFacts {
            host,
            link,
            history: &history,
            gpu: &gpu_state,
            previous_boot: remembered.boot.clone(),
            bills: host.profile != "local",
            thresholds: &self.fleet.thresholds,
            stale_after: crate::signals::stale_after(self.fleet.poll),
            now,
        });
        let latest = history.latest_host();
        if let Some(reading) = latest {
            remembered.boot = Some(BootMark::of(reading));
        }
        let idle = signals
            .iter()
            .any(|s| matches!(s.kind, SignalKind::IdleButBilling | SignalKind::ZombieVram));
        let provider = self.provider.and_then(|r| r.state.as_ref());
        let rate = rates(self.profile, &host.billing, provider);
        let billed_as = billed(link.is_usable(), idle, provider.map(|p| &p.state));
        let uptime = latest.and_then(|r| r.sample.uptime.as_ref()).map(|u| u.up);
        let session_start = latest
            .zip(uptime)
            .and_then(|(r, up)| chrono::Duration::from_std(up).ok().map(|up| r.at - up));
        let quota = self
            .profile
            .is_some_and(|p| p.timers.weekly_gpu_hours.is_some());
        if link.is_usable() {
            remembered.last_seen_up = Some(now);
            remembered
                .ledger
                .get_or_insert_with(|| CostLedger::start(now));
            if let (true, Some(start)) = (quota, session_start) {
                remembered.sessions.record(start, now);
            }
        }
        if let Some(ledger) = remembered.ledger.as_mut() {
            ledger.accrue(now, billed_as, rate.now(billed_as));
        }
        let busy = history
            .latest_gpu()
            .is_some_and(|g| g.gpus.iter().any(|x| x.util_gpu_pct.is_some_and(|u| u > 2)));
        let clock_list = clocks(&ClockFacts {
            profile: self.profile,
            billing: &host.billing,
            link_up: link.is_usable(),
            last_seen_up: remembered.last_seen_up,
            session_start,
            last_activity: (busy || matches!(run, RunState::Alive { .. })).then_some(now),
            time_to_full: None,
            checkpoint_age: latest
                .and_then(|r| r.sample.checkpoint.as_ref())
                .map(|c| now - c.modified),
            fleet_burn_per_hour: self.burn,
            balance: self.fleet.balance,
            provider,
            slurm: latest.and_then(|r| Some((r.sample.slurm_job.as_ref()?, r.at))),
            week_used: remembered.sessions.week_used(now).filter(|_| quota),
            now,
        });
        let per_hour_from = match billed_as {
            Billed::Running | Billed::Idle => rate.running_source,
            Billed::Unseen => rate.stopped_source,
            Billed::Gone => crate::clocks::RateSource::Unknown,
        };
        let cost = remembered.ledger.as_ref().map(|l| CostReport {
            per_hour: rate.now(billed_as),
            per_hour_from,
            so_far: l.spent,
            idle_so_far: l.idle_spent,
            since: l.first_seen_up,
            currency: host
                .billing
                .currency
                .clone()
                .unwrap_or_else(|| "USD".into()),
        });
        HostStatus {
            name: host.name.clone(),
            profile: host.profile.clone(),
            link: link_report(link),
            run,
            uptime_secs: uptime.map(|u| u.as_secs_f64()),
            boot_id: latest.and_then(|r| r.sample.boot_id.clone()),
            gpu_state,
            gpus: gpu_reports(&history),
            mounts: mount_reports(&history, now),
            log: latest
                .and_then(|r| r.sample.log.as_ref())
                .map(|s| FileReport::of(s, host.log.as_deref(), now)),
            log_tail: latest.map_or_else(Vec::new, |r| r.sample.log_tail.clone()),
            checkpoint: latest
                .and_then(|r| r.sample.checkpoint.as_ref())
                .map(|s| FileReport::of(s, None, now)),
            signals,
            clocks: clock_list,
            cost,
            provider: self.provider.cloned(),
            queue: None,
            errors,
        }
    }
}
