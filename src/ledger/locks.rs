//! One action at a time per target, across every rigwatch process on this machine: a pull, a
//! teardown and a kill of the same box (or of one cluster's jobs, which share the cluster's
//! copy at home) never overlap. Each action holds an exclusive `flock` on its target's file
//! under the state folder for as long as it acts. The kernel drops a flock with the last open
//! descriptor of it, so a rigwatch ended by SIGKILL never leaves a target stuck, and a destroy
//! command that was handed the descriptor (its stdin, `Held::inherit`) keeps the target held
//! for as long as it runs, even after the rigwatch that started it was killed (one that ends as
//! it should unlocks it on its way out, for every descriptor of it: flock's lock is the open
//! file's, and so is its unlock). `tests/destroy_outcome.rs` kills a rigwatch mid-destroy.
//!
//! Why one lock per target is enough: two hosts never share a dest (refused when fleet.toml is
//! read), and the jobs of a cluster pull into the cluster's one dest, so they share its lock.
//! The `.part` files under a dest's parts folder are therefore only ever written by the one pull
//! that holds the lock: a part found there was left by a pull that has ended.
//!
//! Who holds a target is written beside the lock (`.who`) for the messages of those who find
//! it held; the lock itself is the only truth, the words only describe it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use sha2::Digest;

/// What an action does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Pull,
    Teardown,
    Kill,
}

impl Act {
    pub fn word(self) -> &'static str {
        match self {
            Act::Pull => "pull",
            Act::Teardown => "teardown",
            Act::Kill => "kill",
        }
    }

    fn from_word(word: &str) -> Option<Act> {
        [Act::Pull, Act::Teardown, Act::Kill]
            .into_iter()
            .find(|a| a.word() == word)
    }
}

/// What one action wanting a target does when it finds `held` there (None: free).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meet {
    Take,
    /// A second pull waits for the first: it will find the first one's copies done.
    Wait,
    /// Anything else that finds the target held does not act: a teardown during a pull would
    /// rely on a copy still being written, a pull during a destroy reads a box going away.
    Refuse,
}

/// The rule, pure: only a pull waits, and only for a pull. A holder whose words could not be
/// read is taken for the worst (not a pull).
pub fn meet(want: Act, held: Option<Option<Act>>) -> Meet {
    match (want, held) {
        (_, None) => Meet::Take,
        (Act::Pull, Some(Some(Act::Pull))) => Meet::Wait,
        _ => Meet::Refuse,
    }
}

/// Who holds a target, as it said when it took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub act: Act,
    pub pid: u32,
    pub since: DateTime<Utc>,
    /// The target in words: "box gpu-1", "job 4242 on hpc", "Job train on gke".
    pub what: String,
}

impl Holder {
    fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\n",
            self.act.word(),
            self.pid,
            self.since.to_rfc3339(),
            self.what.replace(['\t', '\n'], " ")
        )
    }

    fn parse(text: &str) -> Option<Holder> {
        let mut fields = text.trim_end_matches('\n').splitn(4, '\t');
        let act = Act::from_word(fields.next()?)?;
        let pid = fields.next()?.parse().ok()?;
        let since = DateTime::parse_from_rfc3339(fields.next()?).ok()?.into();
        let what = crate::sanitize::line(fields.next()?, 120);
        Some(Holder {
            act,
            pid,
            since,
            what,
        })
    }
}

/// Why a target could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum Busy {
    #[error(
        "a {} of {} is running in pid {} since {}",
        .0.act.word(), .0.what, .0.pid, .0.since.format("%Y-%m-%d %H:%M:%S UTC")
    )]
    By(Holder),
    /// Held, by a process that did not say who it is (one a destroy left running, that
    /// inherited the lock).
    #[error("{0} is held by another process (one a destroy started may still be running)")]
    Unknown(String),
    #[error("the lock folder {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Busy {
    /// What the holder does, where it said so.
    pub fn holder_act(&self) -> Option<Option<Act>> {
        match self {
            Busy::By(h) => Some(Some(h.act)),
            Busy::Unknown(_) => Some(None),
            Busy::Io { .. } => None,
        }
    }
}

/// A target held by this process; released when dropped (for the descriptors handed on with
/// `inherit` too), or when the process dies and every descriptor of it is closed.
#[derive(Debug)]
pub struct Held {
    file: Flock<File>,
    key: String,
}

impl Held {
    /// Whether this lock is the one for `key` (a host's or a cluster's name in the ledger).
    pub fn covers(&self, key: &str) -> bool {
        self.key == key
    }

    /// A descriptor of the same lock, for a command that must keep the target held while it
    /// runs (a destroy's stdin: the lock file is empty, so it reads as /dev/null would).
    pub fn inherit(&self) -> std::io::Result<File> {
        self.file.try_clone()
    }
}

/// A host's or cluster's name in words, for who holds it: "box gpu-1", "Slurm cluster hpc",
/// "cluster gke" (a job's own words name the job: "job 4242 on hpc", "Job train on gke").
pub fn target_words(fleet: &crate::config::FleetConfig, name: &str) -> String {
    if fleet.slurm.iter().any(|c| c.name == name) {
        format!("Slurm cluster {name}")
    } else if fleet.kubernetes.iter().any(|c| c.name == name) {
        format!("cluster {name}")
    } else if fleet.kaggle.iter().any(|c| c.name == name) {
        format!("Kaggle member {name}")
    } else {
        format!("box {name}")
    }
}

/// The folder the locks live in: beside the ledger.
pub fn default_dir() -> Option<PathBuf> {
    crate::config::paths::state_dir().map(|d| d.join("locks"))
}

/// The lock's and the holder's files for `key`: a readable stem and a hash, so that any name a
/// fleet.toml holds gives one file name, and two names never share one.
fn files(dir: &Path, key: &str) -> (PathBuf, PathBuf) {
    let stem: String = key
        .chars()
        .take(40)
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    let hash = data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(key.as_bytes())[..8]);
    (
        dir.join(format!("{stem}-{hash}.lock")),
        dir.join(format!("{stem}-{hash}.who")),
    )
}

/// How long a look by [`holder_of`] may hold a lock where the kernel's table cannot be read,
/// and how often a taker tries again within that before it believes the lock is held.
const GLANCE: Duration = Duration::from_millis(2);
const GLANCE_TRIES: u32 = 5;

/// Takes `key`'s lock for `act` on `what` now, or says who holds it. Never waits (but for the
/// few milliseconds that tell a look from a holder).
pub fn try_take(
    dir: &Path,
    key: &str,
    act: Act,
    what: &str,
    now: DateTime<Utc>,
) -> Result<Held, Busy> {
    let io = |source| Busy::Io {
        path: dir.to_path_buf(),
        source,
    };
    let (lock, who) = files(dir, key);
    // Made (private, in a private folder) if missing; then opened read-only: the file stays
    // empty, so a command given it as stdin reads end-of-file at once.
    drop(crate::config::paths::private_file(&lock).map_err(io)?);
    let file = File::open(&lock).map_err(io)?;
    // A look by `holder_of` without the kernel's table takes the lock for a moment: a few short
    // tries tell that from a holder that acts.
    let mut file = file;
    let mut tries = 0;
    let file = loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => break locked,
            Err((again, Errno::EWOULDBLOCK)) if tries < GLANCE_TRIES => {
                tries += 1;
                file = again;
                std::thread::sleep(GLANCE);
            }
            Err((_, Errno::EWOULDBLOCK)) => return Err(holder(&who, what)),
            Err((_, e)) => return Err(io(e.into())),
        }
    };
    let holder = Holder {
        act,
        pid: std::process::id(),
        since: now,
        what: what.to_string(),
    };
    // The words are for others' messages only; failing to write them leaves the lock held.
    let _ = write_who(&who, &holder);
    Ok(Held {
        file,
        key: key.to_string(),
    })
}

fn write_who(who: &Path, holder: &Holder) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(who)?;
    f.write_all(holder.line().as_bytes())
}

/// Who holds the lock whose words are at `who`, as well as they can be read.
fn holder(who: &Path, what: &str) -> Busy {
    match std::fs::read_to_string(who)
        .ok()
        .and_then(|t| Holder::parse(&t))
    {
        Some(h) => Busy::By(h),
        None => Busy::Unknown(what.to_string()),
    }
}

/// Who holds `key` now: None when it is free. Read off the kernel's table of locks
/// (`/proc/locks`) where there is one, so that looking never takes the lock; elsewhere the lock
/// is taken for a moment, which `try_take` tells from a holder by trying again within
/// [`GLANCE`]s.
pub fn holder_of(dir: &Path, key: &str, what: &str) -> Option<Busy> {
    let (lock, who) = files(dir, key);
    let held = match std::fs::read_to_string("/proc/locks") {
        Ok(table) => {
            use std::os::unix::fs::MetadataExt;
            let meta = std::fs::metadata(&lock).ok()?;
            flocked(&table, meta.dev(), meta.ino())
        }
        Err(_) => {
            let file = File::open(&lock).ok()?;
            matches!(
                Flock::lock(file, FlockArg::LockExclusiveNonblock),
                Err((_, Errno::EWOULDBLOCK))
            )
        }
    };
    held.then(|| holder(&who, what))
}

/// Of `targets` (key, words), those held now, each with who holds it in a line: the kernel's
/// table read once for all (the dashboard's look each tick). Empty where there is no table.
pub fn holders(
    dir: &Path,
    targets: impl IntoIterator<Item = (String, String)>,
) -> std::collections::BTreeMap<String, String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(table) = std::fs::read_to_string("/proc/locks") else {
        return Default::default();
    };
    targets
        .into_iter()
        .filter_map(|(key, what)| {
            let (lock, who) = files(dir, &key);
            let meta = std::fs::metadata(&lock).ok()?;
            flocked(&table, meta.dev(), meta.ino()).then(|| (key, holder(&who, &what).to_string()))
        })
        .collect()
}

/// Whether `table` (`/proc/locks`) shows a flock on the file `dev`/`ino`: its lines read
/// `1: FLOCK  ADVISORY  WRITE 4711 08:01:1234567 0 EOF`, the device as hex major:minor.
fn flocked(table: &str, dev: u64, ino: u64) -> bool {
    let (major, minor) = major_minor(dev);
    let want = format!("{major:02x}:{minor:02x}:{ino}");
    table.lines().any(|line| {
        let mut words = line.split_whitespace().skip(1);
        words.next() == Some("FLOCK") && words.nth(3) == Some(want.as_str())
    })
}

/// A device number's major and minor, as Linux's `/proc/locks` prints them.
#[cfg(target_os = "linux")]
fn major_minor(dev: u64) -> (u64, u64) {
    (nix::sys::stat::major(dev), nix::sys::stat::minor(dev))
}

/// A device number's major and minor where there is no `/proc/locks` to compare them with (a
/// Mac: `holders` finds no table and names nobody; the locks themselves are flock(2), there as
/// here): the BSD layout, 8 bits of major above 24 of minor.
#[cfg(not(target_os = "linux"))]
fn major_minor(dev: u64) -> (u64, u64) {
    ((dev >> 24) & 0xff, dev & 0x00ff_ffff)
}

/// How often a waiting pull looks again: a lock freed is taken within this.
const LOOK_AGAIN: Duration = Duration::from_millis(200);

/// Takes `key`'s lock for `act`, waiting while [`meet`] says to (and `wait` allows): `waiting`
/// hears once who it waits for. Err with who holds it when it refuses or may not wait.
pub async fn take(
    dir: &Path,
    key: &str,
    act: Act,
    what: &str,
    wait: bool,
    waiting: &mut (dyn FnMut(&Busy) + Send),
) -> Result<Held, Busy> {
    let mut told = false;
    loop {
        let busy = match try_take(dir, key, act, what, Utc::now()) {
            Ok(held) => return Ok(held),
            Err(busy) => busy,
        };
        match busy.holder_act() {
            Some(held) if wait && meet(act, Some(held)) == Meet::Wait => {}
            _ => return Err(busy),
        }
        if !told {
            waiting(&busy);
            told = true;
        }
        tokio::time::sleep(LOOK_AGAIN).await;
    }
}

#[cfg(test)]
#[path = "locks_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "locks_proptest.rs"]
mod proptests;
