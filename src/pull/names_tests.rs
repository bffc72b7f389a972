//! Tests of `names`, beside it so the module reads in one sitting.

use std::os::unix::ffi::OsStrExt as _;

use super::*;

#[test]
fn names_round_trip_whatever_their_bytes() {
    for name in [
        b"/w/plain.pt".as_slice(),
        b"/w/caf\xe9.pt",
        b"/w/back\\slash\\x41",
        b"/w/\xff\xfe\n",
        "/w/ünï €".as_bytes(),
    ] {
        let text = escape(name);
        assert_eq!(unescape(&text), name, "{text}");
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(name));
        assert_eq!(to_path(&of_path(path)), path, "{text}");
    }
    assert_eq!(escape(b"/w/caf\xe9"), "/w/caf\\xe9");
    assert_eq!(escape(b"a\\b"), "a\\\\b");
    // A newline is shown, not dropped: not like "ab", nor like a backslash and an n.
    assert_eq!(escape(b"a\nb"), "a\\x0ab");
    assert_ne!(crate::sanitize::line(&escape(b"a\nb"), 80), "ab");
    assert_ne!(escape(b"a\nb"), escape(b"a\\nb"));
    assert_eq!(as_utf8("/w/caf\\xe9"), None);
    assert_eq!(as_utf8("/w/a\\\\b").as_deref(), Some("/w/a\\b"));
}

/// The shortcut for a plain ASCII name gives what escaping it a char at a time gives, for
/// every byte a name may hold beside plain ones (controls, DEL, `\`, bytes past ASCII).
#[test]
fn a_plain_name_s_shortcut_escapes_as_the_long_way_does() {
    for b in 1..=255u8 {
        for name in [vec![b], [b"/w/a".as_slice(), &[b], b"z.json"].concat()] {
            assert_eq!(escape(&name), escape_each(&name), "byte {b:#04x}");
            assert_eq!(unescape(&escape(&name)), name, "byte {b:#04x}");
        }
    }
    assert_eq!(escape(b"/w/m 1~.json"), "/w/m 1~.json");
    assert_eq!(escape(b"/w/\x7f"), "/w/\\x7f");
    for text in ["/w/plain", "/w/a\\x41", "/w/a\\\\b", "/w/a\\"] {
        assert_eq!(quoted_len(text), shell_quote(text).len(), "{text}");
    }
    assert_eq!(quoted_len("it's"), shell_quote("it's").len());
}

#[test]
fn a_batch_is_as_long_as_its_words_not_four_bytes_a_byte() {
    // Plain names of 60 bytes, named twice: 200 fit in one command.
    let plain: Vec<String> = (0..400)
        .map(|i| format!("/w/{}/m{i:06}.json", "d".repeat(45)))
        .collect();
    let split = batches(&plain, String::as_str, 200, Naming::with_text(2));
    assert_eq!(
        split.iter().map(|b| b.len()).collect::<Vec<_>>(),
        [200, 200]
    );
    // Whatever the names, the words a batch makes, with the command's text around each,
    // fit the bound.
    let mixed: Vec<String> = (0..3000)
        .map(|i| match i % 3 {
            0 => format!("/w/{}\\xff{i}", "n".repeat(200)),
            1 => format!("/w/it's {}{i}", "q'".repeat(100)),
            _ => format!("/w/{}{i}", "p".repeat(300)),
        })
        .collect();
    for batch in batches(&mixed, String::as_str, usize::MAX, Naming::with_text(2)) {
        let mut words = Words::default();
        let said: Vec<String> = batch.iter().map(|n| words.word(n)).collect();
        let around = " ".repeat(PER_USE - 1);
        let twice = said.iter().chain(&said);
        let text: String = twice.map(|w| format!("{w}{around}")).collect();
        let text = format!("{}{text}", words.preamble());
        assert!(text.len() <= COMMAND_BYTES, "{} bytes", text.len());
    }
}

/// The folder a command's names share is written once; `sh` rebuilds every name's bytes
/// from it (quotes, spaces, `$`, a backslash, one that is not UTF-8 and so written whole),
/// and the text `ArgsText` counts is the text `as_args` writes.
#[test]
fn a_shared_folder_is_written_once_and_sh_rebuilds_every_name() {
    let folder = "/w/it's a \"run\" $(x)/cells";
    let names: Vec<String> = vec![
        format!("{folder}/a/e1.json"),
        format!("{folder}/b/it's.json"),
        format!("{folder}/a/caf\\xe9"),
        format!("{folder}/a/back\\\\slash"),
        format!("{folder}/a/--rf"),
    ];
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let text = as_args(&refs);
    assert_eq!(text.matches("run").count(), 1, "{text}");
    let counted = |names: &[&str]| {
        let mut counted = ArgsText::default();
        names.iter().for_each(|n| counted.add(n));
        counted.bytes()
    };
    // Exact for UTF-8 names; a name rebuilt by printf is counted at its most.
    let utf8: Vec<&str> = refs
        .iter()
        .copied()
        .filter(|n| as_utf8(n).is_some())
        .collect();
    assert_eq!(counted(&utf8), as_args(&utf8).len());
    assert!(counted(&refs) >= text.len(), "{text}");
    let said = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{text}printf '%s\\0' \"$@\""))
        .output()
        .expect("sh");
    let got: Vec<&[u8]> = said
        .stdout
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .collect();
    let want: Vec<Vec<u8>> = refs.iter().map(|n| unescape(n)).collect();
    assert_eq!(got, want.iter().map(Vec::as_slice).collect::<Vec<_>>());
    // Names with no folder worth sharing are written out.
    let short = as_args(&["/a", "/b/c"]);
    assert!(!short.contains("rw_p"), "{short}");
}

#[test]
fn non_utf8_names_become_printf_rebuilt_variables() {
    let mut words = Words::default();
    assert_eq!(words.word("/w/it's"), "'/w/it'\\''s'");
    assert_eq!(words.word("/w/\\xff"), "\"$rw_n0\"");
    assert_eq!(
        words.preamble(),
        "rw_n0=$(printf '\\057\\167\\057\\377x'); rw_n0=${rw_n0%x}\n"
    );
}
