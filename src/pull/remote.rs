//! What the box holds under the pull paths, and its SHA-256 of each file: the shell commands
//! rigwatch runs for them and the pure parsers of what they print.
//!
//! The listing's rule, stated once: rigwatch lists every regular file under each pull path with
//! GNU `find -H` (a pull path that is itself a link is followed; links inside it are not). Every
//! link met inside is resolved on the box; it is accepted only when it points at a file or folder
//! that is itself inside a pull path's real location (its bytes are pulled there, so nothing is
//! lost and nothing is pulled twice). A link pointing anywhere else (`/`, a home folder, another
//! disk), a dangling link, a link loop, a folder rigwatch cannot read or enter, a FIFO or device,
//! a `find` that fails or times out, and output that cannot be parsed are each a [`Problem`]: the
//! pull names it and the teardown guard refuses until it is gone or its target is a pull path.
//! Nothing under a pull path is ever skipped silently. Names travel as bytes (see `names`).

pub use super::box_hash::{HashOutput, big_file_hash_command, hash_command, parse_hashes};
pub use super::listing::parse_listing;
pub use super::names::shell_quote;
use super::names::{Words, escape};

/// How long one `find` or one hashing batch may run on the box before it is killed: a hung
/// network mount must not hold a channel (and its slot) forever.
pub const FIND_TIMEOUT_SECS: u64 = 110;

/// One regular file on the box under a configured pull path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteFile {
    /// The escaped name (`names::escape`).
    pub path: String,
    pub size: u64,
    /// Whole seconds since the epoch.
    pub mtime: i64,
    /// `mtime ctime inode`, mtime and ctime to the nanosecond: a rewrite of the same size in the
    /// same second still changes the ctime, and a replace-by-rename changes the inode.
    pub stamp: String,
    /// Which configured path matched it.
    pub root: usize,
    /// Permission bits as the box has them (`find`'s `%m`); the local copy keeps them, less
    /// setuid, setgid and sticky.
    pub mode: u32,
}

/// Why part of a pull path could not be listed (or is not something rigwatch pulls).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Unreadable(String),
    /// A regular file the login user cannot read (`user`, as the box named it).
    UnreadableFile {
        path: String,
        user: String,
    },
    Link {
        path: String,
        target: String,
        why: LinkWhy,
    },
    /// A FIFO, socket or device; `kind` is find's `%y` letter.
    Special {
        path: String,
        kind: String,
    },
    ListingFailed {
        root: String,
        why: String,
    },
    Garbled(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkWhy {
    Dangling,
    Loop,
    /// Points outside every pull path's real location.
    Outside,
    /// The box could not say where it points.
    Unresolved,
}

impl Problem {
    /// The remote path (or pull path) the problem is about, escaped.
    pub fn path(&self) -> &str {
        match self {
            Problem::Unreadable(p)
            | Problem::UnreadableFile { path: p, .. }
            | Problem::Link { path: p, .. }
            | Problem::Special { path: p, .. }
            | Problem::ListingFailed { root: p, .. }
            | Problem::Garbled(p) => p,
        }
    }

    /// What is wrong and what to do, without the path.
    pub fn why(&self) -> String {
        let clean = |s: &str| crate::sanitize::line(s, 200);
        match self {
            Problem::Unreadable(_) => "a folder rigwatch cannot read or enter (permissions): \
                                       make it readable, or it is not pulled"
                .into(),
            Problem::UnreadableFile { user, .. } => format!(
                "cannot be read by {} (permissions): make it readable to that user, or it is \
                 not pulled",
                clean(user)
            ),
            Problem::Link { target, why, .. } => match why {
                LinkWhy::Dangling => format!(
                    "a link to {} which does not exist: remove the link or restore its target",
                    clean(target)
                ),
                LinkWhy::Loop => format!("a link loop through {}", clean(target)),
                LinkWhy::Outside => format!(
                    "a link to {}, outside the pull paths (links are not followed): add {} to \
                     [host.pull] paths",
                    clean(target),
                    clean(target)
                ),
                LinkWhy::Unresolved => {
                    format!("a link to {} that the box could not resolve", clean(target))
                }
            },
            Problem::Special { kind, .. } => format!(
                "not a regular file (find type {}): rigwatch cannot pull it; move it out of \
                 the pull path",
                clean(kind)
            ),
            Problem::ListingFailed { why, .. } => {
                format!("could not be listed completely: {}", clean(why))
            }
            Problem::Garbled(_) => "the listing's output could not be read".into(),
        }
    }
}

/// A link inside the pull paths whose target is pulled through a pull path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoveredLink {
    pub path: String,
    pub target: String,
}

/// A link the listing found, waiting for the box to resolve it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingLink {
    pub path: String,
    /// find's `%Y`: the target's type (`f`, `d`, …), `N` dangling, `L` loop.
    pub kind: String,
    pub raw_target: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub files: Vec<RemoteFile>,
    /// Configured paths that matched nothing on the box.
    pub unmatched: Vec<String>,
    pub problems: Vec<Problem>,
    /// Links not yet judged; [`settle_links`] empties it.
    pub pending: Vec<PendingLink>,
    pub covered: Vec<CoveredLink>,
    /// Real (link-free) locations of what each pull path matched.
    pub bases: Vec<String>,
    /// The box's `$HOME`, which `~/` paths expand to.
    pub home: Option<String>,
    /// The login user, as the box names it (who could not read what).
    pub user: Option<String>,
}

/// A configured path as one shell word: everything quoted except the glob characters, so
/// `/w/run/*.pt` still expands and nothing else in it is interpreted; `~/` stays a tilde prefix.
/// A backslash makes the next character literal (`exp\[lr=0.1]` is the folder of that name,
/// not a one-character class).
pub fn glob_word(path: &str) -> String {
    let (prefix, rest) = match path.strip_prefix("~/") {
        Some(rest) => ("~/", rest),
        None => ("", path),
    };
    let mut word = String::from(prefix);
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(literal) = chars.next() {
                word.push('\\');
                word.push(literal);
            }
            continue;
        }
        if matches!(c, '*' | '?' | '[' | ']' | '/' | '.' | '_' | '-') || c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            word.push('\\');
            word.push(c);
        }
    }
    word
}

pub(super) const TIMEOUT_PREAMBLE: &str =
    "T=''; command -v timeout >/dev/null 2>&1 && T='timeout -k 5'\n";

/// The listing is made of GNU find's `-printf` and `-readable`: where a `find` failed, whether
/// the box's find lacks them (busybox's, on Alpine) is asked, and said as `@nofind`, not as
/// each path's failed find with busybox's usage text. Only a failed find pays for the look.
const NO_GNU_FIND: &str =
    "find / -prune -readable -printf '' >/dev/null 2>&1 || printf '@nofind\\0'";

/// Lists every path as NUL-separated records (names are bytes; only `/` and NUL cannot be in
/// them). Each configured path's block starts with `@root N`; each thing it matched with `@base`
/// (as matched, and its real location); each `find` ends with `@exit` and its status; the whole
/// listing with `@end`.
pub fn listing_command(paths: &[String]) -> String {
    let mut script = String::from("LC_ALL=C; export LC_ALL\n");
    script.push_str(TIMEOUT_PREAMBLE);
    script.push_str("printf '@home\\0%s\\0' \"$HOME\"\n");
    script.push_str("printf '@user\\0%s\\0' \"$(id -un 2>/dev/null || echo \"$USER\")\"\n");
    let find = format!(
        "${{T:+$T {FIND_TIMEOUT_SECS}}} find -H \"$f\" \
         \\( -type f ! -readable -printf 'P\\0%p\\0' \\) -o \
         \\( -type f -printf 'F\\0%s\\0%T@\\0%C@\\0%i\\0%m\\0%p\\0' \\) -o \
         \\( -type l -printf 'L\\0%Y\\0%p\\0%l\\0' \\) -o \
         \\( -type d \\( ! -readable -o ! -executable \\) -printf 'U\\0%p\\0' -prune \\) -o \
         \\( ! -type d -printf 'O\\0%y\\0%p\\0' \\)"
    );
    for (i, p) in paths.iter().enumerate() {
        script.push_str(&format!(
            "printf '@root\\0%s\\0' {i}\n\
             for f in {}; do {{ [ -e \"$f\" ] || [ -L \"$f\" ]; }} || continue; \
             r=$(readlink -f -- \"$f\" && printf x); printf '@base\\0%s\\0%s\\0' \"$f\" \"${{r%?x}}\"; \
             {find}; e=$?; [ $e = 0 ] || {NO_GNU_FIND}; printf '@exit\\0%s\\0' $e; done\n",
            glob_word(p)
        ));
    }
    // The last record: a listing without it was cut on the way, even on a record's boundary
    // and with a clean exit (`kubectl exec` can lose a stream's end and exit 0).
    script.push_str("printf '@end\\0'\n");
    script
}

/// Asks the box where each pending link really points (`readlink -f`), one record per link, in
/// commands of bounded size (`names::batches`): their outputs, in order, are one per link.
pub fn resolve_commands(links: &[PendingLink]) -> Vec<String> {
    super::names::batches(
        links,
        |l| l.path.as_str(),
        usize::MAX,
        super::names::Naming::with_text(1),
    )
    .into_iter()
    .map(resolve_command)
    .collect()
}

fn resolve_command(links: &[PendingLink]) -> String {
    let mut words = Words::default();
    let body: String = links
        .iter()
        .map(|l| {
            format!(
                "r=$(readlink -f -- {} && printf x); printf 'R\\0%s\\0' \"${{r%?x}}\"\n",
                words.word(&l.path)
            )
        })
        .collect();
    format!("{}{body}", words.preamble())
}

pub fn parse_resolved(out: &[u8]) -> Vec<Option<String>> {
    // Only NUL-terminated fields count: a last one without its NUL was cut.
    let Some(end) = out.iter().rposition(|b| *b == 0) else {
        return Vec::new();
    };
    let mut fields = out[..end].split(|b| *b == 0);
    let mut resolved = Vec::new();
    while let (Some(&[b'R']), Some(r)) = (fields.next(), fields.next()) {
        resolved.push((!r.is_empty()).then(|| escape(r)));
    }
    resolved
}

/// Judges every pending link by the rule at the top of this file. `resolved` is one entry per
/// pending link in order (fewer, or an error, leaves the rest unresolved: refused).
pub fn settle_links(listing: &mut Listing, resolved: Result<Vec<Option<String>>, String>) {
    let resolved = resolved.unwrap_or_default();
    let pending = std::mem::take(&mut listing.pending);
    for (i, link) in pending.into_iter().enumerate() {
        let real = resolved.get(i).cloned().flatten();
        let inside = real
            .as_deref()
            .is_some_and(|r| listing.bases.iter().any(|b| under(r, b)));
        let why = match (link.kind.as_str(), &real) {
            ("N", _) => Some(LinkWhy::Dangling),
            ("L", _) => Some(LinkWhy::Loop),
            (_, None) => Some(LinkWhy::Unresolved),
            ("f" | "d", Some(_)) if inside => None,
            _ => Some(LinkWhy::Outside),
        };
        let target = real.unwrap_or(link.raw_target);
        match why {
            None => listing.covered.push(CoveredLink {
                path: link.path,
                target,
            }),
            Some(why) => listing.problems.push(Problem::Link {
                path: link.path,
                target,
                why,
            }),
        }
    }
}

fn under(path: &str, base: &str) -> bool {
    let base = base.trim_end_matches('/');
    path == base || base.is_empty() || path.strip_prefix(base).is_some_and(|r| r.starts_with('/'))
}

#[cfg(test)]
#[path = "remote_tests.rs"]
pub(super) mod tests;
