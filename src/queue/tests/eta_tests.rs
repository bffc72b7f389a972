use super::super::{Sample, cell_eta, cell_rate, cell_weights, parse_queue, queue_eta};
use super::t;

fn s(secs: i64, fraction: f64) -> Sample {
    Sample {
        at: t(secs),
        fraction,
    }
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn not_enough_data_gives_none() {
    assert_eq!(cell_rate(&[]), None);
    assert_eq!(cell_rate(&[s(0, 0.1)]), None, "one sample");
    assert_eq!(cell_rate(&[s(0, 0.1), s(600, 0.1)]), None, "no movement");
    assert_eq!(
        cell_rate(&[s(600, 0.1), s(600, 0.2)]),
        None,
        "no time between"
    );
    assert_eq!(cell_rate(&[s(0, 0.5), s(600, 0.1)]), None, "only a drop");
    assert_eq!(
        cell_rate(&[s(0, f64::NAN), s(600, 0.2)]),
        None,
        "NaN is not a sample"
    );
    assert_eq!(cell_eta(&[s(0, 0.1)], t(10)), None);
}

#[test]
fn rate_and_cell_eta_from_two_samples() {
    let samples = [s(0, 0.1), s(600, 0.2)];
    let r = cell_rate(&samples).expect("two moving samples");
    assert!(near(r.fraction_per_sec, 0.1 / 600.0));
    assert!(near(r.secs_per_cell, 6000.0));
    assert_eq!(r.samples_used, 2);
    let e = cell_eta(&samples, t(600)).expect("eta at the last sample");
    assert!(near(e.remaining_secs, 4800.0));
    assert_eq!(e.eta_secs(), 4800);
    assert_eq!(e.done_at, t(5400));
}

#[test]
fn cell_eta_extrapolates_to_now_and_never_goes_negative() {
    let samples = [s(0, 0.1), s(600, 0.2)];
    let e = cell_eta(&samples, t(1200)).expect("eta later");
    assert!(near(e.remaining_secs, 4200.0), "{}", e.remaining_secs);
    let e = cell_eta(&samples, t(100_000)).expect("eta long after");
    assert_eq!(e.remaining_secs, 0.0);
    // A clock before the last sample does not extrapolate backwards.
    let e = cell_eta(&samples, t(0)).expect("eta before");
    assert!(near(e.remaining_secs, 4800.0));
}

#[test]
fn only_the_trailing_monotone_run_counts() {
    // The previous cell ended at 0.98; the new one restarted at 0.0 and moved 0.05 in 300 s.
    let samples = [s(0, 0.90), s(300, 0.98), s(400, 0.0), s(700, 0.05)];
    let r = cell_rate(&samples).expect("trailing run moves");
    assert_eq!(r.samples_used, 2);
    assert!(near(r.secs_per_cell, 6000.0));
    // Out-of-order input is sorted first.
    let shuffled = [s(700, 0.05), s(0, 0.90), s(400, 0.0), s(300, 0.98)];
    assert_eq!(cell_rate(&shuffled), Some(r));
}

#[test]
fn weights_use_epochs_then_mean_then_one() {
    let q = parse_queue("a.yaml t 20\nb.yaml t 50\nc.yaml t\nd.yaml t 20\n", "q").expect("queue");
    assert_eq!(cell_weights(&q), vec![20.0, 50.0, 30.0, 20.0]);
    let none = parse_queue("a.yaml t\nb.yaml t\n", "q").expect("queue");
    assert_eq!(cell_weights(&none), vec![1.0, 1.0]);
}

#[test]
fn queue_eta_weights_remaining_cells_by_epochs() {
    let q = parse_queue("a.yaml t 20\nb.yaml t 50\nc.yaml t\nd.yaml t 20\n", "q").expect("queue");
    let samples = [s(0, 0.1), s(600, 0.2)];
    // 6000 s per 20-epoch cell = 300 s/epoch; rest = (50 + 30 + 20) epochs = 30000 s.
    let e = queue_eta(&q, 0, &[1, 2, 3, 0, 3, 99], &samples, t(600)).expect("queue eta");
    assert!(near(e.secs_per_epoch, 300.0));
    assert!(near(e.cell.remaining_secs, 4800.0));
    assert!(near(e.remaining_secs, 34800.0), "{}", e.remaining_secs);
    assert_eq!(e.eta_secs(), 34800);
    assert_eq!(e.done_at, t(600 + 34800));
    // Last cell: nothing after it.
    let last = queue_eta(&q, 3, &[], &samples, t(600)).expect("queue eta");
    assert!(near(last.remaining_secs, 4800.0));
    assert_eq!(
        queue_eta(&q, 9, &[], &samples, t(600)),
        None,
        "unknown current cell"
    );
    assert_eq!(
        queue_eta(&q, 0, &[1], &samples[..1], t(600)),
        None,
        "one sample"
    );
}

#[test]
fn queue_eta_without_epochs_counts_cells() {
    let q = parse_queue("a.yaml t\nb.yaml t\nc.yaml t\n", "q").expect("queue");
    let e = queue_eta(&q, 0, &[1, 2], &[s(0, 0.5), s(1800, 1.0)], t(1800)).expect("eta");
    assert!(near(e.secs_per_epoch, 3600.0));
    assert!(near(e.remaining_secs, 7200.0));
}
