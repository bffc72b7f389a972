//! Tests of `pace`, beside it so the module reads in one sitting: links simulated read by
//! read and piece by piece, and the budget's leases.

use super::*;

const MIB: u64 = 1 << 20;
const CAP: u64 = 64 * MIB;

const READ: u64 = 256 << 10;

/// Reads of 256 KiB over a link of `rate` bytes a second and round trip `rtt`, for
/// `rounds` round trips: each asked as the pace allows, answered a round trip later or,
/// where the link is busy, once the reads before it have crossed (what waits, waits at the
/// box). What the pace asked, at the start of each round trip.
fn run(rate: u64, rtt: Duration, rounds: u32) -> Vec<u64> {
    run_on(Pace::new(Some(rtt), CAP, None), rate, rtt, rounds).0
}

/// As `run`, from `pace`; and the rate it learned.
fn run_on(mut pace: Pace, rate: u64, rtt: Duration, rounds: u32) -> (Vec<u64>, Option<f64>) {
    let start = Instant::now();
    let mut out: std::collections::VecDeque<Instant> = std::collections::VecDeque::new();
    let (mut now, mut link_free) = (start, start);
    let mut asked = Vec::new();
    while now < start + rtt * rounds {
        while (out.len() as u64 + 1) * READ <= pace.target().max(READ) {
            out.push_back(now);
        }
        let sent = out.pop_front().expect("a read out");
        let crossed =
            link_free.max(sent + rtt / 2) + Duration::from_secs_f64(READ as f64 / rate as f64);
        link_free = crossed;
        now = crossed + rtt / 2;
        pace.answered(sent, READ, now);
        if now >= start + rtt * asked.len() as u32 {
            asked.push(pace.target());
        }
    }
    (asked, pace.learned())
}

#[test]
fn a_rate_the_last_pull_learned_is_asked_from_the_first_round() {
    let rtt = Duration::from_millis(100);
    let bdp = 33 * MIB;
    let (first, learned) = run_on(Pace::new(Some(rtt), CAP, None), 330 * MIB, rtt, 16);
    let learned = learned.expect("reads teach the link's rate");
    assert!(
        (300.0..360.0).contains(&(learned / MIB as f64)),
        "{learned}"
    );
    assert!(first[0] < bdp / 2, "a first pull starts low: {first:?}");
    let (next, _) = run_on(Pace::new(Some(rtt), CAP, Some(learned)), 330 * MIB, rtt, 8);
    assert!(next[0] >= bdp * 9 / 10, "{next:?}");
    assert!(
        next.iter().all(|&a| a <= bdp + STARTUP_STEP + 2 * MIB),
        "no more beyond the link than a first pull's startup: {next:?}"
    );
}

#[test]
fn before_anything_arrives_a_500_mbit_link_is_assumed() {
    let at = |ms| Pace::new(Some(Duration::from_millis(ms)), CAP, None).target();
    assert_eq!(at(0), MARGIN, "a LAN: the margin alone");
    assert_eq!(at(100), (6.4 * MIB as f64) as u64 + MARGIN);
    assert_eq!(Pace::new(None, CAP, None).target(), MARGIN);
    assert_eq!(at(1000), CAP, "never past the window");
}

#[test]
fn a_fast_far_link_is_found_in_three_round_trips_and_not_overshot() {
    // 330 MiB/s at 100 ms carries 33 MiB a round trip: a first pull (10.4 MiB asked) doubles
    // what it asks each round trip until reads wait at the box. A step of 8 MiB a round took
    // six round trips here, seven on the bench's 100 ms link: half of a 256 MiB copy.
    let asked = run(330 * MIB, Duration::from_millis(100), 16);
    let bdp = 33 * MIB;
    let reached = asked
        .iter()
        .position(|&a| a >= bdp * 9 / 10)
        .expect("reached");
    assert!(reached <= 3, "{asked:?}");
    assert!(
        asked.iter().all(|&a| a <= CAP),
        "never past the window: {asked:?}"
    );
    let past = asked[reached..]
        .iter()
        .position(|&a| a <= bdp + MARGIN + 2 * MIB);
    assert!(
        past.is_some_and(|p| p <= 3),
        "back to the link's round trip within three round trips of reaching it: {asked:?}"
    );
    let last = *asked.last().expect("rounds");
    assert!(
        (bdp..=bdp + MARGIN + 2 * MIB).contains(&last),
        "settles at the link's round trip and the margin: {asked:?}"
    );
}

#[test]
fn a_slow_far_link_is_asked_little_beyond_what_it_carries() {
    // 24 MiB/s at 100 ms carries 2.4 MiB a round trip: the first ask (6.4 MiB and the
    // margin) shrinks to what it carries and the margin.
    let asked = run(24 * MIB, Duration::from_millis(100), 8);
    let last = *asked.last().expect("rounds");
    assert!(last <= 3 * MIB + MARGIN, "{asked:?}");
    // Its reads wait behind the first ask at the box: those that waited a round trip there
    // grow nothing, so the startup asks little more than that first ask.
    assert!(
        asked.iter().all(|&a| a <= asked[0] + MIB),
        "a startup over a full link: {asked:?}"
    );
}

/// Pieces of a file (half what is asked, 4–32 MiB, as `copy/exec.rs` asks them) over a
/// link of `rate` and round trip `rtt`: the box starts each once its command has come and
/// the piece before it has left. What the pace asked after each piece, over `rounds`.
fn run_pieces(rate: u64, rtt: Duration, rounds: u32) -> Vec<u64> {
    let start = Instant::now();
    let mut pace = Pace::new(Some(rtt), CAP, None);
    let mut out: VecDeque<(Instant, u64)> = VecDeque::new();
    let (mut now, mut link_free) = (start, start);
    let mut asked = Vec::new();
    while now < start + rtt * rounds {
        let len = (pace.target() / 2).clamp(4 * MIB, 32 * MIB);
        let most = pace.target() + 4 * MIB;
        while out.is_empty() || out.iter().map(|p| p.1).sum::<u64>() + len <= most {
            out.push_back((now, len));
        }
        let (sent, len) = out.pop_front().expect("a piece out");
        let leaves = link_free.max(sent + rtt / 2);
        link_free = leaves + Duration::from_secs_f64(len as f64 / rate as f64);
        now = link_free + rtt / 2;
        pace.streamed(leaves + rtt / 2, len, now);
        asked.push(pace.target());
    }
    asked
}

#[test]
fn pieces_of_a_file_follow_what_a_slow_or_fast_link_carries() {
    let rtt = Duration::from_millis(100);
    let slow = run_pieces(24 * MIB, rtt, 8);
    let last = *slow.last().expect("pieces");
    assert!(last <= 3 * MIB + MARGIN, "{slow:?}");
    let fast = run_pieces(330 * MIB, rtt, 16);
    let (bdp, last) = (33 * MIB, *fast.last().expect("pieces"));
    assert!(
        (bdp..=bdp + MARGIN + 2 * MIB).contains(&last),
        "settles at the link's round trip and the margin: {fast:?}"
    );
}

/// A tar stream slower than asked ends the startup; its time holds the box's work on each
/// file and a round trip (a low bound of the link's rate), so it teaches no rate to keep for
/// the next pull, where a piece timed by its bytes does.
#[test]
fn a_tar_stream_slower_than_asked_ends_the_startup_and_teaches_no_rate() {
    let rtt = Duration::from_millis(100);
    let mut pace = Pace::new(Some(rtt), CAP, None);
    let t = Instant::now();
    // 16 MiB in 0.7 s: 23 MiB/s, 2.3 MiB a round trip.
    pace.arrived(t, 16 * MIB, t + Duration::from_millis(700));
    assert!(pace.target() <= 3 * MIB + MARGIN, "{pace:?}");
    assert_eq!(pace.learned(), None);
    pace.streamed(t, 16 * MIB, t + Duration::from_millis(700));
    assert!(pace.learned().is_some());
}

#[tokio::test]
async fn a_lease_is_given_back_answered_or_not_and_wakes_a_waiting_asker() {
    let budget = Budget::new(Some(Duration::from_millis(100)), None);
    let now = Instant::now();
    let room = budget.room();
    let lease = budget.try_ask(room, now).expect("room");
    assert!(budget.try_ask(MIB, now).is_none(), "no room");
    let waiting = budget.ask(MIB);
    tokio::pin!(waiting);
    assert!(futures::poll!(waiting.as_mut()).is_pending());
    drop(lease);
    let lease = waiting.await;
    drop(lease);
    assert_eq!(budget.room(), room, "all given back");
    let alone = budget
        .try_ask(CAP, now)
        .expect("nothing asked: any size goes, alone");
    assert!(budget.try_ask(1, now).is_none());
    drop(alone);
}
