//! loom models of the segment algorithm: processes simulated as loom threads
//! over one segment in ordinary memory, the robust segment lock as a loom
//! mutex with an "owner died" flag (what `EOWNERDEAD` reports), a death as an
//! operation abandoned after a given number of writes (`segment::crash`).
//! The lock is a word holding its owner (as a robust futex does): a death
//! inside a critical section leaves it held, and the next locker takes it
//! over once the owner is dead, and repairs (what `EOWNERDEAD` means).
//!
//! Run with `make test-shm-loom`, i.e.
//! `RUSTFLAGS="--cfg volt_loom" cargo test -p volt-sem-shm --lib --release loom`.
//! Every model ends by checking permit conservation and that the live
//! processes can take every permit back; loom reports a waiter that never
//! wakes as a deadlock or as too many branches.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

use loom::sync::atomic::{AtomicBool, AtomicU32};
use loom::sync::Arc;
use loom::thread;

use crate::segment::{
    crash, fast_collect, fast_release, fast_take, slot_state, Enqueued, Fast, Ident, Locked,
    Segment, SlotOutcome, MAX_PROCESSES,
};

fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(usize::MAX, f)
}

/// Like `model`, with at most `max_preemptions` whatever the environment says
/// (the three-process model takes minutes at 3).
fn model_bounded(max_preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let mut builder = loom::model::Builder::new();
    let bound = builder.preemption_bound.unwrap_or(2).min(max_preemptions);
    builder.preemption_bound = Some(bound);
    // Waiters spin (yielding) and sweep while they wait: longer executions
    // than loom's default budget, still bounded by the `stuck` check.
    builder.max_branches = 20_000;
    // A plain std counter: loom does not track it, it only counts executions.
    let iterations = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = iterations.clone();
    let start = std::time::Instant::now();
    builder.check(move || {
        counter.fetch_add(1, Relaxed);
        f()
    });
    eprintln!(
        "loom-model {}: {} iterations, {:.2} s",
        std::thread::current().name().unwrap_or("?"),
        iterations.load(Relaxed),
        start.elapsed().as_secs_f64()
    );
}

/// The segment, its lock, and which simulated processes are dead.
struct Machine {
    seg: Box<Segment>,
    /// The robust lock: 0 when free, else its owner's record + 1.
    lock: AtomicU32,
    dead: [AtomicBool; MAX_PROCESSES],
}

impl Machine {
    fn new(total: u64, procs: u32) -> (Arc<Machine>, Vec<u32>) {
        let m = Machine {
            seg: Segment::boxed(total),
            lock: AtomicU32::new(0),
            dead: core::array::from_fn(|_| AtomicBool::new(false)),
        };
        let l = Locked::new(&m.seg);
        let ids = (0..procs)
            .map(|_| l.attach(&Ident::test(1), |_| true, |_| false).0.unwrap())
            .collect();
        (Arc::new(m), ids)
    }

    fn is_dead(&self, p: u32) -> bool {
        self.dead[p as usize].load(SeqCst)
    }

    /// Runs `f` under the segment lock, repairing first if the previous owner
    /// died inside (as `imp::Inner::locked` does on `EOWNERDEAD`). If `f`
    /// dies, the lock stays held by `me`, as a robust mutex of a dead owner.
    fn locked<R>(&self, me: u32, f: impl FnOnce(&Locked<'_>) -> R) -> R {
        let owner_died = loop {
            match self.lock.compare_exchange(0, me + 1, Acquire, Relaxed) {
                Ok(_) => break false,
                Err(owner) if self.is_dead(owner - 1) => {
                    if self
                        .lock
                        .compare_exchange(owner, me + 1, Acquire, Relaxed)
                        .is_ok()
                    {
                        break true;
                    }
                }
                Err(_) => thread::yield_now(),
            }
        };
        let l = Locked::new(&self.seg);
        if owner_died {
            l.repair(Some(me), |p| self.is_dead(p));
            l.sweep(Some(me), |p| self.is_dead(p));
        }
        let r = f(&l);
        self.lock.store(0, Release);
        r
    }

    /// `acquire_blocking` as `imp` runs it: fast path, else queue and wait on
    /// the slot's state (sweeping for dead processes meanwhile), then collect.
    fn acquire(&self, me: u32, n: u64) {
        // Each simulated process is one thread: lane 0 is its own.
        if fast_take(&self.seg, me, Some(0), n) == Fast::Done {
            return;
        }
        let q = self.locked(me, |l| {
            l.sweep(Some(me), |p| self.is_dead(p));
            let q = l.enqueue(me, n).unwrap();
            if let Enqueued::Queued { slot, seq } = q {
                assert!(l.set_direct(me, slot, seq));
            }
            q
        });
        let Enqueued::Queued { slot, seq } = q else {
            return;
        };
        let mut rounds = 0;
        while self.seg.slots[slot as usize].state.load(Acquire) == slot_state::QUEUED {
            rounds += 1;
            if rounds > 20 {
                let l = Locked::new(&self.seg);
                panic!(
                    "stuck: me {me} slot {slot} dead {:?} lock {} {:?} st {:#x} acct {:?}",
                    (0..4).map(|p| self.is_dead(p)).collect::<Vec<_>>(),
                    self.lock.load(SeqCst),
                    l.census(),
                    self.seg.hdr.state.load(SeqCst),
                    self.seg
                        .procs
                        .iter()
                        .map(|p| p.acct.load(SeqCst))
                        .collect::<Vec<_>>()
                );
            }
            thread::yield_now();
            self.locked(me, |l| l.sweep(Some(me), |p| self.is_dead(p)));
        }
        if fast_collect(&self.seg, me, slot, seq) != Fast::Done {
            assert_eq!(
                self.locked(me, |l| l.finish(me, slot, seq).0),
                SlotOutcome::Granted
            );
        }
    }

    fn release(&self, me: u32, n: u64) {
        match fast_release(&self.seg, me, Some(0), n) {
            Fast::Done => {}
            Fast::NotHeld { held } => panic!("release {n} with {held} held"),
            Fast::Slow => {
                self.locked(me, |l| l.release(me, n)).unwrap();
            }
        }
    }

    /// `me` runs `f` and dies after `budget` writes (or completes).
    fn run_or_die(&self, me: u32, budget: u32, f: impl FnOnce()) {
        if crash::run(budget, f) {
            self.dead[me as usize].store(true, SeqCst);
        }
    }

    /// At the end: the survivors sweep the dead, then conservation, and the
    /// counter is back to `total` once every live process released what it
    /// holds.
    fn check_end(&self, survivor: u32) {
        self.locked(survivor, |l| l.sweep(Some(survivor), |p| self.is_dead(p)));
        let l = Locked::new(&self.seg);
        let c = l.census();
        assert!(c.conserved(), "{c:?}");
        assert!(c.queued == 0 || c.available == 0, "{c:?}");
        for p in 0..MAX_PROCESSES as u32 {
            if !self.is_dead(p) {
                let held = l.held(p);
                if held > 0 {
                    l.release(p, held).unwrap();
                }
            }
        }
        assert_eq!(l.available(), l.total(), "{:?}", l.census());
    }
}

/// Two processes, one permit: the fast path against the queue. A fast
/// release racing with an enqueuer either lands first (and is drained into
/// the request) or sees QUEUED and hands over under the lock: the waiter
/// always wakes.
#[test]
fn loom_fast_path_against_queue_handoff() {
    model(|| {
        let (m, p) = Machine::new(1, 2);
        let m2 = m.clone();
        let b = p[1];
        let t = thread::spawn(move || {
            m2.acquire(b, 1);
            m2.release(b, 1);
        });
        m.acquire(p[0], 1);
        m.release(p[0], 1);
        t.join().unwrap();
        m.check_end(p[0]);
    });
}

/// A recount (what follows a death) while another process runs the fast
/// path: the census under FROZEN is exact, so nothing is lost or duplicated.
#[test]
fn loom_recount_against_fast_path() {
    model(|| {
        let (m, p) = Machine::new(2, 2);
        let (a, b) = (p[0], p[1]);
        assert_eq!(fast_take(&m.seg, b, None, 1), Fast::Done);
        let m2 = m.clone();
        let t = thread::spawn(move || {
            m2.acquire(a, 1);
            m2.release(a, 1);
        });
        m.locked(b, |l| l.recount(Some(b), &mut |_| false));
        t.join().unwrap();
        assert_eq!(Locked::new(&m.seg).held(b), 1);
        m.check_end(b);
    });
}

/// A holder dies after every number of writes of an acquire + release (fast
/// path, or the locked path when the other process is queued: 24 covers
/// both to the end), while the
/// other process wants every permit: its sweeps bring the dead process's
/// permits back (by reclaim or recount), exactly once.
#[test]
fn loom_holder_dies_anywhere() {
    for budget in 0..24 {
        model(move || {
            let (m, p) = Machine::new(2, 2);
            let (a, b) = (p[0], p[1]);
            let m2 = m.clone();
            let t = thread::spawn(move || {
                m2.run_or_die(a, budget, || {
                    m2.acquire(a, 1);
                    m2.release(a, 1);
                });
            });
            m.acquire(b, 2);
            m.release(b, 2);
            t.join().unwrap();
            m.check_end(b);
        });
    }
}

/// A queued waiter dies after every number of writes of its acquire (the
/// enqueue under the lock, then its collect) and release, while the holder
/// releases and acquires again: no ghost in the queue (the holder's second
/// acquire would wait behind it for ever), the permit comes back once.
#[test]
fn loom_queued_waiter_dies_anywhere() {
    for budget in 0..20 {
        model(move || {
            let (m, p) = Machine::new(1, 2);
            let (a, b) = (p[0], p[1]);
            assert_eq!(fast_take(&m.seg, b, None, 1), Fast::Done);
            let m2 = m.clone();
            let t = thread::spawn(move || {
                m2.run_or_die(a, budget, || {
                    m2.acquire(a, 1);
                    m2.release(a, 1);
                });
            });
            m.release(b, 1);
            m.acquire(b, 1);
            m.release(b, 1);
            t.join().unwrap();
            m.check_end(b);
        });
    }
}

/// Three processes: a holder dies after every number of writes of its fast
/// acquire + release while another runs the same fast path and a third wants
/// every permit: the third's sweeps recount (the dead record is busy) while
/// the live fast path goes on; nothing lost, nothing duplicated.
#[test]
fn loom_dead_fast_holder_recounted_against_live_fast_path() {
    // The holder's writes (on its lane): take = lane odd (1), counter (2),
    // held (3), lane even (4); release = lane odd (5), held (6), counter (7),
    // lane even (8). It dies after write 1, 2, 3, 6 or 7: every window where
    // its lane is odd, with permits in transit (2, 6) or not.
    for budget in [1, 2, 3, 6, 7] {
        model_bounded(2, move || {
            let (m, p) = Machine::new(3, 3);
            let (a, b, c) = (p[0], p[1], p[2]);
            let ma = m.clone();
            let ta = thread::spawn(move || {
                ma.run_or_die(a, budget, || {
                    ma.acquire(a, 1);
                    ma.release(a, 1);
                });
            });
            let mc = m.clone();
            let tc = thread::spawn(move || {
                mc.acquire(c, 1);
                mc.release(c, 1);
            });
            m.acquire(b, 3);
            m.release(b, 3);
            ta.join().unwrap();
            tc.join().unwrap();
            m.check_end(b);
        });
    }
}

/// Issue 29: a shrink below what is held (a debt) racing with a fast
/// release. The release either lands in the counter before the shrink's CAS
/// (and is taken by it) or sees DEBT and pays the debt under the lock; a
/// third acquire waits until the debt is paid and is then served. Nothing
/// lost or duplicated, no debt left.
#[test]
fn loom_shrink_debt_against_fast_release() {
    model(|| {
        let (m, p) = Machine::new(2, 2);
        let (a, b) = (p[0], p[1]);
        assert_eq!(fast_take(&m.seg, a, None, 2), Fast::Done);
        let m2 = m.clone();
        let t = thread::spawn(move || {
            m2.release(a, 1);
            m2.release(a, 1);
        });
        m.locked(b, |l| l.set_total(1));
        m.acquire(b, 1);
        // The limit: b's permit and a's never exceed the total before the
        // shrink (2), and after b got its permit the debt was paid.
        let c = Locked::new(&m.seg).census();
        assert!(c.held + c.granted <= 2, "{c:?}");
        m.release(b, 1);
        t.join().unwrap();
        assert_eq!(Locked::new(&m.seg).census().debt, 0);
        m.check_end(b);
    });
}

/// Issue 29: a grow racing with an acquire that may queue: the new permit
/// goes to the queued request (served under the grow's lock) or, if the
/// acquirer is not queued yet, to the counter where its fast path or its
/// enqueue takes it. The waiter always wakes.
#[test]
fn loom_grow_against_queued_waiter() {
    model(|| {
        let (m, p) = Machine::new(2, 2);
        let (a, b) = (p[0], p[1]);
        assert_eq!(fast_take(&m.seg, a, None, 2), Fast::Done);
        let m2 = m.clone();
        let t = thread::spawn(move || {
            m2.acquire(b, 1);
            m2.release(b, 1);
        });
        m.locked(a, |l| l.set_total(3));
        t.join().unwrap();
        m.release(a, 2);
        assert_eq!(Locked::new(&m.seg).total(), 3);
        m.check_end(a);
    });
}
