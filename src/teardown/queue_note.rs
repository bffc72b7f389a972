//! What a teardown would leave behind of the host's queue: one line for the dialog, and whether
//! it takes the second confirmation a live run takes. Shared by the dashboard's modal and
//! `rigwatch teardown`, so both say the same thing.
//!
//! A done cell (durable copy, verified or not) is reconciled; failed, pending, running, missing
//! and colliding cells are not. A configured queue that could not be read counts as not
//! reconciled: nothing about its cells is known. These cells only warn and ask again; they never
//! stand in for, or weaken, the refusal without a verified-current pull.

use crate::queue::HostSummary;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLooks {
    /// No queue configured: nothing to say.
    NoQueue,
    /// Every cell has a done copy.
    AllDone,
    /// Some cell is failed, pending, running, missing or colliding.
    NotAllDone,
    /// A queue is configured but its cells could not be read.
    Unread,
}

impl QueueLooks {
    pub fn needs_second_confirm(self) -> bool {
        matches!(self, QueueLooks::NotAllDone | QueueLooks::Unread)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueNote {
    pub looks: QueueLooks,
    /// `queue: …`, for the dialog.
    pub line: String,
}

/// What is known of a host's queue, wherever it was read (the dashboard's roster, the CLI's one
/// probe).
#[derive(Debug, Clone, Copy)]
pub enum QueueSeen<'a> {
    /// No queue configured.
    NotConfigured,
    /// A queue is configured but its cells could not be read (why, where it is known).
    Unread {
        file: &'a str,
        why: Option<&'a str>,
    },
    Read(&'a HostSummary),
}

/// The note for a host; None when it has no queue.
pub fn queue_note(seen: QueueSeen<'_>) -> Option<QueueNote> {
    let s = match seen {
        QueueSeen::NotConfigured => return None,
        QueueSeen::Unread { file, why } => {
            let why = why.map_or(String::new(), |w| {
                format!(" ({})", crate::sanitize::line(w, 300))
            });
            return Some(QueueNote {
                looks: QueueLooks::Unread,
                line: format!(
                    "queue: {} not read{why}, so none of its cells is accounted for",
                    crate::sanitize::line(file, 200)
                ),
            });
        }
        QueueSeen::Read(s) => s,
    };
    if s.not_done() == 0 {
        let line = match s.total {
            0 => "queue: no cells".to_string(),
            1 => format!("queue: its one cell done, {} verified", s.verified),
            n => format!("queue: all {n} cells done, {} verified", s.verified),
        };
        return Some(QueueNote {
            looks: QueueLooks::AllDone,
            line,
        });
    }
    let parts: Vec<String> = [
        (s.failed, "failed"),
        (s.missing, "missing"),
        (s.colliding, "colliding"),
        (s.running, "running"),
        (s.pending, "pending"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, word)| format!("{n} {word}"))
    .collect();
    let resume = s.resume.as_ref().map_or(String::new(), |r| {
        format!("; resume with `{}`", crate::sanitize::line(&r.command, 400))
    });
    Some(QueueNote {
        looks: QueueLooks::NotAllDone,
        line: format!(
            "queue: {} of {} {} not done ({}){resume}",
            s.not_done(),
            s.total,
            if s.total == 1 { "cell" } else { "cells" },
            parts.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{Presence, Resume};

    fn summary(done: usize, verified: usize, failed: usize, pending: usize) -> HostSummary {
        HostSummary {
            host: "box".into(),
            file: "/workspace/queue.txt".into(),
            presence: Presence::Up,
            total: done + failed + pending,
            done,
            verified,
            running: 0,
            pending,
            failed,
            missing: 0,
            colliding: 0,
            current: None,
            resume: None,
        }
    }

    #[test]
    fn unreconciled_cells_are_counted_by_state_with_the_resume_command() {
        let mut s = summary(9, 4, 2, 1);
        s.resume = Some(Resume {
            cell_index: 7,
            start_index: 7,
            command: "bash run_queue.sh /workspace/queue.txt 7".into(),
        });
        let note = queue_note(QueueSeen::Read(&s)).expect("a queue");
        assert_eq!(note.looks, QueueLooks::NotAllDone);
        assert_eq!(
            note.line,
            "queue: 3 of 12 cells not done (2 failed, 1 pending); resume with \
             `bash run_queue.sh /workspace/queue.txt 7`"
        );
        assert!(note.looks.needs_second_confirm());
    }

    #[test]
    fn a_live_queue_has_no_resume_and_a_gone_box_counts_missing() {
        let mut s = summary(1, 0, 0, 1);
        s.running = 1;
        s.total += 1;
        assert_eq!(
            queue_note(QueueSeen::Read(&s)).map(|n| n.line),
            Some("queue: 2 of 3 cells not done (1 running, 1 pending)".into())
        );
        let mut gone = summary(0, 0, 0, 0);
        (gone.missing, gone.total) = (1, 1);
        assert_eq!(
            queue_note(QueueSeen::Read(&gone)).map(|n| n.line),
            Some("queue: 1 of 1 cell not done (1 missing)".into())
        );
    }

    #[test]
    fn all_done_asks_once_and_no_queue_says_nothing() {
        let note = queue_note(QueueSeen::Read(&summary(12, 9, 0, 0))).expect("a queue");
        assert_eq!(note.line, "queue: all 12 cells done, 9 verified");
        assert!(!note.looks.needs_second_confirm());
        assert_eq!(queue_note(QueueSeen::NotConfigured), None);
        let unread = queue_note(QueueSeen::Unread {
            file: "/w/q.txt",
            why: None,
        })
        .expect("a queue");
        assert_eq!(unread.looks, QueueLooks::Unread);
        assert_eq!(
            unread.line,
            "queue: /w/q.txt not read, so none of its cells is accounted for"
        );
        let said = queue_note(QueueSeen::Unread {
            file: "/w/q.txt",
            why: Some("the box did not answer"),
        })
        .map(|n| n.line);
        assert_eq!(
            said.as_deref(),
            Some(
                "queue: /w/q.txt not read (the box did not answer), so none of its cells is \
                 accounted for"
            )
        );
        assert!(unread.looks.needs_second_confirm());
    }

    #[test]
    fn a_hostile_queue_path_in_the_resume_command_is_made_safe() {
        let mut s = summary(0, 0, 1, 0);
        s.resume = Some(Resume {
            cell_index: 0,
            start_index: 0,
            command: "bash run_queue.sh '/w/\u{1b}[2Jq.txt' 0".into(),
        });
        let line = queue_note(QueueSeen::Read(&s))
            .map(|n| n.line)
            .unwrap_or_default();
        assert!(!line.contains('\u{1b}'), "{line:?}");
    }
}
