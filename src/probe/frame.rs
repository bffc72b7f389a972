//! Splits the periodic probe's output into its sections. The script frames each section as
//! `@@rw-NONCE begin NAME` … `@@rw-NONCE end NAME STATUS`, a cycle as `@@rw-NONCE cycle EPOCH` …
//! `@@rw-NONCE done`; the nonce is per session, so text from the box cannot forge a frame.

use super::error::ParseError;
use super::script::SECTION_CAP_BYTES;

const PROBE: &str = "probe frame";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSection {
    pub name: String,
    pub body: String,
    /// The section command's exit status; None when the frame was cut off.
    pub status: Option<i32>,
    /// The body went past [`SECTION_CAP_BYTES`]; what is kept is its beginning.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawCycle {
    /// The loop's cycle counter; slow sections appear only in some cycles.
    pub number: Option<u64>,
    pub sections: Vec<RawSection>,
}

impl RawCycle {
    pub fn section(&self, name: &str) -> Option<&RawSection> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Carries over the sections this cycle did not run (the slow ones) from an earlier cycle.
    pub fn fill_from(&mut self, earlier: &RawCycle) {
        for section in &earlier.sections {
            if self.section(&section.name).is_none() {
                self.sections.push(section.clone());
            }
        }
    }
}

/// Collects stream lines into whole cycles.
#[derive(Debug)]
pub struct CycleAssembler {
    marker: String,
    current: Option<RawCycle>,
    open: Option<OpenSection>,
    line_no: usize,
}

#[derive(Debug)]
struct OpenSection {
    name: String,
    body: String,
    truncated: bool,
}

pub fn marker(nonce: &str) -> String {
    format!("@@rw-{nonce}")
}

impl CycleAssembler {
    pub fn new(nonce: &str) -> Self {
        CycleAssembler {
            marker: marker(nonce),
            current: None,
            open: None,
            line_no: 0,
        }
    }

    /// Feeds one line; returns a cycle when its `done` line arrives. Lines outside a cycle
    /// (shell start-up noise such as a motd) are ignored; a malformed frame is an error that
    /// names the line, and the assembler recovers at the next cycle.
    pub fn push(&mut self, line: &str) -> Result<Option<RawCycle>, ParseError> {
        self.line_no += 1;
        let Some(rest) = line
            .strip_prefix(&self.marker)
            .and_then(|r| r.strip_prefix(' '))
        else {
            if let Some(open) = self.open.as_mut() {
                if open.body.len() + line.len() < SECTION_CAP_BYTES {
                    open.body.push_str(line);
                    open.body.push('\n');
                } else {
                    open.truncated = true;
                }
            }
            return Ok(None);
        };
        let mut words = rest.split(' ');
        match (words.next(), words.next(), words.next()) {
            (Some("cycle"), number, None) => {
                self.open = None;
                self.current = Some(RawCycle {
                    number: number.and_then(|e| e.parse().ok()),
                    sections: Vec::new(),
                });
                Ok(None)
            }
            (Some("begin"), Some(name), None) if self.current.is_some() => {
                self.open = Some(OpenSection {
                    name: name.to_string(),
                    body: String::new(),
                    truncated: false,
                });
                Ok(None)
            }
            (Some("end"), Some(name), status)
                if self.open.as_ref().is_some_and(|o| o.name == name) =>
            {
                if let (
                    Some(OpenSection {
                        name,
                        mut body,
                        truncated,
                    }),
                    Some(cycle),
                ) = (self.open.take(), self.current.as_mut())
                {
                    // The script prints a newline before `end` so an unterminated last line
                    // cannot swallow the frame; that newline is not part of the output.
                    if body.ends_with("\n\n") || body == "\n" {
                        body.pop();
                    }
                    cycle.sections.push(RawSection {
                        name,
                        body,
                        status: status.and_then(|s| s.trim().parse().ok()),
                        truncated,
                    });
                }
                Ok(None)
            }
            (Some("done"), None, None) if self.open.is_none() => Ok(self.current.take()),
            _ => {
                let reason = format!(
                    "unexpected frame line {:?}",
                    crate::sanitize::line(rest, 80)
                );
                self.current = None;
                self.open = None;
                Err(ParseError::new(PROBE, self.line_no, reason))
            }
        }
    }
}

/// Parses the output of a one-shot run (`status`): exactly one cycle expected.
pub fn parse_once(nonce: &str, text: &str) -> Result<RawCycle, ParseError> {
    let mut assembler = CycleAssembler::new(nonce);
    for line in text.lines() {
        if let Some(cycle) = assembler.push(line)? {
            return Ok(cycle);
        }
    }
    Err(ParseError::new(
        PROBE,
        assembler.line_no,
        "the probe output ended before its `done` line",
    ))
}
