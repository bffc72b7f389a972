//! How many bytes a pull keeps asked of its box and not yet arrived, over all its copies at once
//! (every SFTP read, tar batch and piece streamed over exec, of every chunk). Whatever is asked
//! beyond what the link carries in a round trip waits at the box, in its sshd, and there it
//! costs more than its size: OpenSSH's sshd grows a channel's buffer a little at a time and
//! copies the whole buffer at each growth (`sshbuf_allocate`'s `recallocarray`; HPN-SSH's
//! sshbuf.c says as much of OpenSSH 8.9+), so a queue of Q bytes costs the box ~Q²/32 KiB of
//! copying. Reads sized to a fixed 512 MiB/s kept 51 MiB asked on the bench's 100 ms link, and
//! the box's sshd stalled a 256 MiB copy for 0.2–0.8 s at a full core while sending nothing;
//! over a 24 MiB/s link it held 41 MiB (`tests/pull_far_link.rs` reads its peak memory), and
//! as much for one `tail` of a file streamed over exec.
//!
//! So what is asked follows what arrives: the link's round trip with nothing queued (the
//! fastest any read was answered) times the best delivery rate of the last few rounds, plus a
//! margin that keeps the link full and lets a faster rate show. At the start (a startup, as
//! TCP's slow start) a pull that knows no rate yet adds the bytes of each read answered within
//! 1.5 of the link's round trips to what it asks: what is asked doubles each round trip until
//! reads wait half a round trip at the box (a step of 8 MiB a round, as before, took seven
//! round trips to fill a 100 ms link: 1.42 s a 256 MiB pull there, 1.23–1.27 s now). One that
//! starts at a rate its connection learned asks a step beyond it, and again each time the rate
//! shows the link took the last. The startup ends when a whole round's reads were all answered
//! later than the link's round trip (something waits at the box), or a tar stream or a piece
//! came slower than was asked. A pod's pull is not paced (`Budget::unpaced`): no sshd holds what it asks.
//! The first ask assumes the rate the connection's last pull learned (`transport::LinkRate`),
//! else a 500 Mbit/s link: a faster one is found in a few round trips, and a slower one (a home
//! downlink) has its first ask wait at the box once. Pure: every call is given the time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::transport::LinkRate;

/// Asked beyond what the link carries in a round trip, once its rate stopped growing: the
/// room for a faster rate to show. On loopback, where a round trip carries almost nothing,
/// this is all that is asked: 4 MiB kept a LAN copy at full speed.
const MARGIN: u64 = 4 << 20;
/// Asked beyond it each round while the rate still grows.
const STARTUP_STEP: u64 = 8 << 20;
/// The rate assumed before anything has arrived: a 500 Mbit/s link. Over a 24 MiB/s one the
/// box's sshd held 15 MiB of a first ask at 128 MiB/s (`tests/pull_far_link.rs`).
const FIRST_RATE: f64 = 64.0 * 1024.0 * 1024.0;
/// The shortest round a rate is measured over (a LAN's round trip is far shorter).
const MIN_ROUND: Duration = Duration::from_millis(10);
/// The least a tar stream carries for its time to count as the link's rate.
const STREAM_SAMPLE: u64 = 1 << 20;
/// The rounds whose best rate sets what is asked: one slow round (the box's CPU busy
/// elsewhere) does not shrink it.
const ROUNDS_KEPT: usize = 4;
/// A round whose every read took longer than the link's round trip by this share of it (and
/// 2 ms) ends the startup: the reads waited at the box.
const QUEUED: f64 = 0.1;
const QUEUED_AT_LEAST: Duration = Duration::from_millis(2);
const MIB: f64 = 1024.0 * 1024.0;

/// The bytes to keep asked, from what has arrived (see the module's comment).
#[derive(Debug)]
pub struct Pace {
    /// The fastest any read was answered: the link's round trip with nothing queued.
    floor: Option<Duration>,
    /// Never more asked than this (the channel's window).
    cap: u64,
    target: u64,
    /// The round being measured: when it began, the bytes arrived since, and the fastest
    /// read answered in it.
    round: Option<(Instant, u64, Option<Duration>)>,
    rates: VecDeque<f64>,
    startup: bool,
    /// Whether the startup grows by each read answered (no rate was known) rather than by a
    /// step a round.
    doubling: bool,
    /// The best rate of late measured by reads and pieces, timed by their bytes' arrival (a
    /// tar stream's time holds the box's work and a round trip: a low bound).
    learned: Option<f64>,
}

impl Pace {
    /// Before anything has arrived: `rtt` (where known) at the rate the connection's last pull
    /// learned (`known`), else at `FIRST_RATE`, plus the margin. The startup runs either way:
    /// the link may have grown faster since.
    pub fn new(rtt: Option<Duration>, cap: u64, known: Option<f64>) -> Pace {
        let floor = rtt.filter(|d| !d.is_zero());
        let rate = known.unwrap_or(FIRST_RATE);
        let first = floor.map_or(0, |f| (f.as_secs_f64() * rate) as u64);
        Pace {
            floor,
            cap,
            target: (first + MARGIN).min(cap),
            round: None,
            rates: VecDeque::with_capacity(ROUNDS_KEPT),
            startup: true,
            doubling: known.is_none(),
            learned: None,
        }
    }

    pub fn target(&self) -> u64 {
        self.target
    }

    /// The link's rate as reads and pieces measured it, for the connection's next pull.
    pub fn learned(&self) -> Option<f64> {
        self.learned
    }

    /// A read asked at `asked` was answered at `now` with `bytes`: the link's round trip, and
    /// its rate.
    pub fn answered(&mut self, asked: Instant, bytes: u64, now: Instant) {
        let took = now.saturating_duration_since(asked);
        self.floor = Some(self.floor.map_or(took, |f| f.min(took)));
        let floor = self.floor.unwrap_or_default();
        // A read that waited half a round trip at the box (behind more than the link carries
        // in half of one) says the link is full: it grows nothing. One that waited less may
        // have waited only for the reads asked with it to cross.
        if self.startup && self.doubling && took < floor.mul_f64(1.5) {
            self.target = (self.target + bytes).min(self.cap);
        }
        let (since, sum, fastest) = self.round.get_or_insert((now, 0, None));
        *sum += bytes;
        *fastest = Some(fastest.map_or(took, |f| f.min(took)));
        let elapsed = now.saturating_duration_since(*since);
        if elapsed < floor.max(MIN_ROUND) {
            return;
        }
        let rate = *sum as f64 / elapsed.as_secs_f64();
        let slack = floor.mul_f64(QUEUED).max(QUEUED_AT_LEAST);
        let waited = fastest.is_some_and(|f| f > floor + slack);
        // Each round's figures, for a pull whose speed is in question
        // (`RUST_LOG=rigwatch::pull::pace=trace`).
        tracing::trace!(
            mib_s = (rate / MIB) as u64,
            fastest_ms = fastest.map_or(0.0, |f| f.as_secs_f64() * 1e3),
            floor_ms = floor.as_secs_f64() * 1e3,
            target_mib = self.target as f64 / MIB,
            startup = self.startup,
            waited,
            "pace: a round"
        );
        if waited {
            self.startup = false;
        }
        self.round = Some((now, 0, None));
        self.measured(rate);
        self.learned = Some(self.best());
    }

    /// A stream of `bytes` asked at `asked` had all come by `now` (a tar batch, whose time is
    /// the box's work and the stream's, not a round trip): a rate, the link's at the least.
    /// One that carried far less a round trip than was asked ends the startup. A stream under
    /// `STREAM_SAMPLE` says nothing: its time is the box's work on each file.
    pub fn arrived(&mut self, asked: Instant, bytes: u64, now: Instant) {
        self.stream(asked, bytes, now, STARTUP_STEP);
    }

    /// A piece of a file streamed from its first byte at `first` to its last at `now`: the
    /// link's delivery rate while it came (or the box's, where that is slower), with no round
    /// trip or start in it, so one that carried less a round trip than is asked, by more than
    /// the margin, ends the startup.
    pub fn streamed(&mut self, first: Instant, bytes: u64, now: Instant) {
        if self.stream(first, bytes, now, MARGIN) {
            self.learned = Some(self.best());
        }
    }

    /// A stream's rate, from `since`; `short_by` is how far below what is asked the bytes it
    /// carries a round trip may fall before the startup ends. False where it was too short to
    /// say.
    fn stream(&mut self, since: Instant, bytes: u64, now: Instant, short_by: u64) -> bool {
        if bytes < STREAM_SAMPLE {
            return false;
        }
        let took = now.saturating_duration_since(since).max(MIN_ROUND);
        let rate = bytes as f64 / took.as_secs_f64();
        let carried = (rate * self.floor.unwrap_or_default().as_secs_f64()) as u64;
        if carried + short_by < self.target {
            self.startup = false;
        }
        self.measured(rate);
        true
    }

    /// A rate measured: what is asked follows the best of late.
    fn measured(&mut self, rate: f64) {
        let floor = self.floor.unwrap_or_default();
        if self.rates.len() == ROUNDS_KEPT {
            self.rates.pop_front();
        }
        self.rates.push_back(rate);
        let carried = (self.best() * floor.as_secs_f64()) as u64;
        self.target = match self.startup {
            // A round that has not yet shown the last step keeps it.
            true => self.target.max(carried + STARTUP_STEP),
            false => carried + MARGIN,
        }
        .clamp(MARGIN, self.cap);
    }

    /// The best rate of the last rounds.
    fn best(&self) -> f64 {
        self.rates.iter().copied().fold(0.0, f64::max)
    }
}

/// One pull's asking, shared by all its copies: what is asked now, against the pace.
#[derive(Debug)]
pub struct Budget {
    /// None where the pull is not paced (`unpaced`).
    pace: Option<Mutex<Pace>>,
    asked: AtomicU64,
    /// Woken as asked bytes are given back.
    freed: tokio::sync::Notify,
    rtt: Option<Duration>,
    /// Where the connection keeps the rate learned, for its next pull.
    link: Option<Arc<LinkRate>>,
}

impl Budget {
    /// A pull over a link of round trip `rtt`, starting at the rate `link` kept from the
    /// connection's last pull and keeping there what this one learns.
    pub fn new(rtt: Option<Duration>, link: Option<Arc<LinkRate>>) -> Budget {
        let cap = u64::from(crate::transport::WINDOW_BYTES);
        let known = link.as_ref().and_then(|l| l.get());
        Budget {
            pace: Some(Mutex::new(Pace::new(rtt, cap, known))),
            asked: AtomicU64::new(0),
            freed: tokio::sync::Notify::new(),
            rtt,
            link,
        }
    }

    /// A pull whose box has no sshd to queue what is asked (a pod's, through `kubectl exec`,
    /// whose streams the API server carries): as much is asked as its copies' own bounds allow.
    pub fn unpaced() -> Budget {
        Budget {
            pace: None,
            asked: AtomicU64::new(0),
            freed: tokio::sync::Notify::new(),
            rtt: None,
            link: None,
        }
    }

    pub fn paced(&self) -> bool {
        self.pace.is_some()
    }

    /// The link's round trip as the pull began (a ping); None where it is not known.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    /// What the pace has learned of the link, kept on the connection.
    fn keep(&self, pace: &Pace) {
        if let (Some(link), Some(rate)) = (&self.link, pace.learned()) {
            link.set(rate);
        }
    }

    /// The pace, where the pull is paced.
    fn pace(&self) -> Option<std::sync::MutexGuard<'_, Pace>> {
        let pace = self.pace.as_ref()?;
        Some(pace.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The bytes to keep asked now.
    pub fn target(&self) -> u64 {
        self.pace().map_or(u64::MAX, |pace| pace.target())
    }

    /// Bytes that may still be asked now.
    pub fn room(&self) -> u64 {
        self.target()
            .saturating_sub(self.asked.load(Ordering::Relaxed))
    }

    /// Leave to ask `bytes` more of the box now, where the pace has room for them or nothing
    /// is asked at all (a read or batch bigger than the room still goes, alone).
    pub fn try_ask(&self, bytes: u64, now: Instant) -> Option<Lease<'_>> {
        self.try_ask_beyond(bytes, 0, now)
    }

    /// As `try_ask`, where up to `beyond` more than the pace may be asked in all: for an asker
    /// whose next ask must wait at the box to keep the link busy.
    fn try_ask_beyond(&self, bytes: u64, beyond: u64, now: Instant) -> Option<Lease<'_>> {
        let most = self.target().saturating_add(beyond);
        self.asked
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |asked| {
                (asked == 0 || asked + bytes <= most).then_some(asked + bytes)
            })
            .ok()?;
        Some(Lease {
            budget: self,
            bytes,
            asked: now,
        })
    }

    /// Leave to ask `bytes` more, for an asker with `out` asks of its own unanswered: one with
    /// none waits for room (`ask`); one with some gets leave only where there is room now, up to
    /// `beyond` past the pace, and else (None) asks again as its own are answered.
    pub async fn ask_beside(&self, bytes: u64, out: usize, beyond: u64) -> Option<Lease<'_>> {
        match out {
            0 => Some(self.ask(bytes).await),
            _ => self.try_ask_beyond(bytes, beyond, Instant::now()),
        }
    }

    /// Leave to ask `bytes` more, once there is room: for an asker with nothing asked, which
    /// has no answer of its own to wait for.
    pub async fn ask(&self, bytes: u64) -> Lease<'_> {
        loop {
            // Listening before looking: room made between the look and the wait still wakes it.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(lease) = self.try_ask(bytes, Instant::now()) {
                return lease;
            }
            freed.await;
        }
    }
}

/// Bytes asked of the box and not yet arrived: given back when dropped (answered or not).
#[derive(Debug)]
pub struct Lease<'a> {
    budget: &'a Budget,
    bytes: u64,
    asked: Instant,
}

impl Lease<'_> {
    /// The link's round trip as the pull began.
    pub fn rtt(&self) -> Option<Duration> {
        self.budget.rtt()
    }

    /// A read's answer came at `now`.
    pub fn answered(self, now: Instant) {
        if let Some(mut pace) = self.budget.pace() {
            pace.answered(self.asked, self.bytes, now);
            self.budget.keep(&pace);
        }
    }

    /// A stream's bytes have all come, by `now`.
    pub fn arrived(self, now: Instant) {
        if let Some(mut pace) = self.budget.pace() {
            pace.arrived(self.asked, self.bytes, now);
        }
    }

    /// A piece's bytes have all come, the first at `first` and the last by `now` (a piece may
    /// wait behind another on the box before its first byte, which says nothing of the link).
    pub fn streamed(self, first: Instant, now: Instant) {
        if let Some(mut pace) = self.budget.pace() {
            pace.streamed(first, self.bytes, now);
            self.budget.keep(&pace);
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.budget.asked.fetch_sub(self.bytes, Ordering::Relaxed);
        self.budget.freed.notify_waiters();
    }
}

#[cfg(test)]
#[path = "pace_tests.rs"]
mod tests;
