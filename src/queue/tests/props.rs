//! Whatever a box prints, nothing here panics, and the outputs keep their invariants.

use proptest::prelude::*;
use regex::Regex;

use super::super::{
    FinalListing, HostQueue, Presence, RosterOptions, Sample, cell_eta, glob_match,
    parse_final_listing, parse_progress_with, parse_queue_lenient, queue_eta, reconcile,
    running_cell,
};
use super::{fixtures, t};

/// Text biased towards what the parsers look for, so matches are actually exercised.
fn logish() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "Epoch ",
        "epoch=",
        "'epoch': ",
        "step ",
        "Step: ",
        "/",
        "%|",
        "|",
        "█",
        "▌",
        "━",
        "╺",
        " [01:23<01:40, 5.4it/s]",
        "\r",
        "\n",
        "\u{1b}[",
        "\u{1b}]",
        "\u{1b}",
        "\u{7}",
        "A",
        "2K",
        "0",
        "1",
        "3",
        "45",
        "50",
        "1000",
        "1.53",
        "k",
        "M",
        ":",
        "=",
        "[",
        "]",
        " ",
        "Validation",
        "Num Epochs = ",
        "99999999999999999999999",
        "\u{8}",
        "\t",
        "é",
        "\u{0}",
    ]);
    prop::collection::vec(atoms, 0..80).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn progress_never_panics_and_fraction_is_a_fraction(
        tail in prop_oneof![any::<String>(), logish()],
        hint in prop::option::of(any::<u32>()),
    ) {
        let user = Regex::new(r"(?P<cur>[\d.]+) of (?P<total>[\d.]+)").expect("test regex");
        if let Some(p) = parse_progress_with(&tail, &[user], hint) {
            prop_assert!(p.epoch.is_some() || p.step.is_some() || p.fraction.is_some());
            if let Some(f) = p.fraction {
                prop_assert!((0.0..=1.0).contains(&f), "fraction {f}");
            }
            if let Some((_, total)) = p.epoch {
                prop_assert!(total > 0);
            }
        }
    }

    #[test]
    fn fixtures_survive_arbitrary_cuts(cut in 0usize..2000, which in 0usize..9) {
        let all = [
            fixtures::HF_TRAINER, fixtures::LIGHTNING_TQDM, fixtures::LIGHTNING_RICH,
            fixtures::KERAS, fixtures::TUTORIAL_LOOP, fixtures::EPOCH_LINE_THEN_BAR,
            fixtures::STEP_LINES, fixtures::EPOCH_EQUALS, fixtures::CRASH,
        ];
        let text = all[which];
        let cut = text.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(text.len());
        let _ = parse_progress_with(&text[cut..], &[], Some(50));
        let _ = parse_progress_with(&text[..cut], &[], None);
    }

    #[test]
    fn queue_parse_never_panics_and_indexes_are_dense(text in prop_oneof![any::<String>(), "[a-z/. #0-9\t\r\n]{0,200}"]) {
        let q = parse_queue_lenient(&text, "q.txt");
        for (i, c) in q.cells.iter().enumerate() {
            prop_assert_eq!(c.index, i);
            prop_assert!(c.line >= 1);
            if i > 0 {
                prop_assert!(c.line > q.cells[i - 1].line);
            }
        }
        let _ = running_cell(&q, Some(&text), Some(&text));
    }

    #[test]
    fn listing_parse_never_panics(text in prop_oneof![any::<String>(), "[0-9a-z./\t\n -]{0,200}"]) {
        let l = parse_final_listing(&text);
        prop_assert!(l.garbage_lines <= text.lines().count());
    }

    #[test]
    fn glob_never_panics(p in "[a-c*?]{0,12}", n in "[a-c]{0,12}") {
        let _ = glob_match(&p, &n);
        prop_assert!(glob_match("*", &n));
    }

    #[test]
    fn eta_never_panics(
        pts in prop::collection::vec((-1_000_000i64..1_000_000, any::<f64>()), 0..12),
        now in -1_000_000i64..2_000_000,
    ) {
        let samples: Vec<Sample> = pts.iter().map(|(s, f)| Sample { at: t(*s), fraction: *f }).collect();
        if let Some(e) = cell_eta(&samples, t(now)) {
            prop_assert!(e.remaining_secs.is_finite() && e.remaining_secs >= 0.0);
        }
        let q = parse_queue_lenient("a.yaml t 20\nb.yaml t\nc.yaml t 4000000000\n", "q");
        let _ = queue_eta(&q, 0, &[1, 2], &samples, t(now));
    }

    #[test]
    fn roster_counts_add_up(
        text in "([a-d]\\.yaml t( [0-9])?\n|# c\n|\n){0,12}",
        done in prop::collection::vec("[a-d]", 0..4),
        running in prop::option::of(0usize..14),
        alive in any::<bool>(),
        gone in any::<bool>(),
        start in prop::option::of(0usize..14),
    ) {
        let q = parse_queue_lenient(&text, "q.txt");
        let listing_text: String = done
            .iter()
            .map(|n| format!("5\t1\t{n}/best.pth\n5\t1\t{n}/metrics.json\n"))
            .collect();
        let l = parse_final_listing(&listing_text);
        let empty = FinalListing::default();
        let h = HostQueue {
            host: "h",
            presence: if gone { Presence::Gone } else { Presence::Up },
            queue: &q,
            listing: &l,
            running,
            run_alive: alive,
            start_index: start,
            verified: None,
        };
        let other = HostQueue { host: "h2", listing: &empty, ..h.clone() };
        let alone = reconcile(std::slice::from_ref(&h), &RosterOptions::default());
        let pair = reconcile(&[h, other], &RosterOptions::default());
        for r in [&alone, &pair] {
            for s in &r.hosts {
                prop_assert_eq!(
                    s.done + s.running + s.pending + s.failed + s.missing + s.colliding,
                    s.total
                );
                prop_assert!(s.running <= 1);
                prop_assert!(!gone || s.running + s.pending + s.failed == 0);
            }
            let ranks: Vec<u8> = r.cells.iter().map(|c| c.state.rank()).collect();
            prop_assert!(ranks.windows(2).all(|w| w[0] <= w[1]));
        }
        prop_assert_eq!(alone.cells.len(), q.cells.len());
        prop_assert_eq!(pair.cells.len(), 2 * q.cells.len());
        // The same queue on two boxes: every named cell collides.
        prop_assert!(pair.cells.iter().all(|c| c.name.is_empty() || c.state.rank() == 2));
        if let Some(res) = &alone.hosts[0].resume {
            prop_assert_eq!(q.cells[res.cell_index].start_index(), res.start_index);
            prop_assert!(alone.hosts[0].done < q.cells.len());
        }
    }
}
