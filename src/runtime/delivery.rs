//! Which rigwatch delivers alerts: a dashboard and a `watch` running for the same state dir judge
//! the same fleet and would each send every alert. The one holding an exclusive flock on
//! `alerts.lock` sends (and keeps `alerts.json`); the other judges alike, sends nothing, and says
//! who does. The kernel drops the lock when its holder exits however it ends, so the other
//! takes over at its next tick.

use std::fs::File;
use std::io::{Seek as _, Write as _};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

pub struct Delivery {
    path: Option<PathBuf>,
    /// What this process is, written into the lock for the other to show.
    who: String,
    held: Option<Flock<File>>,
}

/// Whether this process sends, and if not, who does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    Us,
    /// Another rigwatch holds the lock: what it wrote there ("rigwatch watch, pid 4242").
    Other(String),
    /// No state dir (or a lock that cannot be made): this process sends, as it always did.
    Unlocked,
}

impl Delivery {
    /// `what` names this front end ("rigwatch watch"); `path` is the lock, None to send alone.
    pub fn new(path: Option<PathBuf>, what: &str) -> Delivery {
        Delivery {
            path,
            who: format!("{what}, pid {}", std::process::id()),
            held: None,
        }
    }

    pub fn at_state_dir(what: &str) -> Delivery {
        Delivery::new(
            crate::config::paths::state_dir().map(|d| d.join("alerts.lock")),
            what,
        )
    }

    /// Takes the lock when it is free; cheap enough for every tick.
    pub fn sender(&mut self) -> Sender {
        if self.held.is_some() {
            return Sender::Us;
        }
        let Some(path) = self.path.as_deref() else {
            return Sender::Unlocked;
        };
        match try_lock(path) {
            Ok(Ok(mut locked)) => {
                // Said for the other process; a failed write costs only that line.
                let _ = locked.set_len(0);
                let _ = locked.rewind();
                let _ = locked.write_all(self.who.as_bytes());
                let _ = locked.sync_data();
                self.held = Some(locked);
                Sender::Us
            }
            Ok(Err(_held_elsewhere)) => {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let text = crate::sanitize::line(text.trim(), 80);
                Sender::Other(if text.is_empty() {
                    "another rigwatch".into()
                } else {
                    text
                })
            }
            Err(_) => Sender::Unlocked,
        }
    }
}

/// Ok(Ok) locked, Ok(Err(file)) held by another process, Err when the file cannot be made.
fn try_lock(path: &Path) -> std::io::Result<Result<Flock<File>, File>> {
    let file = crate::config::paths::private_file(path)?;
    Ok(Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(file, _)| file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_sends_and_the_other_says_who_until_it_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state/alerts.lock");
        let mut watch = Delivery::new(Some(path.clone()), "rigwatch watch");
        let mut dashboard = Delivery::new(Some(path.clone()), "rigwatch dashboard");
        assert_eq!(watch.sender(), Sender::Us);
        let Sender::Other(who) = dashboard.sender() else {
            panic!("two senders")
        };
        assert!(who.starts_with("rigwatch watch, pid "), "{who}");
        assert_eq!(watch.sender(), Sender::Us, "the holder keeps it");
        drop(watch);
        assert_eq!(dashboard.sender(), Sender::Us, "taken over once it is free");
        assert_eq!(Delivery::new(None, "x").sender(), Sender::Unlocked);
    }
}
