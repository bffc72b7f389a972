//! A helper shell's output streams split back into one reply per command: each command's
//! output ends with a line holding a per-run marker and a word (`shell`), found wherever the
//! channel's pieces happen to be cut.

use memchr::memmem::Finder;

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Piece {
    Data(Vec<u8>),
    /// The end line's word (the exit status on stdout).
    End(Vec<u8>),
}

/// Splits one stream at its end lines (`marker`, a word, a newline), holding back only what
/// could be the start of a marker cut between two pieces.
pub(super) struct Framer {
    finder: Finder<'static>,
    held: Vec<u8>,
}

impl Framer {
    pub(super) fn new(finder: Finder<'static>) -> Framer {
        Framer {
            finder,
            held: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, data: &[u8]) -> Vec<Piece> {
        self.held.extend_from_slice(data);
        let len = self.finder.needle().len();
        let mut pieces = Vec::new();
        loop {
            let Some(at) = self.finder.find(&self.held) else {
                // Only a tail that begins the marker: a streamed listing's last record waited
                // behind a marker's length of bytes until the box sent more.
                let needle = self.finder.needle();
                let keep = (1..len.min(self.held.len() + 1))
                    .rev()
                    .find(|&k| self.held.ends_with(&needle[..k]))
                    .unwrap_or(0);
                let free = self.held.len() - keep;
                if free > 0 {
                    pieces.push(Piece::Data(self.held.drain(..free).collect()));
                }
                return pieces;
            };
            if at > 0 {
                pieces.push(Piece::Data(self.held.drain(..at).collect()));
            }
            let Some(nl) = self.held[len..].iter().position(|b| *b == b'\n') else {
                return pieces;
            };
            let word = self.held[len..len + nl].to_vec();
            self.held.drain(..len + nl + 1);
            pieces.push(Piece::End(word));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What cannot be the start of an end line is handed on at once, whole; only a tail that
    /// begins the marker waits for the next piece.
    #[test]
    fn only_a_tail_that_begins_the_marker_is_held_back() {
        let mut f = Framer::new(Finder::new(b"@mark:").into_owned());
        assert_eq!(f.push(b"F\0record\0"), vec![data("F\0record\0")]);
        assert_eq!(f.push(b"more@ma"), vec![data("more")]);
        assert_eq!(f.push(b"y"), vec![data("@may")]);
        assert_eq!(f.push(b"@"), vec![]);
        assert_eq!(f.push(b"mark:0\n"), vec![Piece::End(b"0".to_vec())]);
    }

    fn data(s: &str) -> Piece {
        Piece::Data(s.as_bytes().to_vec())
    }

    #[test]
    fn end_lines_split_the_stream_wherever_the_pieces_are_cut() {
        let stream = b"listing\0a\0@m:0\n@m:1\ntar\nbytes@m@m:2\n";
        let whole = {
            let mut f = Framer::new(Finder::new(b"@m:").into_owned());
            f.push(stream)
        };
        assert_eq!(
            whole,
            vec![
                data("listing\0a\0"),
                Piece::End(b"0".to_vec()),
                Piece::End(b"1".to_vec()),
                data("tar\nbytes@m"),
                Piece::End(b"2".to_vec()),
            ]
        );
        // Cut at every place: the same commands get the same bytes and ends.
        for cut in 0..stream.len() {
            let mut f = Framer::new(Finder::new(b"@m:").into_owned());
            let mut got = f.push(&stream[..cut]);
            got.extend(f.push(&stream[cut..]));
            let (mut bytes, mut ends) = (Vec::new(), Vec::new());
            for p in got {
                match p {
                    Piece::Data(d) => bytes.extend(d),
                    Piece::End(w) => {
                        ends.push((bytes.len(), w));
                    }
                }
            }
            assert_eq!(bytes, b"listing\0a\0tar\nbytes@m", "cut at {cut}");
            assert_eq!(
                ends,
                vec![
                    (10, b"0".to_vec()),
                    (10, b"1".to_vec()),
                    (21, b"2".to_vec())
                ]
            );
        }
    }
}
