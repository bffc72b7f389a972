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
    mount: tempfile::TempDir,
}

impl FreshDisk {
    /// `size_gib` of sparse image, formatted and mounted; None (and why, on stderr) where this
    /// machine cannot (not root, no loop devices, no mkfs.ext4): the bench then runs in /tmp.
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
            && ran(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image))
            && ran(Command::new("mount")
                .args(["-o", "loop"])
                .arg(&image)
                .arg(mount.path()));
        if !made {
            eprintln!("no fresh ext4 for this run (needs root, loop devices, mkfs.ext4): in /tmp");
            let _ = std::fs::remove_file(&image);
            return None;
        }
        Some(FreshDisk { image, mount })
    }

    pub fn path(&self) -> &Path {
        self.mount.path()
    }
}

impl Drop for FreshDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mount.path()).status();
        let _ = std::fs::remove_file(&self.image);
    }
}
