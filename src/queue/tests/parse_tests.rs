use super::super::{QueueError, cell_name, parse_queue, parse_queue_lenient};

const QUEUE: &str = "\
# ablation sweep, box A
configs/experiments/ablation/recon/baseline.yaml reconstruction 20

configs/experiments/ablation/det/baseline_det.yaml detection 50
  # configs/experiments/ablation/det/dropped.yaml detection 50
configs/experiments/ablation/seg/no_aug.yaml segmentation
";

#[test]
fn cells_keep_file_line_numbers_and_count_only_cell_lines() {
    let q = parse_queue(QUEUE, "queue_a.txt").expect("clean queue parses");
    assert_eq!(q.file, "queue_a.txt");
    assert!(q.problems.is_empty());
    let got: Vec<(usize, usize, &str, &str, Option<u32>)> = q
        .cells
        .iter()
        .map(|c| (c.line, c.index, c.name.as_str(), c.task.as_str(), c.epochs))
        .collect();
    assert_eq!(
        got,
        vec![
            (2, 0, "baseline", "reconstruction", Some(20)),
            (4, 1, "baseline_det", "detection", Some(50)),
            (6, 2, "no_aug", "segmentation", None),
        ]
    );
    assert_eq!(
        q.cells[1].cfg_path,
        "configs/experiments/ablation/det/baseline_det.yaml"
    );
}

#[test]
fn start_index_counts_raw_lines_like_run_queue_sh() {
    let q = parse_queue(QUEUE, "queue_a.txt").expect("clean queue parses");
    // `tail -n +$((k+1))`: k = 0 runs everything, k = 2 skips the comment and the first cell.
    assert_eq!(q.first_cell_from(0), Some(0));
    assert_eq!(q.first_cell_from(1), Some(0));
    assert_eq!(q.first_cell_from(2), Some(1));
    assert_eq!(q.first_cell_from(4), Some(2));
    assert_eq!(q.first_cell_from(6), None);
    // The k that resumes at each cell is the number of raw lines before it.
    let ks: Vec<usize> = q.cells.iter().map(|c| c.start_index()).collect();
    assert_eq!(ks, vec![1, 3, 5]);
    assert!(q.cells[0].skipped_by(2));
    assert!(!q.cells[1].skipped_by(3));
}

#[test]
fn non_numeric_epochs_names_file_line_and_column() {
    let text = "configs/a.yaml recon 20\nconfigs/b.yaml recon twenty\n";
    let err = parse_queue(text, "q.txt").expect_err("bad epochs is an error");
    assert_eq!(
        err,
        QueueError::BadEpochs {
            file: "q.txt".into(),
            line: 2,
            col: 22,
            value: "twenty".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "q.txt:2:22: epochs `twenty` is not a whole number of epochs (1 or more)"
    );
}

#[test]
fn lenient_parse_keeps_every_cell_and_lists_every_problem() {
    let text =
        "a/x.yaml det 1.5\nb/y.yaml\nc/z.yaml seg 0\nd/w.yaml det 5 # note\ne/v.yaml seg 7\n";
    let q = parse_queue_lenient(text, "q.txt");
    assert_eq!(q.cells.len(), 5);
    assert_eq!(
        q.cells.iter().map(|c| c.epochs).collect::<Vec<_>>(),
        vec![None, None, None, Some(5), Some(7)]
    );
    assert_eq!(q.cells[1].task, "");
    let lines: Vec<usize> = q.problems.iter().map(QueueError::line).collect();
    assert_eq!(lines, vec![1, 2, 3, 4]);
    assert!(
        matches!(&q.problems[0], QueueError::BadEpochs { col: 14, value, .. } if value == "1.5")
    );
    assert!(matches!(
        &q.problems[1],
        QueueError::MissingTask {
            line: 2,
            col: 9,
            ..
        }
    ));
    assert!(matches!(&q.problems[2], QueueError::BadEpochs { value, .. } if value == "0"));
    assert!(
        matches!(&q.problems[3], QueueError::ExtraField { col: 16, value, .. } if value == "#")
    );
    // Strict parse refuses with the first one.
    let first = parse_queue(text, "q.txt").expect_err("strict parse refuses");
    assert_eq!(first, q.problems[0]);
}

#[test]
fn duplicate_name_is_a_collision_naming_both_lines() {
    let text = "configs/recon/abl_lr3.yaml recon 20\n# x\nconfigs/det/abl_lr3.yml det 50\n";
    let q = parse_queue_lenient(text, "queue_b.txt");
    assert_eq!(q.cells.len(), 2, "both colliding lines stay cells");
    assert_eq!(
        q.colliding_names().into_iter().collect::<Vec<_>>(),
        vec!["abl_lr3"]
    );
    assert_eq!(
        q.problems,
        vec![QueueError::Collision {
            file: "queue_b.txt".into(),
            line: 3,
            col: 1,
            name: "abl_lr3".into(),
            first_line: 1,
        }]
    );
    let msg = parse_queue(text, "queue_b.txt")
        .expect_err("collision refused")
        .to_string();
    assert_eq!(
        msg,
        "queue_b.txt:3:1: cell name `abl_lr3` is also used on line 1: both lines would write the same output directory"
    );
}

#[test]
fn crlf_bom_tabs_and_indentation_are_tolerated() {
    let text = "\u{feff}configs/a.yaml\trecon\t20\r\n\r\n   configs/b.yaml  det 5\r\n";
    let q = parse_queue(text, "q.txt").expect("crlf queue parses");
    assert_eq!(q.cells.len(), 2);
    assert_eq!(
        (q.cells[0].line, q.cells[0].name.as_str(), q.cells[0].epochs),
        (1, "a", Some(20))
    );
    assert_eq!(
        (q.cells[1].line, q.cells[1].name.as_str(), q.cells[1].epochs),
        (3, "b", Some(5))
    );
}

#[test]
fn cfg_without_a_file_name_is_reported_not_dropped() {
    let q = parse_queue_lenient("configs/ recon\n", "q.txt");
    assert_eq!(q.cells.len(), 1);
    assert_eq!(q.cells[0].name, "");
    assert!(
        matches!(&q.problems[0], QueueError::NoName { line: 1, col: 1, value, .. } if value == "configs/")
    );
}

#[test]
fn empty_and_comment_only_files_have_no_cells() {
    for text in ["", "\n\n", "# only\n   # comments\n"] {
        let q = parse_queue(text, "q.txt").expect("nothing to refuse");
        assert!(q.is_empty(), "{text:?}");
    }
}

#[test]
fn cell_name_is_basename_without_last_extension() {
    assert_eq!(cell_name("configs/abl/lr3.yaml"), "lr3");
    assert_eq!(cell_name("lr3.yaml"), "lr3");
    assert_eq!(cell_name("a/b.c.yaml"), "b.c");
    assert_eq!(cell_name("a/noext"), "noext");
    assert_eq!(cell_name("a/.hidden"), ".hidden");
    assert_eq!(cell_name("/abs/path/x.yml"), "x");
    assert_eq!(cell_name("configs/"), "");
}
