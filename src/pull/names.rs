//! Remote file names as bytes, carried through rigwatch as text that round-trips. A Unix name
//! is any bytes but `/` and NUL; most are UTF-8, some are not (a Latin-1 upload, a broken
//! archive). Such a name must neither be lost nor "vanish" between the listing and the check, so
//! every remote path is kept in one escaped form: UTF-8 as it is, `\` doubled, and every byte
//! that is not part of valid UTF-8 written `\xNN`. The escaped form is what the ledger stores and
//! what compares; the bytes come back only where they meet the box or the local disk.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// Bytes from the box, in their escaped text form.
pub fn escape(bytes: &[u8]) -> String {
    // Most names are printable ASCII without a `\`: their own escaped form, copied as they
    // are (escaping them char by char was 2-3 % of a 100 000-file pull's CPU).
    if bytes.iter().all(|&b| is_plain(b)) {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    escape_each(bytes)
}

/// A byte that stands for itself in the escaped form wherever it is.
fn is_plain(b: u8) -> bool {
    (b' '..=b'~').contains(&b) && b != b'\\'
}

/// `escape`, a char at a time.
fn escape_each(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if c.is_control() {
                // Shown as its bytes, never dropped by the terminal's sanitizer: a name with a
                // newline must not look like one without it (a literal backslash is `\\`).
                let mut utf8 = [0u8; 4];
                for b in c.encode_utf8(&mut utf8).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The bytes an escaped name stands for. Text that is not in the escaped form (an old ledger
/// entry) comes back as its own UTF-8 bytes, with a lone `\` kept as it is.
pub fn unescape(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    // Only a `\` starts anything but itself.
    if memchr::memchr(b'\\', bytes).is_none() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
            if bytes.get(i + 1) == Some(&b'x') {
                let hex = text
                    .get(i + 2..i + 4)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(b) = hex {
                    out.push(b);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// The escaped name as a local file name component (Unix keeps the bytes as they are).
pub fn to_os(text: &str) -> OsString {
    OsString::from_vec(unescape(text))
}

/// A local path in the ledger's escaped form, so names that are not UTF-8 stay distinct and
/// come back as the same bytes.
pub fn of_path(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    escape(path.as_os_str().as_bytes())
}

/// The local path an escaped ledger entry stands for.
pub fn to_path(text: &str) -> std::path::PathBuf {
    to_os(text).into()
}

/// The name as UTF-8 when it is one; SFTP (russh-sftp) only carries UTF-8 names.
pub fn as_utf8(text: &str) -> Option<String> {
    String::from_utf8(unescape(text)).ok()
}

/// Shell words for remote names inside one `sh -c` script. A UTF-8 name is single-quoted; a name
/// that is not UTF-8 cannot be written in the (UTF-8) command text, so the script first rebuilds
/// its bytes with `printf` octal escapes into a variable, and the word is that variable, quoted.
#[derive(Debug, Default)]
pub struct Words {
    preamble: String,
    vars: usize,
}

impl Words {
    pub fn word(&mut self, escaped: &str) -> String {
        let bytes = unescape(escaped);
        if let Ok(text) = std::str::from_utf8(&bytes) {
            return shell_quote(text);
        }
        let var = format!("rw_n{}", self.vars);
        self.vars += 1;
        let octal: String = bytes.iter().map(|b| format!("\\{b:03o}")).collect();
        // `x` keeps a trailing newline of the name from being eaten by $(…).
        self.preamble
            .push_str(&format!("{var}=$(printf '{octal}x'); {var}=${{{var}%x}}\n"));
        format!("\"${var}\"")
    }

    /// The assignments the words rely on; goes before the script that uses them.
    pub fn preamble(&self) -> &str {
        &self.preamble
    }
}

/// `paths` as the script's arguments (`set -- …`), for what follows to name as `"$@"`: each
/// name is written once however many tools read it. A tar batch named each file four times
/// (two hashing tools, tar, the second look), so its command held a quarter of the files, and
/// each batch's process starts were most of the box's CPU on a many-file pull. The folder the
/// names share is written once too (`rw_p`, each name `"$rw_p"'…'`): a batch's names mostly
/// differ only past a long one.
pub fn as_args(paths: &[&str]) -> String {
    let mut counted = ArgsText::default();
    paths.iter().for_each(|p| counted.add(p));
    let folder = counted.shared();
    let mut words = Words::default();
    let quoted: Vec<String> = paths
        .iter()
        .map(|p| match (as_utf8(p), folder) {
            (Some(text), Some(f)) => format!("{FOLDER_WORD}{}", shell_quote(&text[f.len()..])),
            _ => words.word(p),
        })
        .collect();
    let set_folder = folder
        .map(|f| format!("{FOLDER_VAR}={}\n", shell_quote(f)))
        .unwrap_or_default();
    format!(
        "{}{set_folder}set -- {}\n",
        words.preamble(),
        quoted.join(" ")
    )
}

/// The variable `as_args` sets to the names' shared folder, and the word each name starts with.
const FOLDER_VAR: &str = "rw_p";
const FOLDER_WORD: &str = "\"$rw_p\"";

/// `path` up to and with its last `/`.
fn folder_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// The longest folder (ending in `/`) both `folder` and `path` are under. A cut just past a
/// `/` (ASCII) is always at a character's edge.
fn common_folder<'f>(folder: &'f str, path: &str) -> &'f str {
    let same = folder
        .bytes()
        .zip(path.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    folder_of(&folder[..same])
}

/// Whether naming `folder` once saves text: each name's word then starts with `"$rw_p"`
/// (7 bytes) instead of the folder.
fn worth_sharing(folder: &str) -> bool {
    folder.len() > FOLDER_WORD.len() + 1
}

/// How long `as_args`'s text is for a list of names as it grows, each added in turn: a tar
/// batch is cut where the next name would take its command past the box's bound. Exact for
/// UTF-8 names; one that is not is counted at its most (`Naming::cost`).
#[derive(Debug, Default)]
pub struct ArgsText {
    folder: Option<String>,
    utf8: usize,
    /// Each UTF-8 name's word written whole, and the space after it.
    utf8_words: usize,
    others: usize,
}

impl ArgsText {
    pub fn add(&mut self, escaped: &str) {
        let Some(text) = as_utf8(escaped) else {
            self.others += Naming::listed(1).cost(escaped);
            return;
        };
        match &mut self.folder {
            None => self.folder = Some(folder_of(&text).to_string()),
            Some(f) => {
                let shared = common_folder(f, &text).len();
                f.truncate(shared);
            }
        }
        self.utf8 += 1;
        self.utf8_words += quoted_len(&text) + 1;
    }

    /// The folder (ending in `/`) every UTF-8 name so far is under, where writing it once is
    /// shorter than in each name.
    fn shared(&self) -> Option<&str> {
        self.folder.as_deref().filter(|f| worth_sharing(f))
    }

    pub fn bytes(&self) -> usize {
        // `set -- ` and the newline; the last word's space is not written, the newline is.
        let plain = ("set -- \n".len() + self.utf8_words + self.others).saturating_sub(1);
        match self.shared() {
            // `'folder'` less `"$rw_p"` a name, and `rw_p='folder'` once.
            Some(f) => {
                let quoted = shell_quote(f).len();
                plain - self.utf8 * (quoted - 2 - FOLDER_WORD.len()) + FOLDER_VAR.len() + 2 + quoted
            }
            None => plain,
        }
    }
}

/// How long `shell_quote(text)` is, without writing it: each `'` takes four bytes, and the
/// quotes around it two.
fn quoted_len(text: &str) -> usize {
    text.len() + 2 + 3 * memchr::memchr_iter(b'\'', text.as_bytes()).count()
}

/// The most a command carrying remote names may hold: sshd hands the command to the login shell
/// as one argument, which Linux caps at 128 KiB (past it the box cannot start it at all), so a
/// list the box makes long (links, files to hash) is split into commands this size at most.
pub const COMMAND_BYTES: usize = 64 * 1024;

/// How a command names each of its files: how many times, and the most text it writes around
/// each use.
#[derive(Debug, Clone, Copy)]
pub struct Naming {
    pub uses: usize,
    pub around: usize,
}

impl Naming {
    /// `uses` times, with up to `PER_USE` bytes of text around each (the most any command writes:
    /// `resolve_command`'s readlink and printf line).
    pub const fn with_text(uses: usize) -> Naming {
        Naming {
            uses,
            around: PER_USE,
        }
    }

    /// `uses` times as a bare word in a list (a space after each).
    pub const fn listed(uses: usize) -> Naming {
        Naming { uses, around: 1 }
    }

    /// What `escaped` adds to a command that names it this way: its word and the text around it
    /// each time, and for a name that is not UTF-8, the printf line that rebuilds it (four bytes
    /// a byte), once. Counting every name at four bytes a byte, as if none were UTF-8, cut a
    /// re-pull's hashing of 2 200 plain names into 17 commands where 12 do; counting a hash list's
    /// bare words as if each carried a readlink line cut it into 13 where 8 do.
    pub fn cost(self, escaped: &str) -> usize {
        let bytes = unescape(escaped);
        let Naming { uses, around } = self;
        match std::str::from_utf8(&bytes) {
            Ok(text) => (shell_quote(text).len() + around) * uses,
            // `rw_nN=$(printf '…x'); rw_nN=${rw_nN%x}` once a script, `"$rw_nN"` per use.
            Err(_) => bytes.len() * 4 + 48 + (16 + around) * uses,
        }
    }
}

/// `names` in order, in batches of at most `most` names whose words (`Words::word`) stay within
/// [`COMMAND_BYTES`]; each name is counted as its command names it (`Naming`). A name longer
/// than the bound alone is a batch of its own (no path on a box is: PATH_MAX is 4096).
pub fn batches<T>(
    items: &[T],
    name: impl Fn(&T) -> &str,
    most: usize,
    naming: Naming,
) -> Vec<&[T]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let cost = naming.cost(name(item));
        if i > start && (i - start == most || bytes + cost > COMMAND_BYTES) {
            out.push(&items[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += cost;
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

/// The most a command's names may take as its tools get them (each name whole, and its
/// pointer): Linux lets a command's arguments and environment take a quarter of the stack
/// limit, 2 MiB on most boxes (on a box whose limit is under 1 MiB, a full command is refused).
pub const ARGS_BYTES: usize = 256 * 1024;

/// How far one command that names files as its arguments (`as_args`) may go.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub files: usize,
    /// Bytes of the files together (each tool reads them all).
    pub bytes: u64,
    /// Bytes of `as_args`'s text: the command's own text is the rest of its bound.
    pub text: usize,
}

/// `items` in order, in batches within `bounds`, each name counted as `as_args` writes it (the
/// names' shared folder once, `ArgsText`) and, whole, as the tools get it (`ARGS_BYTES`). A
/// name past a bound alone is a batch of its own.
pub fn arg_batches<'a, T>(
    items: &'a [T],
    name: impl Fn(&'a T) -> &'a str,
    size: impl Fn(&'a T) -> u64,
    bounds: Bounds,
) -> Vec<&'a [T]> {
    let mut out = Vec::new();
    let (mut start, mut bytes, mut args) = (0, 0u64, 0usize);
    let mut text = ArgsText::default();
    for (i, item) in items.iter().enumerate() {
        let (path, size) = (name(item), size(item));
        // The name as the tools get it (at most its escaped length) and its pointer.
        let arg = path.len() + 9;
        text.add(path);
        let full = i - start == bounds.files
            || bytes + size > bounds.bytes
            || args + arg > ARGS_BYTES
            || text.bytes() > bounds.text;
        if full && i > start {
            // The item starts the next batch, its text alone.
            out.push(&items[start..i]);
            (start, bytes, args) = (i, 0, 0);
            text = ArgsText::default();
            text.add(path);
        }
        bytes += size;
        args += arg;
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

/// The most text a command writes around one use of a name (`resolve_command`'s readlink and
/// printf line is the longest, ~60 bytes).
const PER_USE: usize = 64;

pub use crate::sanitize::shell_quote;

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
