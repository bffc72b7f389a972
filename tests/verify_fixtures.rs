//! Files made by the field's own writers (tests/fixtures/results/make.py records how) must be
//! proven by the built-in checks alone, and each damaged copy must fail with a reason.

use proptest::prelude::*;
use rigwatch::pull::verify::{Verdict, verify_file};
use std::path::{Path, PathBuf};

fn fixtures(which: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/results")
        .join(which)
}

fn files(which: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixtures(which))
        .expect("fixture folder")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n != "DAMAGE.txt"))
        .collect();
    out.sort();
    out
}

#[test]
fn every_file_a_real_writer_made_is_proven() {
    let mut unproven = Vec::new();
    for path in files("good") {
        match verify_file(&path).expect("readable fixture") {
            Verdict::Loads { format, detail } => {
                assert!(
                    !detail.is_empty(),
                    "{}: {format:?} says nothing",
                    path.display()
                )
            }
            other => unproven.push(format!("{}: {other:?}", path.display())),
        }
    }
    assert!(unproven.is_empty(), "not proven:\n{}", unproven.join("\n"));
}

#[test]
fn every_damaged_copy_fails_with_a_reason() {
    let listed = std::fs::read_to_string(fixtures("damaged").join("DAMAGE.txt")).expect("list");
    let damaged = files("damaged");
    assert_eq!(
        damaged.len(),
        listed.lines().count(),
        "DAMAGE.txt lists every copy"
    );
    let mut passed = Vec::new();
    for path in damaged {
        match verify_file(&path).expect("readable fixture") {
            Verdict::Fails { reason, .. } => {
                assert!(!reason.is_empty(), "{}", path.display())
            }
            other => passed.push(format!("{}: {other:?}", path.display())),
        }
    }
    assert!(
        passed.is_empty(),
        "damage not found:\n{}",
        passed.join("\n")
    );
}

/// Formats whose end is marked (a trailer, a recorded size, a footer): a copy cut anywhere must
/// fail. Text, CSV, JSONL and TFRecord are left out on purpose: a cut exactly at a line or
/// record boundary leaves a shorter valid file, as their checks say. GGUF too: a cut inside the
/// padding after the last tensor loses nothing llama.cpp reads.
#[test]
fn a_real_file_cut_anywhere_fails() {
    let marked = [
        "model.safetensors",
        "embeddings.npy",
        "arrays.npz",
        "model.h5",
        "optimizer.h5",
        "preds.parquet",
        "loss.png",
        "loss.pdf",
        "sample.jpg",
        "logs.zip",
        "code.tar.gz",
        "train.log.gz",
        "metrics.json",
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for name in marked {
        let bytes = std::fs::read(fixtures("good").join(name)).expect("fixture");
        let path = dir.path().join(name);
        // Every cut near either end (where trailers and headers live), a stride between; a cut
        // that drops only trailing whitespace (PDF's and JSON's last newline) loses nothing.
        let cuts = (0..bytes.len())
            .filter(|&c| c < 64 || bytes.len() - c <= 64 || c % 7 == 0)
            .filter(|&c| !bytes[c..].iter().all(u8::is_ascii_whitespace));
        for cut in cuts {
            std::fs::write(&path, &bytes[..cut]).expect("write prefix");
            let v = verify_file(&path).expect("readable");
            assert!(
                matches!(v, Verdict::Fails { .. }),
                "{name} cut to {cut} of {} bytes: {v:?}",
                bytes.len()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The checkers' fuzz target, seeded with every real fixture: cut, flip and splice noise
    /// into real files and the answer is always a verdict, never a panic or an I/O error.
    #[test]
    fn mutated_real_files_never_panic(
        which in 0usize..64,
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..8),
        noise in prop::collection::vec(any::<u8>(), 0..64),
        at in any::<prop::sample::Index>(),
    ) {
        let good = files("good");
        let path = &good[which % good.len()];
        let mut bytes = std::fs::read(path).expect("fixture");
        for (i, mask) in flips {
            let i = i.index(bytes.len());
            bytes[i] ^= mask;
        }
        let at = at.index(bytes.len());
        bytes.splice(at..at, noise);
        bytes.truncate(cut.index(bytes.len() + 1));
        let dir = tempfile::tempdir().expect("tempdir");
        let copy = dir.path().join(path.file_name().expect("name"));
        std::fs::write(&copy, &bytes).expect("write");
        prop_assert!(verify_file(&copy).is_ok());
    }
}
