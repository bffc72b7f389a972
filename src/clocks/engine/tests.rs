//! Every clock kind with `now` fixed, on the shipped profiles.
//!
//! Past 400 lines: a table of cases, each read on its own.

use chrono::{DateTime, Duration, Utc};

use super::*;
use crate::clocks::load_all;
use crate::clocks::profiles::find;
use crate::clocks::{SessionLog, stopped_rate};
use crate::probe::SlurmJob;
use crate::provider::{InstanceState, ProviderState};

fn now() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000)
}

fn facts<'a>(profile: Option<&'a Profile>, billing: &'a Billing) -> ClockFacts<'a> {
    ClockFacts {
        profile,
        billing,
        link_up: true,
        last_seen_up: None,
        session_start: None,
        last_activity: None,
        time_to_full: None,
        checkpoint_age: None,
        fleet_burn_per_hour: 0.0,
        balance: None,
        provider: None,
        slurm: None,
        week_used: None,
        now: now(),
    }
}

fn kind(clocks: &[Clock], k: ClockKind) -> Option<&Clock> {
    clocks.iter().find(|c| c.kind == k)
}

#[test]
fn a_box_out_of_sight_on_autodl_counts_down_to_release_from_last_seen() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing {
        price_per_hour: Some(2.0),
        stopped_price_per_hour: Some(0.1),
        ..Billing::default()
    };
    let mut f = facts(find(&profiles, "autodl"), &billing);
    f.link_up = false;
    f.last_seen_up = Some(now() - Duration::days(3));
    let clocks = clocks(&f);
    let release = kind(&clocks, ClockKind::AutoRelease).expect("release clock");
    assert_eq!(release.remaining_secs, Some(12 * 86400));
    assert_eq!(release.confidence, Confidence::Conservative);
    assert!(
        release.message.contains("stopped since last seen"),
        "{}",
        release.message
    );
    let billing_clock = kind(&clocks, ClockKind::StoppedBilling).expect("accrual");
    assert!(
        (billing_clock.accrued.unwrap_or(0.0) - 7.2).abs() < 1e-9,
        "{billing_clock:?}"
    );
    assert_eq!(
        clocks[0].kind,
        ClockKind::AutoRelease,
        "deadlines first, accruals after"
    );
}

#[test]
fn no_stop_state_bills_fully_and_an_up_box_has_no_stop_clocks() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing {
        price_per_hour: Some(1.5),
        ..Billing::default()
    };
    let lambda = find(&profiles, "lambda");
    assert_eq!(stopped_rate(lambda, &billing), Some(1.5));
    assert_eq!(
        stopped_rate(find(&profiles, "runpod"), &billing),
        None,
        "no fraction documented"
    );
    let mut f = facts(lambda, &billing);
    f.last_seen_up = Some(now());
    assert!(clocks(&f).is_empty());
}

#[test]
fn notebook_sessions_have_idle_max_and_quota_clocks() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing::default();
    let mut f = facts(find(&profiles, "kaggle"), &billing);
    f.session_start = Some(now() - Duration::hours(8));
    f.last_activity = Some(now() - Duration::minutes(50));
    let clocks = clocks(&f);
    assert_eq!(
        kind(&clocks, ClockKind::IdleTimeout).and_then(|c| c.remaining_secs),
        Some(600)
    );
    assert_eq!(
        kind(&clocks, ClockKind::MaxSession).and_then(|c| c.remaining_secs),
        Some(3600)
    );
    assert_eq!(
        kind(&clocks, ClockKind::WeeklyQuota).and_then(|c| c.remaining_secs),
        Some(22 * 3600)
    );
    assert_eq!(Urgency::of(&clocks[0]), Urgency::TenMinutes);
    assert_eq!(Urgency::of(&clocks[0]).word(), "SOON");
    let colab = find(&profiles, "colab");
    let mut f = facts(colab, &billing);
    f.session_start = Some(now() - Duration::hours(13));
    let c = super::clocks(&f);
    assert_eq!(
        kind(&c, ClockKind::MaxSession).map(Urgency::of),
        Some(Urgency::Fired)
    );
}

#[test]
fn disk_runway_and_checkpoint_interval() {
    let billing = Billing {
        mtbi_hours: Some(24.0),
        ckpt_write_secs: Some(60.0),
        ..Billing::default()
    };
    let mut f = facts(None, &billing);
    f.time_to_full = Some((
        "inodes",
        Duration::hours(2),
        crate::signals::FillConfidence::High,
    ));
    f.balance = Some(50.0);
    f.fleet_burn_per_hour = 10.0;
    f.checkpoint_age = Some(Duration::minutes(30));
    let clocks = clocks(&f);
    assert_eq!(
        kind(&clocks, ClockKind::DiskFull).and_then(|c| c.remaining_secs),
        Some(7200)
    );
    assert_eq!(
        kind(&clocks, ClockKind::BalanceRunway).and_then(|c| c.remaining_secs),
        Some(5 * 3600)
    );
    // √(2 · 86400 s · 60 s) = 3220 s ≈ 54 min; the last checkpoint is 30 min old.
    let ckpt = kind(&clocks, ClockKind::CheckpointInterval).expect("young/daly");
    assert_eq!(ckpt.remaining_secs, Some(3219 - 1800));
    assert!(ckpt.message.contains("every 54 min"), "{}", ckpt.message);
}

fn vast(state: InstanceState, since: Option<DateTime<Utc>>) -> ProviderState {
    ProviderState {
        ssh: Vec::new(),
        instance_id: "21437002".into(),
        state,
        price_per_hour: Some(2.0),
        stopped_price_per_hour: Some(0.25),
        state_since: since,
        ends_at: None,
        label: None,
    }
}

#[test]
fn the_provider_turns_a_guess_into_a_fact() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing {
        stopped_price_per_hour: Some(9.0),
        ..Billing::default()
    };
    let stopped = vast(InstanceState::Stopped, Some(now() - Duration::hours(4)));
    let mut f = facts(find(&profiles, "vastai"), &billing);
    f.link_up = false;
    f.last_seen_up = Some(now() - Duration::hours(10));
    f.provider = Some(&stopped);
    let c = clocks(&f);
    let accrual = kind(&c, ClockKind::StoppedBilling).expect("accrual");
    assert_eq!(accrual.confidence, Confidence::Exact);
    assert!(
        (accrual.accrued.unwrap_or(0.0) - 1.0).abs() < 1e-9,
        "4 h stopped at the provider's 0.25/h, not fleet.toml's 9/h: {accrual:?}"
    );
    assert!(
        accrual.message.contains("vast.ai says it is stopped"),
        "{}",
        accrual.message
    );

    let running = vast(InstanceState::Running, None);
    f.provider = Some(&running);
    let c = clocks(&f);
    let accrual = kind(&c, ClockKind::StoppedBilling).expect("accrual");
    assert!(
        (accrual.accrued.unwrap_or(0.0) - 20.0).abs() < 1e-9,
        "unreachable but running bills the running price since last seen"
    );
    assert!(
        accrual.message.contains("says it is running"),
        "{}",
        accrual.message
    );

    let gone = vast(InstanceState::Destroyed, None);
    f.provider = Some(&gone);
    assert!(clocks(&f).is_empty(), "a destroyed box bills nothing");

    let unknown = vast(InstanceState::Other("frozen".into()), None);
    f.provider = Some(&unknown);
    let c = clocks(&f);
    let accrual = kind(&c, ClockKind::StoppedBilling).expect("accrual");
    assert_eq!(
        accrual.confidence,
        Confidence::Conservative,
        "a state rigwatch cannot read confirms nothing"
    );
    assert!(
        accrual.message.starts_with("unreachable for 10.0 h"),
        "{}",
        accrual.message
    );
}

#[test]
fn a_release_counted_from_the_providers_stop_time_is_exact() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing::default();
    let stopped = vast(InstanceState::Stopped, Some(now() - Duration::days(5)));
    let mut f = facts(find(&profiles, "autodl"), &billing);
    f.link_up = false;
    f.last_seen_up = Some(now() - Duration::days(1));
    f.provider = Some(&stopped);
    let c = clocks(&f);
    let release = kind(&c, ClockKind::AutoRelease).expect("release");
    assert_eq!(release.remaining_secs, Some(10 * 86400));
    assert_eq!(release.confidence, Confidence::Exact);
}

#[test]
fn walltime_counts_from_when_squeue_was_read_and_flags_an_old_checkpoint() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing::default();
    let job = SlurmJob {
        name: None,
        id: "4242".into(),
        state: "RUNNING".into(),
        used: None,
        limit: None,
        left: Some(std::time::Duration::from_secs(3600)),
    };
    let mut f = facts(find(&profiles, "slurm"), &billing);
    f.slurm = Some((&job, now() - Duration::minutes(10)));
    f.checkpoint_age = Some(Duration::minutes(90));
    let c = clocks(&f);
    let wall = kind(&c, ClockKind::Walltime).expect("walltime");
    assert_eq!(wall.remaining_secs, Some(50 * 60));
    assert_eq!(wall.confidence, Confidence::Exact);
    assert!(
        wall.message.contains("older than the 50 min left"),
        "{}",
        wall.message
    );
    f.checkpoint_age = Some(Duration::minutes(5));
    let c = clocks(&f);
    let wall = kind(&c, ClockKind::Walltime).expect("walltime");
    assert!(!wall.message.contains("older than"), "{}", wall.message);
    let unlimited = SlurmJob {
        name: None,
        left: None,
        ..job.clone()
    };
    let mut f = facts(find(&profiles, "slurm"), &billing);
    f.slurm = Some((&unlimited, now()));
    assert!(kind(&clocks(&f), ClockKind::Walltime).is_none());
}

#[test]
fn the_weekly_quota_counts_earlier_sessions() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing::default();
    let mut log = SessionLog::default();
    log.record(
        now() - Duration::days(3),
        now() - Duration::days(3) + Duration::hours(20),
    );
    log.record(now() - Duration::hours(2), now());
    let mut f = facts(find(&profiles, "kaggle"), &billing);
    f.session_start = Some(now() - Duration::hours(2));
    f.week_used = Some(log.used_in_week(now()));
    let c = clocks(&f);
    let quota = kind(&c, ClockKind::WeeklyQuota).expect("quota");
    assert_eq!(
        quota.remaining_secs,
        Some(8 * 3600),
        "30 h less 20 h and 2 h"
    );
    assert!(quota.message.contains("22.0 h used"), "{}", quota.message);
}

/// Every shipped profile, a box up for an hour and the same box out of sight for three days:
/// the clocks each profile's timers promise, and no others.
#[test]
fn every_shipped_profile_gets_exactly_the_clocks_its_timers_promise() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing {
        price_per_hour: Some(1.0),
        ..Billing::default()
    };
    let expected: &[(&str, &[ClockKind], &[ClockKind])] = &[
        ("generic-ssh", &[], &[ClockKind::StoppedBilling]),
        ("runpod", &[], &[ClockKind::StoppedBilling]),
        ("vastai", &[], &[ClockKind::StoppedBilling]),
        ("lambda", &[], &[ClockKind::StoppedBilling]),
        ("paperspace", &[], &[ClockKind::StoppedBilling]),
        (
            "autodl",
            &[],
            &[ClockKind::AutoRelease, ClockKind::StoppedBilling],
        ),
        (
            "china",
            &[],
            &[ClockKind::AutoRelease, ClockKind::StoppedBilling],
        ),
        ("slurm", &[], &[ClockKind::StoppedBilling]),
        ("kubernetes", &[], &[ClockKind::StoppedBilling]),
        (
            "colab",
            &[ClockKind::MaxSession, ClockKind::IdleTimeout],
            &[ClockKind::StoppedBilling],
        ),
        (
            "kaggle",
            &[
                ClockKind::MaxSession,
                ClockKind::IdleTimeout,
                ClockKind::WeeklyQuota,
            ],
            &[ClockKind::StoppedBilling],
        ),
        ("local", &[], &[ClockKind::StoppedBilling]),
    ];
    assert_eq!(
        expected.len(),
        profiles.len(),
        "a profile without a row here"
    );
    let sorted = |mut kinds: Vec<ClockKind>| {
        kinds.sort_by_key(|k| format!("{k:?}"));
        kinds
    };
    for (name, up, away) in expected {
        let profile = find(&profiles, name);
        assert!(profile.is_some(), "{name} is shipped");
        let mut f = facts(profile, &billing);
        f.session_start = Some(now() - Duration::hours(1));
        f.last_activity = Some(now());
        let got = sorted(clocks(&f).iter().map(|c| c.kind).collect());
        assert_eq!(got, sorted(up.to_vec()), "{name}, up");
        f.link_up = false;
        f.last_seen_up = Some(now() - Duration::days(3));
        let got = sorted(clocks(&f).iter().map(|c| c.kind).collect());
        assert_eq!(got, sorted(away.to_vec()), "{name}, out of sight");
    }
}

/// vast.ai stops an on-demand rental at its host's lifetime end date; where its CLI reports
/// the date, rigwatch counts down to it instead of showing "-".
#[test]
fn a_vast_rental_counts_down_to_its_lifetime_end() {
    let profiles = load_all(None).expect("profiles");
    let billing = Billing::default();
    let mut running = vast(InstanceState::Running, None);
    running.ends_at = Some(now() + Duration::hours(30));
    let mut f = facts(find(&profiles, "vastai"), &billing);
    f.provider = Some(&running);
    let c = clocks(&f);
    let end = kind(&c, ClockKind::LifetimeEnd).expect("lifetime end");
    assert_eq!(end.remaining_secs, Some(30 * 3600));
    assert_eq!(end.confidence, Confidence::Exact);
    assert!(
        end.message.contains("vast.ai stops this rental"),
        "{}",
        end.message
    );

    let gone = vast(InstanceState::Destroyed, None);
    f.provider = Some(&gone);
    assert!(kind(&clocks(&f), ClockKind::LifetimeEnd).is_none());
    let mut overdue = vast(InstanceState::Running, None);
    overdue.ends_at = Some(now() - Duration::hours(1));
    f.provider = Some(&overdue);
    assert!(
        kind(&clocks(&f), ClockKind::LifetimeEnd).is_none(),
        "a date the provider let pass, the box still running"
    );
}

#[test]
fn one_set_of_bands_for_views_events_and_alerts() {
    use crate::signals::Severity;
    let cases = [
        (None, Urgency::Accruing, "accruing", None, None),
        (Some(90_000), Urgency::Later, "later", None, None),
        (
            Some(86_400),
            Urgency::Today,
            "today",
            Some(Severity::Warn),
            Some("24h"),
        ),
        (
            Some(3_600),
            Urgency::Hour,
            "SOON",
            Some(Severity::Crit),
            Some("1h"),
        ),
        (
            Some(600),
            Urgency::TenMinutes,
            "SOON",
            Some(Severity::Crit),
            Some("10m"),
        ),
        (
            Some(0),
            Urgency::Fired,
            "FIRED",
            Some(Severity::Crit),
            Some("10m"),
        ),
        (
            Some(-5),
            Urgency::Fired,
            "FIRED",
            Some(Severity::Crit),
            Some("10m"),
        ),
    ];
    for (left, urgency, word, severity, stage) in cases {
        let u = Urgency::of_secs(left);
        assert_eq!(
            (u, u.word(), u.severity(), u.stage()),
            (urgency, word, severity, stage)
        );
    }
    assert!(Urgency::Fired > Urgency::TenMinutes && Urgency::Today > Urgency::Later);
}
