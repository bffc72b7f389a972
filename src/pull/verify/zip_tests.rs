use super::testing::build;
use super::*;

fn open(bytes: &[u8]) -> Result<(File, Archive), Problem> {
    let mut file = tempfile::tempfile().expect("tempfile");
    std::io::Write::write_all(&mut file, bytes).expect("write");
    let archive = Archive::open(&mut file, bytes.len() as u64)?;
    Ok((file, archive))
}

fn contents(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, Problem> {
    let (mut file, archive) = open(bytes)?;
    let mut out = Vec::new();
    for entry in &archive.entries {
        let mut data = Vec::new();
        archive.read(&mut file, entry, |r| Ok(r.read_to_end(&mut data)?))?;
        out.push((entry.name.clone(), data));
    }
    Ok(out)
}

fn reason(r: Result<Vec<(String, Vec<u8>)>, Problem>) -> String {
    match r {
        Err(Problem::Corrupt(reason)) => reason,
        other => panic!("expected Corrupt, got {:?}", other.map(|v| v.len())),
    }
}

#[test]
fn reads_stored_and_deflated_plain_and_zip64() {
    let long = vec![7u8; 5000];
    for zip64 in [false, true] {
        let zip = build(&[("a", b"hello", false), ("b/c", &long, true)], zip64);
        let got = contents(&zip).expect("valid archive");
        assert_eq!(
            got,
            vec![
                ("a".into(), b"hello".to_vec()),
                ("b/c".into(), long.clone())
            ]
        );
    }
}

#[test]
fn empty_archive_is_valid() {
    assert_eq!(contents(&build(&[], false)).expect("valid").len(), 0);
}

#[test]
fn flipped_stored_byte_is_a_crc_mismatch() {
    let mut zip = build(&[("a", b"hello", false)], false);
    zip[30 + 1 + 2] ^= 0x20; // inside "hello"
    assert!(reason(contents(&zip)).starts_with("entry 'a': CRC-32 mismatch"));
}

#[test]
fn flipped_deflate_byte_fails_at_that_entry() {
    let data: Vec<u8> = (0..4000u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut zip = build(&[("x.npy", &data, true)], false);
    zip[30 + 5 + 40] ^= 0x01;
    assert!(reason(contents(&zip)).starts_with("entry 'x.npy': "));
}

#[test]
fn truncation_loses_the_end_record() {
    let zip = build(&[("a", b"hello", false)], true);
    for cut in [1, 10, 30] {
        let r = reason(contents(&zip[..zip.len() - cut]));
        assert!(r.starts_with("no end-of-central-directory record"), "{r}");
    }
}

#[test]
fn wrong_local_name_and_entry_count_are_caught() {
    let mut zip = build(&[("a", b"hello", false)], false);
    zip[30] = b'z';
    assert_eq!(
        reason(contents(&zip)),
        "entry 'a': local header at byte 0 names 'z'"
    );

    let mut zip = build(&[("a", b"hello", false), ("b", b"!", false)], false);
    let n = zip.len();
    zip[n - 12] = 1; // total entries 2 -> 1
    assert_eq!(
        reason(contents(&zip)),
        "central directory holds more than the 1 entries the end record lists"
    );
}

#[test]
fn size_mismatch_is_caught_without_trusting_it() {
    let mut zip = build(&[("a", b"hello", true)], false);
    let dir_at = zip.len() - 22 - 47;
    zip[dir_at + 24] = 3; // uncompressed size 5 -> 3
    assert_eq!(
        reason(contents(&zip)),
        "entry 'a': holds more than 3 bytes, directory says 3"
    );
}
