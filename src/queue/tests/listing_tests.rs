use super::super::{
    DoneCheck, DoneRule, FinalFile, check_cell, glob_match, is_cell_done, parse_final_listing,
};

const LISTING: &str = "\
104857600\t1714650000.1234567890\tbaseline/best.pth
2048\t1714650001\tbaseline/metrics.json
51200\t1714650002\tbaseline/baseline.log
0\t1714651000\tno_aug/best.pth
812\t1714651001\tno_aug/metrics.json
99\t1714652000\tseg_only_ckpt/model.safetensors
7340032\t1714653000\tlightning/epoch=19-step=20000.ckpt
311\t1714653001\tlightning/metrics_final.csv
find: '/root/final_ckpts/tmp': Permission denied
12\tnot-a-time\tx/y.json
12\t1714650000\ttoo/deep/file.pth
12\t1714650000\tflat_file.pth

";

#[test]
fn parses_rows_and_counts_garbage() {
    let l = parse_final_listing(LISTING);
    assert_eq!(
        l.garbage_lines, 4,
        "permission line, bad mtime, three levels, one level"
    );
    assert_eq!(
        l.cells.keys().map(String::as_str).collect::<Vec<_>>(),
        vec!["baseline", "lightning", "no_aug", "seg_only_ckpt"]
    );
    assert_eq!(
        l.files("baseline")[0],
        FinalFile {
            file: "best.pth".into(),
            size_bytes: 104_857_600,
            mtime_epoch_secs: 1_714_650_000
        }
    );
    assert_eq!(l.files("baseline").len(), 3);
    assert!(l.files("never_listed").is_empty());
}

#[test]
fn file_names_with_tabs_and_dot_slash_prefix_survive() {
    let l = parse_final_listing("5\t1714650000\t./cell/odd\tname.pth\n");
    assert_eq!(l.garbage_lines, 0);
    assert_eq!(l.files("cell")[0].file, "odd\tname.pth");
}

#[test]
fn done_needs_nonempty_checkpoint_and_metrics() {
    let l = parse_final_listing(LISTING);
    let rule = DoneRule::default();
    assert!(is_cell_done(&l, "baseline", &rule));
    assert!(
        is_cell_done(&l, "lightning", &rule),
        "*.ckpt + metrics_final.csv"
    );
    assert!(!is_cell_done(&l, "no_aug", &rule), "zero-byte best.pth");
    assert!(!is_cell_done(&l, "seg_only_ckpt", &rule), "no metrics file");
    assert!(!is_cell_done(&l, "absent", &rule));
}

#[test]
fn check_cell_says_what_is_missing() {
    let l = parse_final_listing(LISTING);
    let rule = DoneRule::default();
    assert_eq!(check_cell(&l, "baseline", &rule), DoneCheck::Done);
    assert_eq!(check_cell(&l, "absent", &rule), DoneCheck::NoDirectory);
    assert_eq!(
        check_cell(&l, "no_aug", &rule),
        DoneCheck::Incomplete {
            has_checkpoint: false,
            has_metrics: true,
            zero_byte: vec!["best.pth".into()]
        }
    );
    assert_eq!(
        check_cell(&l, "seg_only_ckpt", &rule),
        DoneCheck::Incomplete {
            has_checkpoint: true,
            has_metrics: false,
            zero_byte: vec![]
        }
    );
}

#[test]
fn custom_rules_and_waived_requirements() {
    let l = parse_final_listing(LISTING);
    let strict = DoneRule {
        checkpoint: vec!["best.pth".into()],
        metrics: vec!["metrics.json".into()],
    };
    assert!(is_cell_done(&l, "baseline", &strict));
    assert!(!is_cell_done(&l, "lightning", &strict), "no best.pth");
    let ckpt_only = DoneRule {
        checkpoint: vec!["*.safetensors".into()],
        metrics: vec![],
    };
    assert!(is_cell_done(&l, "seg_only_ckpt", &ckpt_only));
    let anything = DoneRule {
        checkpoint: vec![],
        metrics: vec![],
    };
    assert!(is_cell_done(&l, "baseline", &anything));
    let only_empty = parse_final_listing("0\t1714650000\tc/best.pth\n");
    assert!(
        !is_cell_done(&only_empty, "c", &anything),
        "an all-empty directory is never done"
    );
}

#[test]
fn glob_matches_star_and_question_mark_only() {
    assert!(glob_match("*.pth", "best.pth"));
    assert!(glob_match("*.pth", ".pth"));
    assert!(!glob_match("*.pth", "best.pth.tmp"));
    assert!(glob_match("metrics*.json", "metrics.json"));
    assert!(glob_match("metrics*.json", "metrics_epoch19.json"));
    assert!(!glob_match("metrics*.json", "metrics.jsonl"));
    assert!(glob_match("ep??.ckpt", "ep07.ckpt"));
    assert!(!glob_match("ep??.ckpt", "ep7.ckpt"));
    assert!(glob_match("*", ""));
    assert!(!glob_match("", "x"));
    assert!(glob_match("a*b*c", "aXXbYYc"));
    assert!(!glob_match("Best.pth", "best.pth"), "case-sensitive");
    assert!(glob_match("[x].pth", "[x].pth"), "brackets are literal");
}
