//! The copy at home is never made worse by rigwatch, over a real sshd through the CLI: a pull
//! that sees a file change on the box keeps the verified copy (every copy path: SFTP, exec
//! `tail`, tar batches), a box re-rented under a destroyed box's name cannot overwrite the
//! copy the teardown relied on, files keep the box's mode and rigwatch's own state is private,
//! and a file the login user cannot read is said so, not "vanished".

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use sha2::{Digest, Sha256};
use support::tmux::Tmux;
use support::{Lab, Sshd, write_random};

fn sha(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A box whose run folder holds a 3 MiB checkpoint (SFTP or exec), a 64 KiB one (tar), and a
/// fleet pulling it into the lab's `pulled/run`, tearing down with a script that records calls.
struct Rig {
    lab: Lab,
    sshd: Sshd,
    run: PathBuf,
    fleet: PathBuf,
    dest: PathBuf,
}

fn a_box(with_sftp: bool) -> Rig {
    a_box_at(with_sftp, None, "")
}

/// As `a_box`, its run folder at `run` when given, `extra` at the top of fleet.toml.
fn a_box_at(with_sftp: bool, run: Option<PathBuf>, extra: &str) -> Rig {
    let mut lab = Lab::new();
    let mut sshd = lab.start_host("box");
    if !with_sftp {
        sshd.without_sftp();
    }
    let run = run.unwrap_or_else(|| sshd.dir.join("workspace/run"));
    std::fs::create_dir_all(&run).expect("dirs");
    write_random(&run.join("big.bin"), 3 << 20, 1);
    write_random(&run.join("small.bin"), 64 << 10, 2);
    let destroy = lab.path("destroy.sh");
    std::fs::write(
        &destroy,
        format!(
            "#!/bin/sh\necho destroyed >> {}\n",
            lab.path("destroyed").display()
        ),
    )
    .expect("destroy script");
    std::fs::set_permissions(&destroy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let dest = lab.path("pulled");
    let body = format!(
        "{}\nteardown = \"{}\"\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"\n\
         [host.pull.verify]\n\"*.bin\" = \"test -s {{file}}\"",
        lab.host_entry(&sshd),
        destroy.display(),
        run.display(),
        dest.display()
    );
    let fleet = lab.fleet("fleet.toml", extra, &[("box", body)]);
    Rig {
        lab,
        sshd,
        run,
        fleet,
        dest,
    }
}

impl Rig {
    fn pull(&self) -> Output {
        self.lab
            .rigwatch_on(&self.fleet)
            .args(["pull", "box"])
            .output()
            .expect("pull")
    }

    fn pull_ok(&self) {
        let out = self.pull();
        assert!(out.status.success(), "{}", text(&out));
    }

    /// The box's checkpoints rewritten in place (same inode, same size, new bytes), as a run
    /// that overwrites its checkpoint does.
    fn rewrite_command(&self) -> String {
        format!(
            "dd if=/dev/urandom of={big} bs=65536 count=48 conv=notrunc status=none; \
             dd if=/dev/urandom of={small} bs=65536 count=1 conv=notrunc status=none",
            big = self.run.join("big.bin").display(),
            small = self.run.join("small.bin").display()
        )
    }

    /// The next pull's listing is followed at once by a rewrite of both checkpoints, so the
    /// copy carries bytes the box no longer lists by the time the pull lists it again.
    fn rewrite_after_the_next_listing(&self) {
        let armed = self.sshd.dir.join("armed");
        std::fs::write(&armed, b"").expect("arm");
        self.sshd.shim_script(
            "find",
            &format!(
                "#!/bin/sh\n/usr/bin/find \"$@\"\nrc=$?\nif [ -e {armed} ]; then rm -f {armed}; \
                 {rewrite}; fi\nexit $rc\n",
                armed = armed.display(),
                rewrite = self.rewrite_command()
            ),
        );
    }

    fn local(&self, name: &str) -> PathBuf {
        self.dest.join("run").join(name)
    }
}

#[test]
fn a_pull_that_sees_files_change_keeps_the_verified_copy_over_sftp_and_tar() {
    keeps_the_verified_copy(true);
}

#[test]
fn a_pull_that_sees_files_change_keeps_the_verified_copy_over_exec() {
    keeps_the_verified_copy(false);
}

fn keeps_the_verified_copy(with_sftp: bool) {
    let rig = a_box(with_sftp);
    rig.pull_ok();
    let verified: Vec<String> = ["big.bin", "small.bin"]
        .iter()
        .map(|n| sha(&rig.local(n)))
        .collect();

    // The run writes a new checkpoint (the pull must copy it), and overwrites it again while
    // the pull runs.
    let status = std::process::Command::new("sh")
        .args(["-c", &rig.rewrite_command()])
        .status()
        .expect("rewrite");
    assert!(status.success());
    rig.rewrite_after_the_next_listing();
    let out = rig.pull();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("changed on the box during the pull"),
        "{said}"
    );
    for (name, hash) in ["big.bin", "small.bin"].iter().zip(&verified) {
        assert_eq!(
            &sha(&rig.local(name)),
            hash,
            "{name}: a failed pull replaced the verified copy\n{said}"
        );
    }

    // Nothing changes now: the next pull proves the box's bytes and only then puts them in place.
    rig.pull_ok();
    for name in ["big.bin", "small.bin"] {
        assert_eq!(sha(&rig.local(name)), sha(&rig.run.join(name)), "{name}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(rig.lab.path(".pulled.rigwatch-parts"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn pulled_files_keep_their_mode_and_rigwatch_state_is_private() {
    let rig = a_box(true);
    let set = |name: &str, m: u32| {
        std::fs::set_permissions(rig.run.join(name), std::fs::Permissions::from_mode(m))
            .expect("chmod")
    };
    std::fs::write(rig.run.join("train.sh"), b"#!/bin/sh\necho hi\n").expect("script");
    set("big.bin", 0o600);
    set("small.bin", 0o640);
    set("train.sh", 0o4755);
    rig.pull();
    assert_eq!(mode(&rig.local("big.bin")), 0o600);
    assert_eq!(mode(&rig.local("small.bin")), 0o640);
    assert_eq!(mode(&rig.local("train.sh")), 0o755, "setuid is not kept");

    let state = rig.lab.path("state/rigwatch");
    assert_eq!(mode(&state), 0o700);
    // Every file private, in private folders (the targets' locks among them).
    let mut folders = vec![state];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("state").flatten() {
            let path = entry.path();
            if path.is_dir() {
                assert_eq!(mode(&path), 0o700, "{path:?}");
                folders.push(path);
            } else {
                assert_eq!(mode(&path), 0o600, "{path:?}");
            }
        }
    }
}

/// The teardown CLI typed into a real terminal; its last screen.
fn tear_down(rig: &Rig, tag: &str) -> String {
    let command = format!(
        "env XDG_STATE_HOME='{}' XDG_CONFIG_HOME='{}' {} --config {} teardown box; \
         echo EXIT=$?; sleep 60",
        rig.lab.path("state").display(),
        rig.lab.path("config").display(),
        env!("CARGO_BIN_EXE_rigwatch"),
        rig.fleet.display()
    );
    let tmux = Tmux::start(tag, &command);
    tmux.wait_for("the name prompt", Duration::from_secs(30), |s| {
        s.contains("Type the box's name")
    });
    tmux.keys(&["box", "Enter"]);
    tmux.wait_for("the end", Duration::from_secs(60), |s| s.contains("EXIT="))
}

/// `gpu-1` is destroyed relying on its pull; the user rents a new box under the same name and
/// pulls it into the same dest. The destroyed box's copy is the only one there is: the new
/// box's files of the same names are refused, saying where the old copy is, and its other
/// files arrive.
#[test]
fn a_re_rented_name_never_overwrites_the_copy_a_teardown_relied_on() {
    let rig = a_box(true);
    rig.pull_ok();
    let before = sha(&rig.local("big.bin"));
    let screen = tear_down(&rig, "rerent");
    assert!(
        std::fs::read_to_string(rig.lab.path("destroyed")).is_ok(),
        "{screen}"
    );

    write_random(&rig.run.join("big.bin"), 3 << 20, 99);
    std::fs::write(rig.run.join("new.bin"), b"the new box's own").expect("new");
    let out = rig.pull();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("that the teardown of"), "{said}");
    assert!(
        said.contains(&rig.local("big.bin").display().to_string()),
        "{said}"
    );
    assert_eq!(sha(&rig.local("big.bin")), before, "{said}");
    assert_eq!(
        std::fs::read(rig.local("new.bin")).expect("new file"),
        b"the new box's own"
    );
}

/// Logged in as a plain user, a file that user cannot read is named as such.
#[test]
fn a_file_the_login_user_cannot_read_is_said_so() {
    let mut lab = Lab::new();
    lab.unprivileged();
    let sshd = lab.start_host("box");
    let run = sshd.dir.join("workspace/run");
    std::fs::create_dir_all(&run).expect("dirs");
    std::fs::write(run.join("ok.json"), b"{}").expect("ok");
    std::fs::write(run.join("secret.bin"), b"root's").expect("secret");
    std::fs::set_permissions(
        run.join("secret.bin"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let body = format!(
        "{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"",
        lab.host_entry(&sshd),
        run.display(),
        lab.path("pulled").display()
    );
    let fleet = lab.fleet("fleet.toml", "", &[("box", body)]);
    let out = lab
        .rigwatch_on(&fleet)
        .args(["pull", "box"])
        .output()
        .expect("pull");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let line = said
        .lines()
        .find(|l| l.contains("secret.bin"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(line.contains("cannot be read by"), "{line}");
    assert!(!line.contains("vanished"), "{line}");
}

fn stat(path: &Path) -> (u64, i64, i64, i64, i64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).expect("stat");
    (
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.ino(),
    )
}

/// A checkpoint on tmpfs (`/dev/shm`, where fast checkpoints go) held in a shared memory map by
/// the run: a second write to a page it already dirtied changes the bytes and leaves size,
/// times and inode as they were. The teardown's final check, taken after the typed name,
/// re-hashes on the box and refuses; nothing is destroyed.
#[test]
fn bytes_changed_through_a_memory_map_after_the_pull_refuse_the_destroy() {
    let screen = refused(changed_through_a_map("", false));
    assert!(screen.contains("re-hashed by the box's own"), "{screen}");
}

/// The trust boundary SECURITY.md states, shown: the on-box final check takes the box's hashing
/// tools at their word, so a box whose `sha256sum` and `openssl` replay the pulled hashes passes
/// it after its checkpoint changed (here the destroy is a script that writes a file).
#[test]
fn lying_tools_pass_the_check_on_the_box() {
    let (screen, destroyed) = changed_through_a_map("", true);
    assert!(destroyed, "{screen}");
}

/// The same change on a box whose `sha256sum` and `openssl` lie (they hash the copy taken at
/// pull time, so they replay the hashes the pull saw): the strict final check streams the bytes
/// home and hashes them here, and refuses.
#[test]
fn the_strict_final_check_refuses_what_a_lying_hash_tool_would_pass() {
    let screen = refused(changed_through_a_map(
        "[teardown]\nfinal_check = \"strict\"\n",
        true,
    ));
    assert!(
        screen.contains("streamed home and hashed here, no hashing tool of the box trusted"),
        "{screen}"
    );
}

/// A teardown's last screen that refused, saying the box holds other bytes, and ran nothing.
fn refused((screen, destroyed): (String, bool)) -> String {
    assert!(screen.contains("holds other bytes on the box"), "{screen}");
    assert!(
        !destroyed,
        "destroyed on a check that did not see the bytes:\n{screen}"
    );
    screen
}

/// A checkpoint in a shared memory map changed after the pull (stat unchanged), then a teardown
/// typed at a terminal: its last screen, and whether the destroy ran. `lying`: the box's hashing
/// tools hash a copy taken right after the pull.
fn changed_through_a_map(extra: &str, lying: bool) -> (String, bool) {
    let shm = Path::new("/dev/shm");
    let run_root = tempfile::Builder::new()
        .prefix("rigwatch-mmap")
        .tempdir_in(if shm.is_dir() { shm } else { Path::new("/tmp") })
        .expect("tmpfs dir");
    let rig = a_box_at(true, Some(run_root.path().join("run")), extra);
    let ckpt = rig.run.join("big.bin");
    let go = rig.lab.path("go");
    let holder = r#"
import mmap, os, sys, time
path, go = sys.argv[1], sys.argv[2]
f = open(path, "r+b")
m = mmap.mmap(f.fileno(), 0)
m[0:4] = m[0:4]
open(go + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.02)
m[0:4] = bytes(b ^ 0xFF for b in m[0:4])
open(go + ".done", "w").close()
time.sleep(120)
"#;
    let mut run = std::process::Command::new("python3")
        .args(["-c", holder])
        .arg(&ckpt)
        .arg(&go)
        .spawn()
        .expect("python3");
    let wait = |suffix: &str| {
        let flag = go.with_extension(suffix);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !flag.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(flag.exists(), "the run never got to {suffix}");
    };
    wait("ready");
    rig.pull_ok();
    if lying {
        lie_about_hashes(&rig);
    }
    let before = stat(&ckpt);
    std::fs::write(&go, b"").expect("go");
    wait("done");
    assert_eq!(stat(&ckpt), before, "the write must leave stat as it was");
    if lying {
        let said = std::process::Command::new(rig.sshd.bin.join("sha256sum"))
            .arg(&ckpt)
            .output()
            .expect("the lying sha256sum");
        let said = String::from_utf8_lossy(&said.stdout).to_string();
        assert!(
            said.starts_with(&sha(&rig.local("big.bin"))) && !said.starts_with(&sha(&ckpt)),
            "the box's sha256sum replays the pulled hash: {said}"
        );
    }

    let tag = format!("mmap{}{}", extra.len(), if lying { "-lying" } else { "" });
    let screen = tear_down(&rig, &tag);
    let _ = run.kill();
    let _ = run.wait();
    (screen, rig.lab.path("destroyed").exists())
}

/// The box's `sha256sum` and `openssl` made to hash a copy of the run folder taken now, under
/// the names asked: what a box whose tools replay the hashes of the pull would print.
fn lie_about_hashes(rig: &Rig) {
    let saved = rig.lab.path("saved-run");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&rig.run)
        .arg(&saved)
        .status()
        .expect("cp");
    assert!(copied.success());
    let (run, saved) = (rig.run.display(), saved.display());
    // sha256sum is given the names; openssl reads the file on its stdin.
    rig.sshd.shim_script(
        "sha256sum",
        &format!(
            "#!/bin/sh\nn=$#\nwhile [ $n -gt 0 ]; do a=$1; shift; case $a in {run}/*) \
             a={saved}/${{a#{run}/}};; esac; set -- \"$@\" \"$a\"; n=$((n-1)); done\n\
             /usr/bin/sha256sum \"$@\" | sed 's|{saved}/|{run}/|g'\n"
        ),
    );
    rig.sshd.shim_script(
        "openssl",
        &format!(
            "#!/bin/sh\nsrc=$(readlink /proc/$$/fd/0)\ncase $src in {run}/*) \
             exec /usr/bin/openssl \"$@\" < \"{saved}/${{src#{run}/}}\";; esac\n\
             exec /usr/bin/openssl \"$@\"\n"
        ),
    );
}

/// `dest` is a mount of its own (a second disk for results), so the parts folder beside it is
/// on another filesystem: every file still arrives whole, none fails with "Invalid cross-device
/// link". Run in a mount namespace of the test's own, with a tmpfs at `dest`.
#[test]
fn a_dest_on_its_own_filesystem_gets_every_file() {
    let rig = a_box(true);
    std::fs::create_dir_all(&rig.dest).expect("dest");
    let privileged = support::whoami() == "root";
    let out = std::process::Command::new("unshare")
        .arg(if privileged { "-m" } else { "-Urm" })
        .args([
            "sh",
            "-c",
            "mount -t tmpfs tmpfs \"$0\" || exit 9\n\"$1\" --config \"$2\" pull box\nrc=$?\n\
             sha256sum \"$0\"/run/*.bin\nexit $rc",
        ])
        .arg(&rig.dest)
        .arg(env!("CARGO_BIN_EXE_rigwatch"))
        .arg(&rig.fleet)
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("RIGWATCH_CONFIG")
        .env("XDG_STATE_HOME", rig.lab.path("state"))
        .env("XDG_CONFIG_HOME", rig.lab.path("config"))
        .output()
        .expect("unshare");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(!said.contains("cross-device"), "{said}");
    for name in ["big.bin", "small.bin"] {
        let line = format!(
            "{}  {}",
            sha(&rig.run.join(name)),
            rig.local(name).display()
        );
        assert!(said.contains(&line), "{name}: {said}");
    }
}

/// A second host whose `dest` is the first host's folder under another name — through `..`, or
/// through a link — is refused before anything is pulled, so its pull can never overwrite the
/// first host's only copy.
#[test]
fn a_second_name_for_another_hosts_dest_is_refused_before_any_pull() {
    let rig = a_box(true);
    rig.pull_ok();
    let before = sha(&rig.local("big.bin"));
    let link = rig.lab.path("link-to-pulled");
    std::os::unix::fs::symlink(&rig.dest, &link).expect("symlink");
    for alias in [rig.lab.path("other/../pulled"), link] {
        let second = format!(
            "[[host]]\nname = \"box2\"\n{}\n[host.pull]\npaths = [\"{}\"]\ndest = \"{}\"",
            rig.lab.host_entry(&rig.sshd),
            rig.run.display(),
            alias.display()
        );
        let first = std::fs::read_to_string(&rig.fleet).expect("fleet");
        let both = rig.lab.path("both.toml");
        std::fs::write(&both, format!("{first}\n{second}\n")).expect("fleet");
        let out = rig
            .lab
            .rigwatch_on(&both)
            .args(["pull", "box2"])
            .output()
            .expect("pull");
        let said = text(&out);
        assert_ne!(out.status.code(), Some(0), "{said}");
        assert!(said.contains("overlaps box's"), "{alias:?}: {said}");
        assert_eq!(sha(&rig.local("big.bin")), before);
    }
}
