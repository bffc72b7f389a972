//! When a disk fills: only from enough history, with the confidence said, and one answer for
//! the signal, the clock and the detail.

use super::*;

/// A reading of `/` with `used` of `size` one-byte blocks, `minute` minutes after t0.
fn disk_at(minute: f64, used: u64, size: u64) -> HostReading {
    let text = format!(
        "Filesystem 1-blocks Used Available Capacity Mounted on\n/dev/vda {size} {used} {} 1% /\n",
        size - used
    );
    HostReading {
        at: t0() + Duration::milliseconds((minute * 60_000.0) as i64),
        sample: HostSample {
            mounts: merge_df(parse_df_bytes(&text).expect("df"), Vec::new()),
            ..HostSample::default()
        },
    }
}

fn case_with(readings: &[(f64, u64)]) -> Case {
    sized_case(readings, 100)
}

fn sized_case(readings: &[(f64, u64)], size: u64) -> Case {
    let mut case = Case::new(None);
    for &(minute, used) in readings {
        case.history.push_host(disk_at(minute, used, size));
    }
    case.now =
        t0() + Duration::milliseconds((readings.last().map_or(0.0, |r| r.0) * 60_000.0) as i64);
    case
}

fn outlook(case: &Case) -> FillOutlook {
    let window = case
        .history
        .host_since(case.now, Duration::minutes(GROWTH_WINDOW_MINUTES));
    fill_outlook(&window, "/")
}

#[test]
fn steady_growth_over_enough_history_gives_a_time_to_full_with_high_confidence() {
    // 2 blocks a minute for 24 minutes: 2 + 48 = 50 used, 50 left, 25 minutes to go.
    let readings: Vec<(f64, u64)> = (0..=12)
        .map(|k| (f64::from(k) * 2.0, 2 + 4 * k as u64))
        .collect();
    let case = case_with(&readings);
    let o = outlook(&case);
    let (what, left, confidence) = o.filling().expect("filling");
    assert_eq!((what, confidence), ("bytes", FillConfidence::High));
    assert_eq!(left.num_minutes(), 25, "{o:?}");
    let (_, signals) = case.run();
    let filling = find(&signals, SignalKind::DiskFillingUp).expect("filling signal");
    assert!(
        filling
            .message
            .contains("bytes full in ~25m (high confidence"),
        "{}",
        filling.message
    );
}

/// Two readings a minute apart once gave "1306d22h disk full", then "3d16h": now no estimate
/// until the history spans ten minutes and five readings, and the views say why.
#[test]
fn a_short_history_withholds_the_estimate_and_says_so() {
    for readings in [
        vec![(0.0, 10), (1.0, 30)],
        vec![
            (0.0, 10),
            (0.5, 11),
            (1.0, 12),
            (1.5, 13),
            (2.0, 14),
            (2.5, 15),
        ],
        vec![(0.0, 10), (10.0, 30)],
    ] {
        let case = case_with(&readings);
        let o = outlook(&case);
        assert!(
            matches!(o, FillOutlook::TooLittleHistory { .. }),
            "{readings:?}: {o:?}"
        );
        assert!(
            o.describe().starts_with("growth not known yet"),
            "{}",
            o.describe()
        );
        let (_, signals) = case.run();
        assert!(
            find(&signals, SignalKind::DiskFillingUp).is_none(),
            "{readings:?}"
        );
    }
}

#[test]
fn uneven_growth_is_low_confidence_and_flat_or_slow_growth_is_not_filling() {
    // A checkpoint lands in bursts: growth, but a poor straight line.
    let bursty = [
        (0.0, 10),
        (4.0, 10),
        (5.0, 30),
        (9.0, 30),
        (10.0, 50),
        (14.0, 50),
    ];
    let o = outlook(&case_with(&bursty));
    assert_eq!(o.filling().map(|f| f.2), Some(FillConfidence::Low), "{o:?}");
    assert!(o.describe().contains("low confidence"), "{}", o.describe());

    let flat: Vec<(f64, u64)> = (0..=10).map(|k| (f64::from(k) * 2.0, 40)).collect();
    let o = outlook(&case_with(&flat));
    assert!(matches!(o, FillOutlook::NotFilling { .. }), "{o:?}");

    // One block in twenty minutes with 600000 free: years away, nothing to act on.
    let slow: Vec<(f64, u64)> = (0..=10)
        .map(|k| (f64::from(k) * 2.0, 400_000 + u64::from(k == 10)))
        .collect();
    let o = outlook(&sized_case(&slow, 1_000_000));
    assert!(matches!(o, FillOutlook::NotFilling { .. }), "{o:?}");
}
