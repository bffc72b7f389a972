use super::super::Verdict;
use super::super::tests::{detail, reason, verdict, write};
use super::super::zip::testing::build;

/// The header padded so the data starts at a multiple of 64, as numpy does.
fn npy_v(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
    let width = if version == 1 { 2 } else { 4 };
    let mut h = header.to_string();
    h.push_str(&" ".repeat((64 - (8 + width + h.len() + 1) % 64) % 64));
    h.push('\n');
    let len = (h.len() as u32).to_le_bytes();
    [
        &b"\x93NUMPY"[..],
        &[version, 0],
        &len[..width],
        h.as_bytes(),
        data,
    ]
    .concat()
}

fn npy(header: &str, data: &[u8]) -> Vec<u8> {
    npy_v(1, header, data)
}

const F32: &str = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
const I64: &str = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";

#[test]
fn f32_2x3_loads() {
    let v = verdict("a.npy", &npy(F32, &[0; 24]));
    assert_eq!(detail(&v), "npy: <f4 (2, 3), 24 B of data");
}

#[test]
fn size_must_match_shape_exactly() {
    let expect = |n| {
        format!("{n} data bytes after the header (byte 128) but shape (2, 3) of '<f4' needs 24")
    };
    assert_eq!(reason(&verdict("a.npy", &npy(F32, &[0; 23]))), expect(23));
    assert_eq!(reason(&verdict("a.npy", &npy(F32, &[0; 25]))), expect(25));
    let wrong_shape = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 3), }";
    assert!(reason(&verdict("a.npy", &npy(wrong_shape, &[0; 24]))).ends_with("needs 36"));
}

#[test]
fn dtypes_and_versions() {
    let cases: &[(u8, &str, usize, &str)] = &[
        (
            2,
            "{'descr': '<f8', 'fortran_order': True, 'shape': ()}",
            8,
            "npy: <f8 (), 8 B of data",
        ),
        (
            3,
            "{'descr': '<U3', 'fortran_order': False, 'shape': (2,)}",
            24,
            "npy: <U3 (2,), 24 B of data",
        ),
        (
            1,
            "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 5)}",
            0,
            "npy: |b1 (0, 5), 0 B of data",
        ),
        (
            1,
            "{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (3L,)}",
            24,
            "npy: <M8[ns] (3,), 24 B of data",
        ),
        (
            1,
            "{'descr': [('x', '<f4'), (('t', 'y'), '<i8', (2,))], 'fortran_order': False, 'shape': (2,)}",
            40,
            "npy: structured (2,), 40 B of data",
        ),
    ];
    for &(version, header, n, want) in cases {
        assert_eq!(
            detail(&verdict("a.npy", &npy_v(version, header, &vec![1; n]))),
            want
        );
    }
}

#[test]
fn object_arrays_are_unchecked() {
    let header = "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }";
    assert_eq!(
        verdict("a.npy", &npy(header, b"\x80\x04pickle")),
        Verdict::Unchecked
    );
    let fields = "{'descr': [('a', '<f4'), ('b', '|O')], 'fortran_order': False, 'shape': (2,)}";
    assert_eq!(verdict("a.npy", &npy(fields, b"")), Verdict::Unchecked);
}

#[test]
fn header_damage_fails() {
    assert_eq!(
        reason(&verdict("a.npy", b"\x93NUMP")),
        "file ends inside the npy magic (bytes 0..8)"
    );
    assert_eq!(
        reason(&verdict("a.npy", b"PK\x03\x04\x00\x00\x00\x00")),
        "no \\x93NUMPY magic at byte 0 (it holds a zip)"
    );
    assert_eq!(
        reason(&verdict("a.npy", &npy_v(4, F32, &[0; 24]))),
        "unsupported npy version 4.0 (byte 6)"
    );
    let cases = [
        (
            "{'descr': '<f4', 'shape': (2, 3)}",
            "keys must be exactly 'descr', 'fortran_order', 'shape'",
        ),
        (
            "{'descr': '<q4', 'fortran_order': False, 'shape': (2,)}",
            "unknown dtype '<q4'",
        ),
        (
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
            "'fortran_order' is not True or False",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
            "unexpected '-' at char 51",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': 6}",
            "'shape' is not a tuple of non-negative integers",
        ),
        (
            "{'descr': '<f4' 'fortran_order': False}",
            "expected ',' or '}' at char 16",
        ),
        (
            "[((((((((((((((((((((((((((((((((((((((((",
            "nested too deeply",
        ),
    ];
    for (header, want) in cases {
        let bytes = npy(header, &[]);
        let got = verdict("a.npy", &bytes);
        let end = bytes.len();
        assert_eq!(
            reason(&got),
            format!("header (bytes 10..{end}): {want}"),
            "{header}"
        );
    }
}

#[test]
fn huge_array_is_checked_from_its_header_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let header = "{'descr': '|u1', 'fortran_order': False, 'shape': (1073741824,), }";
    let bytes = npy(header, &[]);
    let path = write(&dir, "big.npy", &bytes);
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    f.set_len(bytes.len() as u64 + (1 << 30))
        .expect("sparse grow");
    let v = super::super::verify_file(&path).expect("readable");
    assert_eq!(detail(&v), "npy: |u1 (1073741824,), 1.0 GiB of data");
}

pub(in super::super) fn sample_npy() -> Vec<u8> {
    npy(F32, &[5; 24])
}

pub(in super::super) fn sample_npz() -> Vec<u8> {
    npz(&npy(I64, &[9; 16]))
}

fn npz(b: &[u8]) -> Vec<u8> {
    build(
        &[("a.npy", &npy(F32, &[7; 24]), false), ("b.npy", b, true)],
        false,
    )
}

#[test]
fn npz_of_stored_and_deflated_arrays_loads() {
    let v = verdict("x.npz", &npz(&npy(I64, &[9; 16])));
    assert_eq!(detail(&v), "npz: 2 arrays, 40 B of data");
}

#[test]
fn npz_damage_fails_at_the_member() {
    let good = sample_npz();
    // Every byte of the stored member a.npy: header and data.
    for i in 30 + 5..30 + 5 + 128 + 24 {
        let mut flipped = good.clone();
        flipped[i] ^= 1;
        let r = verdict("x.npz", &flipped);
        assert!(
            reason(&r).starts_with("entry 'a.npy': CRC-32 mismatch"),
            "byte {i}"
        );
    }

    let cut = verdict("x.npz", &good[..good.len() - 1]);
    assert!(reason(&cut).starts_with("no end-of-central-directory record"));

    let short = verdict("x.npz", &npz(&npy(I64, &[9; 15])));
    assert_eq!(
        reason(&short),
        "entry 'b.npy': 15 data bytes after the header (byte 128) but shape (2,) of '<i8' needs 16"
    );
}

#[test]
fn npz_object_member_is_unchecked_unless_another_fails() {
    let object = npy(
        "{'descr': '|O', 'fortran_order': False, 'shape': (1,)}",
        b"pickle",
    );
    let zip = build(
        &[
            ("o.npy", &object, false),
            ("b.npy", &npy(I64, &[0; 16]), false),
        ],
        false,
    );
    assert_eq!(verdict("x.npz", &zip), Verdict::Unchecked);
    let zip = build(
        &[
            ("o.npy", &object, false),
            ("b.npy", &npy(I64, &[0; 8]), false),
        ],
        false,
    );
    assert!(reason(&verdict("x.npz", &zip)).starts_with("entry 'b.npy': 8 data bytes"));
}
