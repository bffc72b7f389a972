//! A tar batch's stream as it crosses the link. tar gives every entry a 512-byte header and
//! pads its data to 512 bytes, so a batch of 2 048 result files of ~40 bytes is 2 MiB of tar
//! for 80 KiB of data: sshd encrypts it, the link carries it, and this process decrypts, copies
//! and parses it. Where padding is most of a batch and the link is slower than gzip, the box
//! gzips the stream (`gzip -1`: 15–17 ms of CPU for such a batch here, ~60 times smaller)
//! where it has gzip, and sends it as it is where not; the stream says which (gzip's magic: no
//! tar entry's name starts with it, as the names are the batch's own paths less their leading
//! `/`, and a name that did would only send its batch by SFTP).

use std::io::Read;
use std::time::Duration;

/// A link whose round trip is under this is this machine's or a LAN's: it carries a batch's
/// 2 MiB of tar in a few ms, while `gzip -1` takes the box 15–17 ms of CPU for it (here). On
/// loopback gzip was 6 % of a 100 000-file pull's CPU and bought nothing; across the internet
/// (tens of ms, tens of MB/s) it sends ~60 times fewer bytes. An unknown round trip (a pod's
/// stream through its cluster's API server, a link whose ping failed) counts as far: gzip costs
/// only the box's CPU.
const NEAR: Duration = Duration::from_millis(2);

/// Whether a batch of files of these sizes travels gzipped over a link of this round trip:
/// where tar's own bytes are most of it and the link is not near.
pub(super) fn travels_gzipped(sizes: impl Iterator<Item = u64>, rtt: Option<Duration>) -> bool {
    rtt.is_none_or(|rtt| rtt >= NEAR) && mostly_padding(sizes)
}

/// Whether a batch of files of these sizes is mostly tar's own bytes (headers and padding).
fn mostly_padding(sizes: impl Iterator<Item = u64>) -> bool {
    let (mut data, mut tar) = (0u64, 0u64);
    for size in sizes {
        data += size;
        tar += 512 + size.div_ceil(512) * 512;
    }
    tar > 4 * data
}

/// The shell that writes the batch's tar stream of `"$@"` to stdout, gzipped where `gzip` says
/// so and the box's gzip takes `-1` (an old busybox's does not: asked once, on nothing), and
/// leaves tar's own exit status in `s` (a pipeline's status is its last command's: tar's comes
/// back through fd 3).
pub(super) fn tar_into_s(gzip: bool) -> &'static str {
    if gzip {
        "Z=cat; gzip -1 </dev/null >/dev/null 2>&1 && Z='gzip -1'\nexec 4>&1\n\
         s=$( { { tar -cf - -C / -- \"$@\" 2>/dev/null; echo $? >&3; } | $Z >&4; } 3>&1 )\n\
         exec 4>&-\n"
    } else {
        "tar -cf - -C / -- \"$@\" 2>/dev/null; s=$?\n"
    }
}

/// The tar stream in a batch's stdout: unzipped where the box gzipped it, never past `max`
/// bytes (a box's gzip bomb); None where it does not unzip whole within that.
pub(super) fn unpacked(stdout: Vec<u8>, max: usize) -> Option<Vec<u8>> {
    if !stdout.starts_with(&[0x1f, 0x8b]) {
        return Some(stdout);
    }
    let mut tar = Vec::with_capacity(stdout.len().saturating_mul(8).min(max));
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::GzDecoder::new(&stdout[..])
        .take(limit)
        .read_to_end(&mut tar)
        .ok()?;
    (tar.len() <= max).then_some(tar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_batches_of_tiny_files_travel_gzipped() {
        assert!(mostly_padding([40u64; 2048].into_iter()));
        assert!(!mostly_padding([4096u64; 500].into_iter()));
        assert!(!mostly_padding([600u64, 3000].into_iter()));
        assert!(!mostly_padding(std::iter::empty()));
    }

    #[test]
    fn tiny_files_travel_gzipped_only_over_a_link_slower_than_gzip() {
        let tiny = || [40u64; 2048].into_iter();
        let far = Some(Duration::from_millis(30));
        assert!(travels_gzipped(tiny(), far));
        assert!(travels_gzipped(tiny(), Some(NEAR)));
        let loopback = Some(Duration::from_micros(150));
        assert!(!travels_gzipped(tiny(), loopback), "loopback");
        assert!(!travels_gzipped([4096u64; 500].into_iter(), far));
        // A pod's stream through its cluster's API server, or a link whose ping failed.
        assert!(travels_gzipped(tiny(), None), "unknown counts as far");
    }

    fn gzipped(bytes: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(bytes).expect("gzip");
        z.finish().expect("gzip")
    }

    #[test]
    fn a_gzipped_stream_is_unzipped_within_its_bound_and_a_plain_one_kept() {
        let tar = vec![7u8; 10_000];
        assert_eq!(unpacked(gzipped(&tar), 10_000), Some(tar.clone()));
        assert_eq!(
            unpacked(tar.clone(), 10),
            Some(tar.clone()),
            "plain tar is as it came"
        );
        // A bomb: a few KiB that unzip past what the batch may hold.
        assert_eq!(unpacked(gzipped(&vec![0u8; 1 << 20]), 64 << 10), None);
        // Cut short on the way.
        let cut = gzipped(&tar);
        assert_eq!(unpacked(cut[..cut.len() / 2].to_vec(), 10_000), None);
    }

    /// `tar_into_s` run by a real `sh` over `paths`, with `bin` first on PATH: its stdout, and
    /// `s` as it printed it.
    fn fragment(paths: &[&std::path::Path], bin: &std::path::Path) -> (Vec<u8>, String) {
        let args: Vec<String> = paths
            .iter()
            .map(|p| crate::sanitize::shell_quote(&p.to_string_lossy()))
            .collect();
        let script = format!(
            "set -- {}\n{}printf %s \"$s\" >&2",
            args.join(" "),
            tar_into_s(true)
        );
        crate::pull::remote::tests::sh_with_path(bin, &script)
    }

    /// The stream unzips to a tar of the files, and `s` is tar's status, not gzip's.
    #[test]
    fn the_box_s_gzipped_tar_unzips_and_keeps_tar_s_status() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("m.json");
        std::fs::write(&file, "{\"loss\": 1}").expect("write");
        let (stdout, status) = fragment(&[&file], dir.path());
        assert_eq!(status, "0");
        assert!(stdout.starts_with(&[0x1f, 0x8b]), "gzipped");
        let tar = unpacked(stdout, 1 << 20).expect("unzips");
        let mut archive = tar::Archive::new(&tar[..]);
        let names: Vec<_> = archive
            .entries()
            .expect("tar")
            .map(|e| e.expect("entry").path_bytes().into_owned())
            .collect();
        let want = file.to_string_lossy()[1..].as_bytes().to_vec();
        assert_eq!(names, vec![want]);
        let (_, status) = fragment(&[&dir.path().join("missing")], dir.path());
        assert_eq!(status, "2", "tar's status for a file it could not read");
    }

    /// A box whose gzip refuses `-1` (an old busybox's) sends plain tar, not a cut stream.
    #[test]
    fn a_gzip_that_refuses_level_one_leaves_the_stream_plain() {
        let dir = tempfile::tempdir().expect("dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        let refuses = "#!/bin/sh\necho 'gzip: invalid option -- 1' >&2\nexit 1\n";
        crate::pull::remote::tests::shim(&bin, "gzip", refuses);
        let file = dir.path().join("m.json");
        std::fs::write(&file, "{}").expect("write");
        let (stdout, status) = fragment(&[&file], &bin);
        assert_eq!(status, "0");
        assert!(!stdout.starts_with(&[0x1f, 0x8b]));
        let tar = unpacked(stdout, 1 << 20).expect("plain");
        let entries = tar::Archive::new(&tar[..]).entries().expect("tar").count();
        assert_eq!(entries, 1);
    }
}
