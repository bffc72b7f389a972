//! A new ext4 filesystem (with its journal, as mkfs makes it) on a sparse file, loop-mounted for
//! one bench run. This VM's root filesystem is ext4 without a journal, and there ext4 makes
//! each new inode only after reading past every inode freed in the last 30–55 s: one run's
//! 100 000-file lab, deleted at its end, slowed the next run's first tool by up to 3× (rsync
//! took 3.46 s for 10 000 files against 0.92 s in a clean run). A fresh filesystem per run makes
//! the rows independent of what ran before, on the kind of disk most users have.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct FreshDisk {
    image: PathBuf,
    device: String,
    mount: tempfile::TempDir,
}

impl FreshDisk {
    /// `size_gib` of sparse image, formatted and mounted; None (and why, on stderr) where this
    /// machine cannot (not root, no loop devices, no mkfs.ext4): the bench then runs in /tmp.
    /// The loop device reads and writes its image with direct I/O, as a disk's controller
    /// would: through the page cache, every block a sync writes was copied once more by the
    /// CPU, which cost the tool that syncs as it goes (rigwatch) and not the one whose writes
    /// are flushed after its timed run (rsync).
    pub fn mount(size_gib: u64) -> Option<FreshDisk> {
        let mount = tempfile::Builder::new()
            .prefix("rigwatch-disk")
            .tempdir()
            .ok()?;
        let image = mount.path().with_extension("img");
        let ran = |cmd: &mut Command| cmd.output().is_ok_and(|o| o.status.success());
        let made = ran(Command::new("truncate")
            .arg("-s")
            .arg(format!("{size_gib}G"))
            .arg(&image))
            && ran(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image));
        let device = made
            .then(|| {
                let out = Command::new("losetup")
                    .args(["--find", "--show", "--direct-io=on"])
                    .arg(&image)
                    .output()
                    .ok()?;
                let device = String::from_utf8(out.stdout).ok()?.trim().to_string();
                (out.status.success() && !device.is_empty()).then_some(device)
            })
            .flatten();
        let mounted = device
            .as_ref()
            .is_some_and(|d| ran(Command::new("mount").arg(d).arg(mount.path())));
        let device = match device {
            Some(d) if mounted => d,
            attached => {
                if let Some(d) = attached {
                    let _ = Command::new("losetup").arg("-d").arg(d).status();
                }
                eprintln!(
                    "no fresh ext4 for this run (needs root, loop devices, mkfs.ext4): in /tmp"
                );
                let _ = std::fs::remove_file(&image);
                return None;
            }
        };
        Some(FreshDisk {
            image,
            device,
            mount,
        })
    }

    pub fn path(&self) -> &Path {
        self.mount.path()
    }
}

impl Drop for FreshDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mount.path()).status();
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
        let _ = std::fs::remove_file(&self.image);
    }
}
