use regex::Regex;

use super::super::{Progress, parse_progress, parse_progress_with, segments};
use super::fixtures;

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn parsed(tail: &str, hint: Option<u32>) -> Progress {
    parse_progress_with(tail, &[], hint).expect("fixture shows progress")
}

#[test]
fn hf_trainer_bar_counts_and_eval_bar_is_ignored() {
    let p = parsed(fixtures::HF_TRAINER, None);
    assert_eq!(p.step, Some((2295, 4500)));
    assert!(close(p.fraction, 2295.0 / 4500.0), "{p:?}");
    // 'epoch': 1.53 completed of `Num Epochs = 3` → in epoch 2 of 3.
    assert_eq!(p.epoch, Some((2, 3)));
}

#[test]
fn hf_dict_line_alone_needs_a_total() {
    let line = "{'loss': 0.41, 'learning_rate': 4e-05, 'epoch': 1.53}\n";
    assert_eq!(parse_progress(line, &[]), None);
    let p = parsed(line, Some(3));
    assert_eq!(p.epoch, Some((2, 3)));
    assert_eq!(p.step, None);
    assert!(close(p.fraction, 1.53 / 3.0));
}

#[test]
fn lightning_tqdm_epoch_is_zero_based_and_validation_is_ignored() {
    let p = parsed(fixtures::LIGHTNING_TQDM, Some(50));
    assert_eq!(p.epoch, Some((4, 50)));
    assert_eq!(p.step, Some((450, 1000)));
    assert!(close(p.fraction, (3.0 + 0.45) / 50.0), "{p:?}");
    // Without max_epochs the bar is only within-epoch: no cell fraction.
    let p = parsed(fixtures::LIGHTNING_TQDM, None);
    assert_eq!(
        p,
        Progress {
            epoch: None,
            step: Some((450, 1000)),
            fraction: None
        }
    );
}

#[test]
fn lightning_exact_line_from_the_issue() {
    let line =
        "Epoch 3:  45%|████▌     | 450/1000 [01:23<01:40, 5.40it/s, v_num=1, train_loss=0.3]";
    let p = parsed(line, Some(50));
    assert_eq!(p.epoch, Some((4, 50)));
    assert_eq!(p.step, Some((450, 1000)));
    assert!(close(p.fraction, 3.45 / 50.0));
}

#[test]
fn lightning_rich_bar_with_ansi_colours() {
    let p = parsed(fixtures::LIGHTNING_RICH, None);
    assert_eq!(
        p.epoch,
        Some((4, 50)),
        "Epoch 3/49 is the 4th of max_epochs=50"
    );
    assert_eq!(p.step, Some((450, 1000)));
    assert!(close(p.fraction, 3.45 / 50.0), "{p:?}");
}

#[test]
fn keras_epoch_line_and_backspaced_bar() {
    let p = parsed(fixtures::KERAS, None);
    assert_eq!(p.epoch, Some((3, 50)));
    assert_eq!(p.step, Some((450, 1000)));
    assert!(close(p.fraction, 2.45 / 50.0), "{p:?}");
}

#[test]
fn tutorial_epoch_and_step_on_one_line_is_within_epoch() {
    let p = parsed(fixtures::TUTORIAL_LOOP, None);
    assert_eq!(p.epoch, Some((4, 50)));
    assert_eq!(p.step, Some((100, 600)));
    assert!(close(p.fraction, (3.0 + 100.0 / 600.0) / 50.0), "{p:?}");
}

#[test]
fn epoch_line_then_plain_bar_is_within_epoch() {
    let p = parsed(fixtures::EPOCH_LINE_THEN_BAR, None);
    assert_eq!(p.epoch, Some((3, 50)));
    assert_eq!(p.step, Some((450, 1000)));
    assert!(close(p.fraction, 2.45 / 50.0), "{p:?}");
}

#[test]
fn epoch_n_of_t_spellings() {
    for line in [
        "Epoch 3/50",
        "epoch 3/50",
        "Epoch: 3/50",
        "Epoch [3/50]",
        "EPOCH 3 / 50 loss=0.3",
    ] {
        let p = parsed(line, Some(7));
        assert_eq!(
            p.epoch,
            Some((3, 50)),
            "{line}: the log's total beats the hint"
        );
        assert_eq!(p.step, None, "{line}");
        assert!(close(p.fraction, 2.0 / 50.0), "{line}: {p:?}");
    }
}

#[test]
fn epoch_equals_uses_the_queue_total() {
    assert_eq!(parse_progress(fixtures::EPOCH_EQUALS, &[]), None);
    let p = parsed(fixtures::EPOCH_EQUALS, Some(20));
    assert_eq!(
        p,
        Progress {
            epoch: Some((3, 20)),
            step: None,
            fraction: Some(0.1)
        }
    );
    let p = parsed("epoch=0 loss=1.2", Some(20));
    assert_eq!(
        p.epoch,
        Some((1, 20)),
        "epoch=0 is taken as the first epoch"
    );
}

#[test]
fn global_step_counters() {
    let p = parsed(fixtures::STEP_LINES, None);
    assert_eq!(
        p,
        Progress {
            epoch: None,
            step: Some((1200, 50000)),
            fraction: Some(0.024)
        }
    );
    for line in [
        "Step: 1200/50000",
        "step 1200/50000",
        "global Step [1200/50000] loss 2.1",
    ] {
        let p = parsed(line, None);
        assert_eq!(p.step, Some((1200, 50000)), "{line}");
        assert!(close(p.fraction, 0.024), "{line}");
    }
}

#[test]
fn plain_tqdm_and_last_refresh_wins() {
    let p = parsed("45%|████▌     | 450/1000 [01:23<01:40, 5.4it/s]", None);
    assert_eq!(
        p,
        Progress {
            epoch: None,
            step: Some((450, 1000)),
            fraction: Some(0.45)
        }
    );
    let tail = "\r 10%|█         | 100/1000 [00:10<01:30]\r 20%|██        | 200/1000 [00:20<01:20]\r 30%|███       | 300/1000 [00:30<01:10]\r 3";
    assert_eq!(parsed(tail, None).step, Some((300, 1000)));
}

#[test]
fn tqdm_unit_scale_and_ascii_bars() {
    let p = parsed(
        "Tokens:  12%|#2        | 1.20k/10.0k [00:03<00:21, 412tok/s]",
        None,
    );
    assert_eq!(p.step, Some((1200, 10000)));
    assert!(close(p.fraction, 0.12));
}

#[test]
fn a_new_bar_after_a_finished_one_replaces_it() {
    let tail = "Map: 100%|██████████| 50000/50000 [00:09<00:00, 5321 examples/s]\n  4%|▍         | 17/375 [00:05<01:50,  3.24it/s]";
    assert_eq!(parsed(tail, None).step, Some((17, 375)));
}

#[test]
fn user_regex_wins_over_defaults() {
    let re = Regex::new(r"it (?P<cur>\d+) of (?P<total>\d+)").expect("test regex");
    let tail = "Epoch 3/50\n 45%|████▌     | 450/1000 [01:23<01:40]\nit 7000 of 10000 done\n";
    let p = parse_progress(tail, &[re]).expect("user pattern matches");
    assert_eq!(p.step, Some((7000, 10000)));
    assert!(close(p.fraction, 0.7));
    assert_eq!(
        p.epoch,
        Some((3, 50)),
        "epoch still comes from the defaults"
    );
    // A regex without the groups is ignored, and the defaults stand.
    let bad = Regex::new(r"it (\d+) of (\d+)").expect("test regex");
    let p = parse_progress(tail, &[bad]).expect("defaults still match");
    assert_eq!(p.step, Some((450, 1000)));
}

#[test]
fn user_regex_with_decimal_counts_sets_fraction_only() {
    let re = Regex::new(r"tokens (?P<cur>[\d.]+)B/(?P<total>[\d.]+)B").expect("test regex");
    let p = parse_progress("tokens 1.5B/6.0B seen", &[re]).expect("user pattern matches");
    assert_eq!(
        p,
        Progress {
            epoch: None,
            step: None,
            fraction: Some(0.25)
        }
    );
}

#[test]
fn garbage_and_crashes_give_none() {
    for tail in [
        fixtures::CRASH,
        "",
        "\r\r\n\n",
        "\u{1b}[2K\u{1b}[1A\u{1b}]0;title\u{7}",
        "100%|\n",
        "  0%|          | 0/0 [00:00<?, ?it/s]",
        "450it [01:23, 5.40it/s]",
        "Namespace(epochs=50, max_epochs=50, steps=1000)",
        "Epoch 3/0",
    ] {
        assert_eq!(parse_progress_with(tail, &[], Some(10)), None, "{tail:?}");
    }
}

#[test]
fn segments_strip_escapes_and_split_on_cr_and_lf() {
    let s = segments("\u{1b}[1;32mgreen\u{1b}[0m\rnext\u{1b}]0;t\u{1b}\\ line\n\u{8}x\ty");
    assert_eq!(
        s,
        vec!["green".to_owned(), "next line".to_owned(), "x y".to_owned()]
    );
}
