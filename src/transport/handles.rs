//! What an SFTP server will name the next file opened on a channel, where that can be known
//! before it answers, so a copy's first reads go out with its open instead of a round trip
//! after it (0.1 s of every far file's copy at 100 ms).
//!
//! OpenSSH's sftp-server answers requests one at a time, in order, and names a handle by its
//! slot in a table, four bytes big-endian: a new open takes the slot last freed (a stack) or,
//! with none free, one past the last (`handle_new`, `handle_unused`, `handle_to_string` in
//! sftp-server.c). So where every handle of the channel is closed and no open or close is
//! unanswered, the next open's handle is the last closed, else the next slot.
//!
//! A guess is used only where the open's answer names it: reads sent with a wrong one named no
//! open file (none was open as they were sent) and are asked again. A server that names its
//! handles otherwise shows it at its first answer, and is never guessed for again.

/// The channel's handles as this client has seen them: its opens by their answers, its closes
/// in the order they were sent (the order the server frees them).
#[derive(Debug, Default)]
pub(super) struct Handles {
    /// Handles open (answered and not yet closed).
    open: usize,
    /// Opens and closes sent and not yet answered.
    unanswered: usize,
    /// Slots freed, the last freed last: the server's stack of free slots.
    free: Vec<u32>,
    /// Slots the server has made so far.
    slots: u32,
    /// The server's table is not known: it named a handle otherwise than OpenSSH's, refused a
    /// close, or an open was given up before its answer. No guess is made again.
    unknown: bool,
}

impl Handles {
    /// The handle the next open will get, where it can be known.
    pub(super) fn guess(&self) -> Option<String> {
        if self.unknown || self.open > 0 || self.unanswered > 0 {
            return None;
        }
        name(self.free.last().copied().unwrap_or(self.slots))
    }

    /// An open is sent.
    pub(super) fn opening(&mut self) {
        self.unanswered += 1;
    }

    /// An open was answered: with `handle`, or (None) refused, which takes no slot.
    pub(super) fn opened(&mut self, handle: Option<&str>) {
        self.unanswered = self.unanswered.saturating_sub(1);
        let Some(handle) = handle else { return };
        self.open += 1;
        let Some(slot) = slot_of(handle) else {
            self.unknown = true;
            return;
        };
        // Answers may be read out of order where opens overlap: the slot is taken from wherever
        // it is in the stack, which leaves the rest in the server's order.
        if let Some(at) = self.free.iter().rposition(|&s| s == slot) {
            self.free.remove(at);
        }
        self.slots = self.slots.max(slot.saturating_add(1));
    }

    /// An open was given up before its answer: it may have taken a slot.
    pub(super) fn given_up(&mut self) {
        self.unknown = true;
    }

    /// A close of `handle` is sent (the server frees its slot as it reads it).
    pub(super) fn closing(&mut self, handle: &str) {
        self.unanswered += 1;
        self.open = self.open.saturating_sub(1);
        match slot_of(handle) {
            Some(slot) => self.free.push(slot),
            None => self.unknown = true,
        }
    }

    /// A close was answered; one refused leaves the server's table unknown.
    pub(super) fn closed(&mut self, ok: bool) {
        self.unanswered = self.unanswered.saturating_sub(1);
        self.unknown |= !ok;
    }
}

/// OpenSSH's name for a slot: its number, four bytes big-endian. russh-sftp carries handles as
/// text, so a slot whose bytes are not UTF-8 (128 and up in any byte) is not guessed.
fn name(slot: u32) -> Option<String> {
    String::from_utf8(slot.to_be_bytes().to_vec()).ok()
}

/// The slot OpenSSH's handle names.
fn slot_of(handle: &str) -> Option<u32> {
    let bytes: [u8; 4] = handle.as_bytes().try_into().ok()?;
    Some(u32::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sftp-server.c's table, as `handle_new` and `handle_unused` keep it: the slots made, and
    /// the free ones, last freed last.
    #[derive(Default)]
    struct Server {
        made: u32,
        free: Vec<u32>,
    }

    impl Server {
        fn open(&mut self) -> u32 {
            self.free.pop().unwrap_or_else(|| {
                self.made += 1;
                self.made - 1
            })
        }

        fn close(&mut self, slot: u32) {
            self.free.push(slot);
        }
    }

    /// Runs of opens and closes, overlapping or not, against the server's own table: every
    /// guess made is the handle the server gives.
    #[test]
    fn every_guess_is_the_handle_openssh_gives() {
        let mut rng = 0x9e37_79b9_u32;
        let mut next = move |n: u32| {
            rng ^= rng << 13;
            rng ^= rng >> 17;
            rng ^= rng << 5;
            rng % n
        };
        let (mut server, mut handles) = (Server::default(), Handles::default());
        let mut held: Vec<u32> = Vec::new();
        let (mut guessed, mut opens) = (0, 0);
        for _ in 0..5000 {
            if held.is_empty() || (held.len() < 6 && next(2) == 0) {
                let guess = handles.guess();
                handles.opening();
                let slot = server.open();
                if let Some(guess) = guess {
                    assert_eq!(Some(guess), name(slot), "after {opens} opens");
                    guessed += 1;
                }
                handles.opened(name(slot).as_deref());
                held.push(slot);
                opens += 1;
            } else {
                let slot = held.swap_remove(next(held.len() as u32) as usize);
                handles.closing(&name(slot).expect("text"));
                server.close(slot);
                handles.closed(true);
            }
        }
        assert!(guessed > 100, "{guessed} of {opens} opens guessed");
    }

    #[test]
    fn overlapping_answers_read_out_of_order_still_guess_right() {
        let mut handles = Handles::default();
        // Three files open at once (slots 0, 1, 2), their answers read 2, 0, 1.
        for _ in 0..3 {
            handles.opening();
        }
        assert_eq!(handles.guess(), None, "opens unanswered");
        for slot in [2, 0, 1] {
            handles.opened(name(slot).as_deref());
        }
        // Closed 1, 2, 0 (sent in that order): the server's stack is [1, 2, 0].
        for slot in [1, 2, 0] {
            handles.closing(&text(slot));
        }
        assert_eq!(handles.guess(), None, "closes unanswered");
        for _ in 0..3 {
            handles.closed(true);
        }
        assert_eq!(handles.guess(), name(0));
        // Two opens overlap, answered out of order: 0 then 2 are taken, 1 is left on top.
        handles.opening();
        handles.opening();
        handles.opened(name(2).as_deref());
        handles.opened(name(0).as_deref());
        handles.closing(&text(0));
        handles.closing(&text(2));
        handles.closed(true);
        handles.closed(true);
        assert_eq!(handles.guess(), name(2), "the server's stack: [1, 0, 2]");
    }

    #[test]
    fn a_server_that_names_handles_otherwise_is_never_guessed_for_again() {
        let mut handles = Handles::default();
        assert_eq!(handles.guess(), name(0), "a fresh channel's first open");
        handles.opening();
        handles.opened(Some("1"));
        handles.closing("1");
        handles.closed(true);
        assert_eq!(handles.guess(), None);
    }

    #[test]
    fn nothing_is_guessed_while_a_handle_is_open_or_after_a_refused_close() {
        let mut handles = Handles::default();
        handles.opening();
        handles.opened(None);
        assert_eq!(handles.guess(), name(0), "a refused open takes no slot");
        handles.opening();
        handles.opened(name(0).as_deref());
        assert_eq!(handles.guess(), None, "a file is open");
        handles.closing(&text(0));
        handles.closed(false);
        assert_eq!(handles.guess(), None);
    }

    #[test]
    fn slots_whose_bytes_are_not_text_are_not_guessed() {
        // russh-sftp reads a handle as text: slot 0x80's name is not UTF-8.
        let next_new = Handles {
            slots: 0x80,
            ..Handles::default()
        };
        assert_eq!(next_new.guess(), None);
        let freed = Handles {
            slots: 0x90,
            free: vec![3, 0x85],
            ..Handles::default()
        };
        assert_eq!(freed.guess(), None);
        assert_eq!(slot_of(&text(7)), Some(7));
    }

    /// OpenSSH's name for `slot`, whatever its bytes (as the server would send it).
    fn text(slot: u32) -> String {
        String::from_utf8_lossy(&slot.to_be_bytes()).into_owned()
    }
}
