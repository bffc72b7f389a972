//! One channel, three streams: the probe loop writes its lines as they come, and the box's two
//! nvidia-smi loops (GPUs, compute apps) write theirs into the same pipe, each line tagged and
//! framed as `"\n<marker>:<tag> <line>\n"` in a single write. A write that small (the box cuts
//! the line first) is atomic on a pipe, so a tagged line is never torn, but it can land in the
//! middle of a probe line that the probe wrote in pieces. This puts the probe's lines back
//! together: the empty line right before a tagged line is the frame's own newline, and a
//! non-empty one is the head of a probe line whose tail follows the tagged line.
//!
//! A probe line is held until the next line shows whether it was whole, except the probe's own
//! marker lines (cycle, begin, end, done), which the probe writes whole in one write: they go
//! out at once, so a cycle is never held back waiting for the next one.

/// Where a line of the shared channel belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    Gpu(String),
    Apps(String),
    Probe(String),
}

use crate::probe::loops::{APPS_TAG, GPU_TAG, tag_prefix};

pub struct Demux {
    marker: String,
    gpu: String,
    apps: String,
    /// The last probe line, not yet known to be whole.
    held: Option<String>,
    /// The head of a probe line a tagged line landed in.
    head: Option<String>,
}

impl Demux {
    /// `marker` is the probe's marker (`@@rw-<nonce>`), which the tags extend.
    pub fn new(marker: &str) -> Self {
        Demux {
            marker: marker.to_string(),
            gpu: tag_prefix(marker, GPU_TAG),
            apps: tag_prefix(marker, APPS_TAG),
            held: None,
            head: None,
        }
    }

    /// One line of the channel in; what it completes out, in order (at most two: the probe
    /// line it shows was whole, and itself), with no allocation of its own on this per-line path.
    pub fn push(&mut self, mut line: String) -> impl Iterator<Item = Routed> + use<> {
        let tag = if line.starts_with(&self.gpu) {
            Some((self.gpu.len(), true))
        } else if line.starts_with(&self.apps) {
            Some((self.apps.len(), false))
        } else {
            None
        };
        if let Some((prefix, gpu)) = tag {
            line.replace_range(..prefix, "");
            // An empty held line is the frame's own newline: the frame came between two probe
            // lines. A non-empty one is the head of the line the frame landed in.
            self.head = self.held.take().filter(|held| !held.is_empty());
            let tagged = if gpu {
                Routed::Gpu(line)
            } else {
                Routed::Apps(line)
            };
            return [Some(tagged), None].into_iter().flatten();
        }
        let line = match self.head.take() {
            Some(head) => head + &line,
            None => line,
        };
        let whole = self.held.take().map(Routed::Probe);
        let now = if line.starts_with(&self.marker) {
            Some(Routed::Probe(line))
        } else {
            self.held = Some(line);
            None
        };
        [whole, now].into_iter().flatten()
    }

    /// What is still held when the channel ends: the probe's last line, whole or not.
    pub fn finish(&mut self) -> Option<String> {
        self.head.take().or_else(|| self.held.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::LineSplitter;
    use proptest::prelude::*;

    const M: &str = "@@rw-00000000000000ff";

    /// A frame as the box's printf writes it.
    fn frame(tag: char, line: &str) -> Vec<u8> {
        format!("\n{}{line}\n", tag_prefix(M, tag)).into_bytes()
    }

    /// Feeds `writes` through the transport's splitter and the demux, as the channel would.
    fn run(writes: &[Vec<u8>]) -> Vec<Routed> {
        let mut split = LineSplitter::new(1 << 16);
        let mut demux = Demux::new(M);
        let mut out = Vec::new();
        for w in writes {
            for line in split.push(w) {
                out.extend(demux.push(line));
            }
        }
        if let Some(rest) = split.finish() {
            out.extend(demux.push(rest));
        }
        out.extend(demux.finish().map(Routed::Probe));
        out
    }

    #[test]
    fn a_tagged_line_inside_a_probe_line_leaves_it_whole() {
        let out = run(&[
            b"12345.6 ".to_vec(),
            frame('g', "0, 1980"),
            b"7.8\n".to_vec(),
            format!("{M} done\n").into_bytes(),
        ]);
        assert_eq!(
            out,
            [
                Routed::Gpu("0, 1980".into()),
                Routed::Probe("12345.6 7.8".into()),
                Routed::Probe(format!("{M} done")),
            ]
        );
    }

    #[test]
    fn tagged_lines_between_probe_lines_add_no_empty_line_and_keep_real_ones() {
        let out = run(&[
            b"a\n\n".to_vec(),
            frame('a', "pid, process_name"),
            frame('g', "0, 5"),
            b"b\n".to_vec(),
        ]);
        assert_eq!(
            out,
            [
                Routed::Probe("a".into()),
                Routed::Probe("".into()),
                Routed::Apps("pid, process_name".into()),
                Routed::Gpu("0, 5".into()),
                Routed::Probe("b".into()),
            ]
        );
    }

    #[test]
    fn a_marker_line_goes_out_at_once_and_a_plain_line_waits_for_the_next() {
        let mut demux = Demux::new(M);
        let mut push = |line: String| demux.push(line).collect::<Vec<_>>();
        assert_eq!(
            push(format!("{M} cycle 3")),
            [Routed::Probe(format!("{M} cycle 3"))]
        );
        assert!(push("0.00 0.00".into()).is_empty());
        assert_eq!(
            push(format!("{M} done")),
            [
                Routed::Probe("0.00 0.00".into()),
                Routed::Probe(format!("{M} done"))
            ]
        );
    }

    /// A probe line from another nonce's tags is the probe's: only this channel's tags route.
    #[test]
    fn another_channels_tag_is_a_probe_line() {
        let other = "@@rw-0000000000000001:g 0, 5";
        assert!(Demux::new(M).push(other.into()).next().is_none());
    }

    #[derive(Debug, Clone)]
    enum Piece {
        /// Probe bytes, written in pieces cut anywhere.
        Probe(String, Vec<usize>),
        /// A probe marker line, written whole.
        Marker(u8),
        Tagged(bool, String),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            ("[a-z ,.\n]{0,40}", prop::collection::vec(0usize..40, 0..4))
                .prop_map(|(t, cuts)| Piece::Probe(t, cuts)),
            any::<u8>().prop_map(Piece::Marker),
            (any::<bool>(), "[0-9a-z ,]{0,20}").prop_map(|(g, t)| Piece::Tagged(g, t)),
        ]
    }

    proptest! {
        /// Whatever the probe writes, however its writes are cut and wherever tagged lines
        /// land between them, the probe's lines come out as the probe wrote them and every
        /// tagged line comes out whole, in order.
        #[test]
        fn the_probe_reads_as_if_alone_and_tagged_lines_as_written(
            pieces in prop::collection::vec(piece(), 0..40)
        ) {
            let mut writes = Vec::new();
            let mut probe_text = String::new();
            let mut tagged = Vec::new();
            for p in &pieces {
                match p {
                    Piece::Probe(text, cuts) => {
                        probe_text.push_str(text);
                        let mut at = 0;
                        let mut cuts = cuts.iter().map(|c| c % (text.len() + 1)).collect::<Vec<_>>();
                        cuts.sort_unstable();
                        for c in cuts.into_iter().chain([text.len()]) {
                            writes.push(text.as_bytes()[at..c].to_vec());
                            at = c;
                        }
                    }
                    Piece::Marker(n) => {
                        let line = format!("{M} cycle {n}\n");
                        probe_text.push_str(&line);
                        writes.push(line.into_bytes());
                    }
                    Piece::Tagged(gpu, text) => {
                        let tag = if *gpu { GPU_TAG } else { APPS_TAG };
                        writes.push(frame(tag, text));
                        tagged.push(if *gpu {
                            Routed::Gpu(text.clone())
                        } else {
                            Routed::Apps(text.clone())
                        });
                    }
                }
            }
            let alone = run(&[probe_text.into_bytes()]);
            let out = run(&writes);
            let probe: Vec<_> = out.iter().filter(|r| matches!(r, Routed::Probe(_))).cloned().collect();
            let others: Vec<_> = out.into_iter().filter(|r| !matches!(r, Routed::Probe(_))).collect();
            prop_assert_eq!(probe, alone);
            prop_assert_eq!(others, tagged);
        }
    }
}
