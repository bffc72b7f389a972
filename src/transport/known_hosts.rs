//! A known_hosts matcher that agrees with OpenSSH where russh's does not: markers, hashed and
//! wildcard host patterns, `!` negation, case-insensitive names, tabs, and "known if any line
//! matches" (a stale key beside the current one is not a change).

use std::io::Write;
use std::path::{Path, PathBuf};

use hmac::{KeyInit, Mac};

/// A host key as it travels on the wire: its algorithm name and its public blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireKey<'a> {
    pub algorithm: &'a str,
    pub blob: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Known {
        file: PathBuf,
        line: usize,
    },
    /// No line for this host lists a key of this algorithm.
    Unknown,
    /// Lines for this host list keys of this algorithm, and none is this key.
    Changed {
        file: PathBuf,
        line: usize,
    },
    Revoked {
        file: PathBuf,
        line: usize,
    },
}

struct Entry<'a> {
    marker: Option<&'a str>,
    hosts: &'a str,
    algorithm: &'a str,
    blob: Vec<u8>,
}

fn parse_line(line: &str) -> Option<Entry<'_>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split_ascii_whitespace();
    let mut first = fields.next()?;
    let marker = if first.starts_with('@') {
        let m = first;
        first = fields.next()?;
        Some(m)
    } else {
        None
    };
    let algorithm = fields.next()?;
    let blob = data_encoding::BASE64
        .decode(fields.next()?.as_bytes())
        .ok()?;
    Some(Entry {
        marker,
        hosts: first,
        algorithm,
        blob,
    })
}

/// OpenSSH's `match_hostname`: comma-separated globs, any `!pattern` that matches vetoes.
fn host_list_matches(list: &str, name: &str) -> bool {
    if let Some(hashed) = list.strip_prefix("|1|") {
        return hashed_matches(hashed, name);
    }
    let mut matched = false;
    for pattern in list.split(',') {
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        if crate::glob::matches(&pattern.to_ascii_lowercase(), name) {
            if negated {
                return false;
            }
            matched = true;
        }
    }
    matched
}

fn hashed_matches(salt_and_hash: &str, name: &str) -> bool {
    let Some((salt, hash)) = salt_and_hash.split_once('|') else {
        return false;
    };
    let (Ok(salt), Ok(hash)) = (
        data_encoding::BASE64.decode(salt.as_bytes()),
        data_encoding::BASE64.decode(hash.as_bytes()),
    ) else {
        return false;
    };
    let Ok(mut mac) = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt) else {
        return false;
    };
    mac.update(name.as_bytes());
    mac.verify_slice(&hash).is_ok()
}

/// Checks `key` for `name` (already in `[host]:port` form when the port is not 22) against the
/// text of several files, in order. Pure: the caller reads the files.
pub fn check_texts(files: &[(PathBuf, String)], name: &str, key: &WireKey<'_>) -> Verdict {
    let name = name.to_ascii_lowercase();
    let mut changed: Option<(PathBuf, usize)> = None;
    let mut known: Option<(PathBuf, usize)> = None;
    for (path, text) in files {
        for (index, line) in text.lines().enumerate() {
            let Some(entry) = parse_line(line) else {
                continue;
            };
            if !host_list_matches(entry.hosts, &name) {
                continue;
            }
            let same_key = entry.algorithm == key.algorithm && entry.blob == key.blob;
            match entry.marker {
                Some("@revoked") if same_key => {
                    return Verdict::Revoked {
                        file: path.clone(),
                        line: index + 1,
                    };
                }
                Some(_) => continue,
                None => {}
            }
            if same_key && known.is_none() {
                known = Some((path.clone(), index + 1));
            } else if entry.algorithm == key.algorithm && changed.is_none() {
                changed = Some((path.clone(), index + 1));
            }
        }
    }
    match (known, changed) {
        (Some((file, line)), _) => Verdict::Known { file, line },
        (None, Some((file, line))) => Verdict::Changed { file, line },
        (None, None) => Verdict::Unknown,
    }
}

/// Host-key algorithms recorded for `name`, in file order, so the client can ask the server for
/// a key it can check (as OpenSSH does) instead of one it has never seen.
pub fn recorded_algorithms(files: &[(PathBuf, String)], name: &str) -> Vec<String> {
    let name = name.to_ascii_lowercase();
    let mut out: Vec<String> = Vec::new();
    for (_, text) in files {
        for line in text.lines() {
            let Some(entry) = parse_line(line) else {
                continue;
            };
            if entry.marker.is_none()
                && host_list_matches(entry.hosts, &name)
                && !out.iter().any(|a| a == entry.algorithm)
            {
                out.push(entry.algorithm.to_string());
            }
        }
    }
    out
}

/// Reads the files that exist; a missing file is simply empty, as for OpenSSH.
pub fn read_files(paths: &[PathBuf]) -> Vec<(PathBuf, String)> {
    paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok().map(|t| (p.clone(), t)))
        .collect()
}

/// Appends a trust-on-first-use entry, creating the file (and its folder, 0700 like `~/.ssh`)
/// if needed. The whole line is one write under an exclusive lock, so thirty first connections
/// at once (a fleet behind one new bastion) leave thirty whole lines; hashed (`|1|salt|hash`)
/// when the user's ssh config says `HashKnownHosts yes`.
pub fn append(path: &Path, name: &str, openssh_key: &str, hashed: bool) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let shown = if hashed {
        hash_name(name)?
    } else {
        name.to_string()
    };
    let line = format!("{shown} {openssh_key}\n");
    // nix's flock, not std's File::lock: that needs Rust 1.89, above this crate's MSRV.
    let mut locked = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| std::io::Error::from(errno))?;
    locked.write_all(line.as_bytes())?;
    locked.sync_all()
}

/// OpenSSH's hashed host name: `|1|` base64(salt) `|` base64(HMAC-SHA1(salt, name)).
fn hash_name(name: &str) -> std::io::Result<String> {
    let salt: Vec<u8> = (0..20).map(|_| fastrand::u8(..)).collect();
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt).map_err(std::io::Error::other)?;
    mac.update(name.as_bytes());
    let hash = mac.finalize().into_bytes();
    Ok(format!(
        "|1|{}|{}",
        data_encoding::BASE64.encode(&salt),
        data_encoding::BASE64.encode(&hash)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    const ED_OTHER: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ";

    fn files(text: &str) -> Vec<(PathBuf, String)> {
        vec![(PathBuf::from("kh"), text.to_string())]
    }

    fn blob(b64: &str) -> Vec<u8> {
        data_encoding::BASE64
            .decode(b64.as_bytes())
            .expect("test key")
    }

    fn verdict(text: &str, name: &str, b64: &str) -> Verdict {
        let b = blob(b64);
        check_texts(
            &files(text),
            name,
            &WireKey {
                algorithm: "ssh-ed25519",
                blob: &b,
            },
        )
    }

    #[test]
    fn plain_entry_with_port() {
        let text = format!("[127.0.0.1]:2222 ssh-ed25519 {ED}\n");
        assert_eq!(
            verdict(&text, "[127.0.0.1]:2222", ED),
            Verdict::Known {
                file: "kh".into(),
                line: 1
            }
        );
        assert_eq!(verdict(&text, "127.0.0.1", ED), Verdict::Unknown);
    }

    #[test]
    fn changed_only_when_same_type_lines_exist_and_none_match() {
        let text = format!("box ssh-ed25519 {ED}\n");
        assert_eq!(
            verdict(&text, "box", ED_OTHER),
            Verdict::Changed {
                file: "kh".into(),
                line: 1
            }
        );
        let both = format!("box ssh-ed25519 {ED}\nbox ssh-ed25519 {ED_OTHER}\n");
        assert_eq!(
            verdict(&both, "box", ED_OTHER),
            Verdict::Known {
                file: "kh".into(),
                line: 2
            }
        );
        let other_type = "box ecdsa-sha2-nistp256 AAAA\n";
        assert_eq!(verdict(other_type, "box", ED), Verdict::Unknown);
    }

    #[test]
    fn hashed_entries_match() {
        // `ssh-keygen -H` of "box.example" with a fixed salt, computed once and pasted.
        let salt = data_encoding::BASE64.encode(b"0123456789abcdefghij");
        let mut mac =
            hmac::Hmac::<sha1::Sha1>::new_from_slice(b"0123456789abcdefghij").expect("key");
        mac.update(b"box.example");
        let hash = data_encoding::BASE64.encode(&mac.finalize().into_bytes());
        let text = format!("|1|{salt}|{hash} ssh-ed25519 {ED}\n");
        assert!(matches!(
            verdict(&text, "box.example", ED),
            Verdict::Known { .. }
        ));
        assert_eq!(verdict(&text, "other", ED), Verdict::Unknown);
    }

    #[test]
    fn wildcards_negation_case_and_tabs() {
        let text = format!("*.lab,!bad.lab\tssh-ed25519\t{ED}\n");
        assert!(matches!(
            verdict(&text, "GPU1.LAB", ED),
            Verdict::Known { .. }
        ));
        assert_eq!(verdict(&text, "bad.lab", ED), Verdict::Unknown);
    }

    #[test]
    fn revoked_key_is_refused_even_when_also_listed() {
        let text = format!("box ssh-ed25519 {ED}\n@revoked * ssh-ed25519 {ED}\n");
        assert_eq!(
            verdict(&text, "box", ED),
            Verdict::Revoked {
                file: "kh".into(),
                line: 2
            }
        );
    }

    #[test]
    fn cert_authority_lines_and_garbage_are_skipped() {
        let text =
            format!("@cert-authority box ssh-ed25519 {ED}\n# c\nnot a line\nbox ssh-ed25519 !!!\n");
        assert_eq!(verdict(&text, "box", ED), Verdict::Unknown);
    }

    #[test]
    fn recorded_algorithms_in_order() {
        let text = format!("box ecdsa-sha2-nistp256 {ED}\nbox ssh-ed25519 {ED}\nx ssh-rsa {ED}\n");
        assert_eq!(
            recorded_algorithms(&files(&text), "box"),
            vec!["ecdsa-sha2-nistp256", "ssh-ed25519"]
        );
    }

    #[test]
    fn glob_edge_cases() {
        assert!(crate::glob::matches("*", ""));
        assert!(crate::glob::matches("a*b?d", "axxbcd"));
        assert!(!crate::glob::matches("a*b", "axxc"));
        assert!(crate::glob::matches("[10.0.0.*]:22", "[10.0.0.5]:22"));
    }

    /// Thirty first connections at once (threads racing, as a fleet behind one new bastion
    /// does) leave thirty whole lines, each one OpenSSH reads; with `HashKnownHosts yes` the
    /// name is hashed, matches, and is not in the file.
    #[test]
    fn concurrent_appends_leave_whole_lines_and_hashed_names_match() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new/.ssh/known_hosts");
        let key = format!("ssh-ed25519 {ED}");
        std::thread::scope(|scope| {
            for i in 0..30 {
                let (path, key) = (&path, &key);
                scope.spawn(move || {
                    for j in 0..20 {
                        let name = format!("[10.0.{i}.{j}]:2222");
                        append(path, &name, key, false).expect("append");
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 600);
        assert!(
            text.lines()
                .all(|l| l.starts_with("[10.0.") && l.ends_with(&key)),
            "a torn line"
        );
        use std::os::unix::fs::PermissionsExt;
        let dir_mode = std::fs::metadata(path.parent().expect("dir"))
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);

        let hashed = dir.path().join("hashed");
        append(&hashed, "[box.example]:2222", &key, true).expect("append");
        let text = std::fs::read_to_string(&hashed).expect("read");
        assert!(
            text.starts_with("|1|") && !text.contains("box.example"),
            "{text}"
        );
        assert!(matches!(
            verdict(&text, "[box.example]:2222", ED),
            Verdict::Known { .. }
        ));
    }
}
