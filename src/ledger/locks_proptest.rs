//! Interleavings of pulls, teardowns and kills from two processes on one target, through the
//! real locks (two open descriptions of one lock file conflict as two processes' do), with the
//! pull's files as a small model: a `.part` is a file object that a pull opens (resuming one of
//! the same version, as the real pull does), writes chunk by chunk, and renames home once its
//! second look sees the box unchanged; a pull dies (SIGKILL) with its writes where they are.
//! Whatever the order: never a proven record whose copy at home holds other bytes, and never a
//! destroy relying on one.

use proptest::prelude::*;

use super::*;

const CHUNKS: usize = 3;

#[derive(Debug, Clone, Copy)]
enum Op {
    Begin(usize, Act),
    Step(usize),
    Finish(usize),
    Die(usize),
    BoxChanges,
}

fn op() -> impl Strategy<Value = Op> {
    let act = prop_oneof![Just(Act::Pull), Just(Act::Teardown), Just(Act::Kill)];
    prop_oneof![
        (0..2usize, act).prop_map(|(p, a)| Op::Begin(p, a)),
        (0..2usize).prop_map(Op::Step),
        (0..2usize).prop_map(Op::Finish),
        (0..2usize).prop_map(Op::Die),
        Just(Op::BoxChanges),
    ]
}

/// One process's pull in flight: the version it read, the file it writes, the next chunk.
#[derive(Debug)]
struct Pulling {
    version: u32,
    file: usize,
    next: usize,
}

#[derive(Default)]
struct Proc {
    held: Option<Held>,
    pulling: Option<Pulling>,
}

#[derive(Default)]
struct World {
    box_version: u32,
    /// Every file ever made: its chunks (None unwritten).
    files: Vec<Vec<Option<u32>>>,
    /// The `.part` by name: which file, and the version it is tagged with.
    part: Option<(usize, u32)>,
    home: Option<usize>,
    /// The ledger's proven records: the version each says the copy at home is.
    proven: Vec<u32>,
    /// The record a destroy relied on, and the bytes at home then.
    destroyed: Option<u32>,
}

impl World {
    fn holds(&self, file: Option<usize>, version: u32) -> bool {
        file.is_some_and(|f| self.files[f].iter().all(|c| *c == Some(version)))
    }

    fn begin_pull(&mut self) -> Pulling {
        let version = self.box_version;
        // A part of this same version is resumed, as the real pull resumes its `.part`; one of
        // another version is cut to nothing and written again (the same file: what two pulls
        // without a lock shared).
        let file = match self.part {
            Some((file, tag)) if tag == version => file,
            Some((file, _)) => {
                self.files[file] = vec![None; CHUNKS];
                self.part = Some((file, version));
                file
            }
            None => {
                self.files.push(vec![None; CHUNKS]);
                self.part = Some((self.files.len() - 1, version));
                self.files.len() - 1
            }
        };
        let next = self.files[file].iter().take_while(|c| c.is_some()).count();
        Pulling {
            version,
            file,
            next,
        }
    }

    fn finish_pull(&mut self, p: &Pulling) {
        if p.next < CHUNKS {
            return;
        }
        // The second look: a box that changed during the copy proves nothing.
        if self.box_version != p.version {
            self.part = None;
            return;
        }
        if self.part.is_some_and(|(f, _)| f == p.file) {
            self.part = None;
        }
        self.home = Some(p.file);
        // Its hash is of the bytes it received: it says its own version.
        self.proven.push(p.version);
    }

    fn teardown(&mut self) {
        // The final check: the last proven record against the box and the copy at home.
        if let Some(&v) = self.proven.last() {
            if v == self.box_version && self.holds(self.home, v) {
                self.destroyed = Some(v);
            }
        }
    }
}

/// Runs `ops`; `locked` false takes no lock (the landed code before the locks), to show the
/// model can fail.
fn run(ops: &[Op], locked: bool) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut w = World::default();
    let mut procs = [Proc::default(), Proc::default()];
    let now = DateTime::from_timestamp(1_790_000_000, 0).unwrap_or_default();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Begin(p, act) if procs[p].held.is_none() && procs[p].pulling.is_none() => {
                let held = match try_take(dir.path(), "box", act, "box box", now) {
                    Ok(held) => Some(held),
                    Err(_) if locked => continue,
                    Err(_) => None,
                };
                match act {
                    Act::Pull => {
                        procs[p].pulling = Some(w.begin_pull());
                        procs[p].held = held;
                    }
                    Act::Teardown => w.teardown(),
                    Act::Kill => {}
                }
            }
            Op::Begin(..) => {}
            Op::Step(p) => {
                if let Some(pull) = procs[p].pulling.as_mut().filter(|x| x.next < CHUNKS) {
                    w.files[pull.file][pull.next] = Some(pull.version);
                    pull.next += 1;
                }
            }
            Op::Finish(p) => {
                if let Some(pull) = procs[p].pulling.take() {
                    w.finish_pull(&pull);
                    if pull.next < CHUNKS {
                        procs[p].pulling = Some(pull);
                        continue;
                    }
                }
                procs[p].held = None;
            }
            Op::Die(p) => procs[p] = Proc::default(),
            Op::BoxChanges => w.box_version += 1,
        }
        if let Some(&v) = w.proven.last() {
            if !w.holds(w.home, v) {
                return Err(format!(
                    "after op {i} ({op:?}): proven {v}, home {:?}",
                    w.home
                ));
            }
        }
        if let Some(v) = w.destroyed {
            if !w.holds(w.home, v) {
                return Err(format!(
                    "after op {i}: destroyed relying on {v}, home differs"
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn never_a_proven_record_over_other_bytes(ops in proptest::collection::vec(op(), 1..40)) {
        prop_assert_eq!(run(&ops, true), Ok(()));
    }
}

/// The race, without locks: pull A stalls mid-copy, the box's file is replaced, pull B
/// rewrites A's part with the new version, finishes and is proven; A's late write of the old
/// version lands in B's proven copy.
#[test]
fn without_the_lock_the_model_finds_the_mixed_copy() {
    use Op::*;
    let race = [
        Begin(0, Act::Pull),
        Step(0),
        BoxChanges,
        Begin(1, Act::Pull),
        Step(1),
        Step(1),
        Step(1),
        Finish(1),
        Step(0),
        Begin(0, Act::Teardown),
    ];
    let before = run(&race, false);
    assert!(
        before.is_err(),
        "the model must be able to fail: {before:?}"
    );
    assert_eq!(run(&race, true), Ok(()));
}
