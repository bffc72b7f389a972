//! Once each way: a wait before firing, a flap told once with its count, repeats far apart,
//! and a host out of sight neither resolving nor re-firing.

use super::*;

fn t0() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000)
}

fn at(secs: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(secs)
}

fn cond(host: &str, kind: &str) -> Condition {
    Condition {
        host: host.into(),
        kind: crate::alerts::AlertKind::parse(kind).expect("a known kind"),
        severity: Severity::Crit,
        message: format!("{kind} on {host}"),
        stage: None,
        subject: None,
    }
}

fn none() -> BTreeSet<String> {
    BTreeSet::new()
}

fn seen(conditions: &[Condition], frozen: BTreeSet<String>) -> Seen {
    Seen {
        conditions: conditions.to_vec(),
        frozen,
        link_unknown: BTreeSet::new(),
    }
}

fn states(events: &[AlertEvent]) -> Vec<(String, AlertState)> {
    events
        .iter()
        .map(|e| (e.kind.to_string(), e.state))
        .collect()
}

#[test]
fn a_condition_fires_after_the_wait_once_and_resolves_once() {
    let mut e = Engine::new(Timing::default());
    let dead = [cond("a", "run_dead")];
    assert!(
        e.step(&seen(&dead, none()), at(0)).is_empty(),
        "not before the wait"
    );
    assert!(e.step(&seen(&dead, none()), at(20)).is_empty());
    let fired = e.step(&seen(&dead, none()), at(30));
    assert_eq!(states(&fired), [("run_dead".into(), AlertState::Firing)]);
    assert_eq!(fired[0].data.count, 1);
    for s in (32..3600).step_by(2) {
        assert!(
            e.step(&seen(&dead, none()), at(s)).is_empty(),
            "once, not every tick"
        );
    }
    assert!(
        e.step(&seen(&[], none()), at(3600)).is_empty(),
        "gone, but not for long yet"
    );
    let resolved = e.step(&seen(&[], none()), at(3630));
    assert_eq!(
        states(&resolved),
        [("run_dead".into(), AlertState::Resolved)]
    );
    assert!(e.step(&seen(&[], none()), at(3700)).is_empty());
}

#[test]
fn a_blip_shorter_than_the_wait_sends_nothing() {
    let mut e = Engine::new(Timing::default());
    let down = [cond("a", "link_down")];
    assert!(e.step(&seen(&down, none()), at(0)).is_empty());
    assert!(e.step(&seen(&[], none()), at(5)).is_empty());
    assert!(e.step(&seen(&[], none()), at(100)).is_empty());
}

#[test]
fn twenty_flaps_in_a_minute_are_one_alert_with_the_count() {
    let mut e = Engine::new(Timing::default());
    let down = [cond("a", "link_down")];
    let mut sent = Vec::new();
    for flap in 0..20 {
        sent.extend(e.step(&seen(&down, none()), at(flap * 3)));
        sent.extend(e.step(&seen(&[], none()), at(flap * 3 + 1)));
    }
    assert_eq!(
        states(&sent),
        [("link_down".into(), AlertState::Firing)],
        "{sent:?}"
    );
    assert_eq!(sent[0].data.count, 3, "fired on the third start");
    for s in 61..160 {
        sent.extend(e.step(&seen(&[], none()), at(s)));
    }
    let resolved: Vec<_> = sent
        .iter()
        .filter(|e| e.state == AlertState::Resolved)
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        resolved[0].data.count, 20,
        "the resolve says how often it flapped"
    );
}

#[test]
fn a_host_out_of_sight_never_resolves_or_refires_its_alerts() {
    let mut e = Engine::new(Timing::default());
    let zombie = [cond("a", "zombie_vram")];
    e.step(&seen(&zombie, none()), at(0));
    assert_eq!(e.step(&seen(&zombie, none()), at(30)).len(), 1);
    // The link goes: the zombie reading is stale, the signal is gone from the state.
    let frozen: BTreeSet<String> = ["a".to_string()].into();
    let down = [cond("a", "link_down"), cond("a", "run_unknown")];
    let mut sent = Vec::new();
    for s in (32..7200).step_by(2) {
        sent.extend(e.step(&seen(&down, frozen.clone()), at(s)));
    }
    assert_eq!(
        states(&sent),
        [("link_down".into(), AlertState::Firing)],
        "only the link: {sent:?}"
    );
    // Back, and still a zombie: nothing new for it.
    let back = e.step(&seen(&zombie, none()), at(7202));
    assert!(back.is_empty(), "{back:?}");
    let link = e.step(&seen(&zombie, none()), at(7232));
    assert_eq!(states(&link), [("link_down".into(), AlertState::Resolved)]);
}

#[test]
fn repeats_are_far_apart_and_a_clock_escalates_at_once() {
    let mut e = Engine::new(Timing::default());
    let dead = [cond("a", "run_dead")];
    e.step(&seen(&dead, none()), at(0));
    assert_eq!(e.step(&seen(&dead, none()), at(30)).len(), 1);
    let repeat = e.step(&seen(&dead, none()), at(30 + 4 * 3600));
    assert_eq!(repeat.len(), 1);
    assert!(repeat[0].data.repeat);

    let mut e = Engine::new(Timing::default());
    let mut clock = cond("a", "clock_auto_release");
    clock.severity = Severity::Warn;
    clock.stage = Some("24h".into());
    e.step(&seen(std::slice::from_ref(&clock), none()), at(0));
    assert_eq!(
        e.step(&seen(std::slice::from_ref(&clock), none()), at(30))
            .len(),
        1
    );
    clock.severity = Severity::Crit;
    clock.stage = Some("1h".into());
    let crossed = e.step(&seen(std::slice::from_ref(&clock), none()), at(40));
    assert_eq!(crossed.len(), 1, "crossing into the hour is news at once");
    assert_eq!(crossed[0].data.stage.as_deref(), Some("1h"));
}

#[test]
fn a_host_not_yet_reconnected_after_a_reload_keeps_even_its_link_alert() {
    let mut e = Engine::new(Timing::default());
    let down = [cond("a", "link_down")];
    e.step(&seen(&down, none()), at(0));
    assert_eq!(e.step(&seen(&down, none()), at(30)).len(), 1);
    // A reload starts a new connection: "connecting" says nothing about the link yet.
    let unknown = Seen {
        conditions: Vec::new(),
        frozen: ["a".to_string()].into(),
        link_unknown: ["a".to_string()].into(),
    };
    for s in 31..200 {
        assert!(
            e.step(&unknown, at(s)).is_empty(),
            "resolved on not knowing"
        );
    }
    assert!(
        e.step(&seen(&down, none()), at(201)).is_empty(),
        "and not told again"
    );
}

#[test]
fn a_flapping_condition_stays_one_alert_while_its_quiet_spells_are_short() {
    // Down 5 s, back 40 s, again and again: each spell back is longer than the wait, but
    // the condition keeps returning. One firing, no resolve until it has been back for
    // the flap's longer quiet, then one resolve with the count.
    let mut e = Engine::new(Timing::default());
    let down = [cond("a", "link_down")];
    let mut sent = Vec::new();
    for flap in 0..8 {
        let start = flap * 45;
        for s in start..start + 5 {
            sent.extend(e.step(&seen(&down, none()), at(s)));
        }
        for s in start + 5..start + 45 {
            sent.extend(e.step(&seen(&[], none()), at(s)));
        }
    }
    assert_eq!(
        states(&sent),
        [("link_down".into(), AlertState::Firing)],
        "{sent:?}"
    );
    for s in 360..460 {
        sent.extend(e.step(&seen(&[], none()), at(s)));
    }
    let resolved: Vec<_> = sent
        .iter()
        .filter(|e| e.state == AlertState::Resolved)
        .collect();
    assert_eq!(resolved.len(), 1, "{sent:?}");
    assert_eq!(resolved[0].data.count, 8);
}

#[test]
fn a_steady_condition_still_resolves_after_the_plain_wait() {
    let mut e = Engine::new(Timing::default());
    let dead = [cond("a", "run_dead")];
    e.step(&seen(&dead, none()), at(0));
    assert_eq!(e.step(&seen(&dead, none()), at(30)).len(), 1);
    e.step(&seen(&[], none()), at(40));
    let resolved = e.step(&seen(&[], none()), at(70));
    assert_eq!(
        states(&resolved),
        [("run_dead".into(), AlertState::Resolved)]
    );
}
