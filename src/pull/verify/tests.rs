//! The verify module's own tests, and helpers the format submodules' tests share.
use super::*;
use proptest::prelude::*;
use std::path::PathBuf;

pub(super) fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write test file");
    path
}

pub(super) fn verdict(name: &str, bytes: &[u8]) -> Verdict {
    let dir = tempfile::tempdir().expect("tempdir");
    verify_file(&write(&dir, name, bytes)).expect("readable test file")
}

/// The reason of a `Fails`, so tests can assert where the damage was found.
pub(super) fn reason(v: &Verdict) -> &str {
    match v {
        Verdict::Fails { reason, .. } => reason,
        other => panic!("expected Fails, got {other:?}"),
    }
}

pub(super) fn detail(v: &Verdict) -> &str {
    match v {
        Verdict::Loads { detail, .. } => detail,
        other => panic!("expected Loads, got {other:?}"),
    }
}

#[test]
fn detect_by_extension() {
    let cases = [
        ("model.safetensors", Some(Format::Safetensors)),
        ("ckpt.PT", Some(Format::Torch)),
        ("x.pth", Some(Format::Torch)),
        ("last.ckpt", Some(Format::Torch)),
        ("a.npy", Some(Format::Npy)),
        ("a.npz", Some(Format::Npz)),
        ("cfg.json", Some(Format::Json)),
        ("evals.jsonl", Some(Format::Jsonl)),
        ("evals.ndjson", Some(Format::Jsonl)),
        ("out.tar", Some(Format::Tar)),
        ("out.tar.gz", Some(Format::Tar)),
        ("out.tgz", Some(Format::Tar)),
        ("log.gz", Some(Format::Gzip)),
        (
            "events.out.tfevents.1700000000.box1",
            Some(Format::TfRecord),
        ),
        ("loss.PNG", Some(Format::Png)),
        ("model.h5", Some(Format::Hdf5)),
        ("train.log", Some(Format::Text)),
        ("pytorch_model.bin", None),
        (".json", None),
        ("README", None),
    ];
    for (name, want) in cases {
        assert_eq!(Format::detect(Path::new(name)), want, "{name}");
    }
}

/// The first bytes decide: Hugging Face's `pytorch_model.bin` is a torch.save zip and is
/// checked as one; a name that says something else is said next to the verdict.
#[test]
fn content_decides_whatever_the_name() {
    let torch = super::torch::tests::good();
    let v = verdict("pytorch_model.bin", &torch);
    assert!(detail(&v).starts_with("torch zip: 1 pickle"), "{v:?}");
    let v = verdict("weights.npy", &super::safetensors::tests::sample());
    assert!(
        detail(&v).ends_with("(named like npy, but it holds safetensors)"),
        "{v:?}"
    );
    let v = verdict("metrics.json", &torch);
    assert!(reason(&v).ends_with("(it holds a zip)"), "{v:?}");
    let v = verdict("pytorch_model.bin", &torch[..torch.len() - 1]);
    assert!(
        reason(&v).starts_with("no end-of-central-directory record"),
        "{v:?}"
    );
    let v = verdict("adapter_model.bin", &super::safetensors::tests::sample());
    assert!(
        matches!(
            v,
            Verdict::Loads {
                format: Format::Safetensors,
                ..
            }
        ),
        "{v:?}"
    );
    let v = verdict("embeddings.dat", &super::npy::tests::sample_npy());
    assert!(
        matches!(
            v,
            Verdict::Loads {
                format: Format::Npy,
                ..
            }
        ),
        "{v:?}"
    );
    let v = verdict("results.zip", &torch);
    assert!(
        detail(&v).starts_with("zip: 5 entries"),
        "a plain zip: {v:?}"
    );
}

#[test]
fn unknown_extension_is_unchecked_not_loads() {
    assert_eq!(verdict("weights.bin", b"anything"), Verdict::Unchecked);
    assert_eq!(verdict("notes.xyz", b""), Verdict::Unchecked);
}

#[test]
fn unreadable_is_an_error_not_a_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = verify_file(&dir.path().join("gone.safetensors"));
    assert_eq!(
        missing.map_err(|e| e.kind()).err(),
        Some(io::ErrorKind::NotFound)
    );
    let as_dir = dir.path().join("dir.json");
    std::fs::create_dir(&as_dir).expect("mkdir");
    assert!(verify_file(&as_dir).is_err());
}

#[test]
fn human_bytes_units() {
    assert_eq!(human_bytes(0), "0 B");
    assert_eq!(human_bytes(1023), "1023 B");
    assert_eq!(human_bytes(1536), "1.5 KiB");
    assert_eq!(human_bytes(1288490189), "1.2 GiB");
    assert_eq!(human_bytes(u64::MAX), "16384.0 PiB");
}

/// Every way a copy can be cut short must be caught, for every format whose end is marked.
/// (JSONL is the exception: a cut at a line break leaves a valid, shorter file.)
#[test]
fn no_strict_prefix_of_a_valid_file_loads() {
    let samples = [
        ("m.safetensors", safetensors::tests::sample()),
        ("m.pt", torch::tests::good()),
        ("a.npy", npy::tests::sample_npy()),
        ("a.npz", npy::tests::sample_npz()),
        ("x.tar", tar::tests::archive()),
        ("x.tar.gz", tar::tests::gzip(&tar::tests::archive())),
        (
            "c.json",
            br#"{"a": [1, 2.5, {"b": null}], "c": "d"}"#.to_vec(),
        ),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, bytes) in &samples {
        let path = write(&dir, name, bytes);
        assert!(
            matches!(verify_file(&path), Ok(Verdict::Loads { .. })),
            "{name}"
        );
        // The tar is 4 KiB of 512-byte blocks: every cut near a block edge, and a stride
        // between, keeps this test fast on slow disks without skipping any kind of cut.
        let cuts =
            (0..bytes.len()).filter(|c| bytes.len() < 1024 || (c + 2) % 512 < 4 || c % 61 == 0);
        for cut in cuts {
            std::fs::write(&path, &bytes[..cut]).expect("write prefix");
            let v = verify_file(&path).expect("readable");
            assert!(
                matches!(v, Verdict::Fails { .. }),
                "{name} cut at {cut}: {v:?}"
            );
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_or_error(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        ext in prop::sample::select(vec![
            "safetensors", "pt", "npy", "npz", "json", "jsonl", "tar", "tar.gz",
        ]),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(&dir, &format!("f.{ext}"), &bytes);
        prop_assert!(verify_file(&path).is_ok());
    }

    /// The same, but past the magic numbers so the deeper parsers see the noise.
    #[test]
    fn noise_after_magic_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        which in 0usize..5,
    ) {
        let (ext, magic): (&str, &[u8]) = [
            ("pt", &b"PK\x03\x04"[..]),
            ("npy", b"\x93NUMPY\x01\x00"),
            ("npz", b"PK\x03\x04"),
            ("tar.gz", b"\x1f\x8b\x08\x00"),
            ("pt", b"\x80\x02"),
        ][which];
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(&dir, &format!("f.{ext}"), &[magic, &bytes].concat());
        prop_assert!(verify_file(&path).is_ok());
    }
}

/// A copy just written is checked on the bytes it was written from where its format's check
/// reads a file through (JSON here: the file on disk is not read again), and read back through
/// the file for the rest (a PNG here: what is on disk decides).
#[test]
fn a_written_copy_is_checked_on_its_bytes_where_the_check_reads_it_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let on_disk = write(&dir, "unnamed", b"{\"cut\": ");
    let mut file = File::open(&on_disk).expect("open");
    let named = Path::new("/results/metrics.json");
    let verdict = verify_written_named(&mut file, b"{\"loss\": 1.5}\n", named).expect("read");
    assert!(matches!(verdict, Verdict::Loads { .. }), "{verdict:?}");
    let verdict = verify_written_named(&mut file, b"{\"cut\": ", named).expect("read");
    assert!(reason(&verdict).contains("EOF"), "{verdict:?}");
    // A PNG's check seeks about: it reads the file, whatever bytes it is handed.
    let png = Path::new("/results/plot.png");
    let verdict = verify_written_named(&mut file, b"\x89PNG\r\n\x1a\n", png).expect("read");
    assert!(matches!(verdict, Verdict::Fails { .. }), "{verdict:?}");
}
