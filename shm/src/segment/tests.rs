//! Unit tests of the segment algorithm on heap memory (the loom models are in
//! `loom_model.rs`). Kept out of `segment.rs` so that file shows the algorithm alone.

use super::*;

/// A zeroed segment on the heap (plain memory, no OS).
pub(crate) fn heap_segment(total: u64) -> Box<Segment> {
    Segment::boxed(total)
}

fn attach(l: &Locked<'_>) -> u32 {
    l.attach(&Ident::test(1), |_| true, |_| false).0.unwrap()
}

fn check(l: &Locked<'_>) {
    let c = l.census();
    assert!(c.conserved(), "{c:?}");
    assert!(c.queued == 0 || c.available == 0, "permits float: {c:?}");
}

#[test]
fn fifo_weighted_partial_grants() {
    let seg = heap_segment(4);
    let l = Locked::new(&seg);
    let (a, b, c) = (attach(&l), attach(&l), attach(&l));
    assert_eq!(l.enqueue(a, 3), Ok(Enqueued::Ready));
    // b wants 3: takes the 1 left, queues for 2.
    let Ok(Enqueued::Queued { slot: sb, seq: qb }) = l.enqueue(b, 3) else {
        panic!()
    };
    assert_eq!(l.available(), 0);
    // c wants 1: must not overtake b.
    let Ok(Enqueued::Queued { slot: sc, seq: qc }) = l.enqueue(c, 1) else {
        panic!()
    };
    assert_eq!(l.try_take(c, 1), Err(OpError::NoPermits));
    check(&l);
    // a releases 1: goes to b (partial), not to c.
    assert_eq!(l.release(a, 1).unwrap(), Rings::default());
    check(&l);
    // a releases 2: b complete (1 more), c complete (1).
    let r = l.release(a, 2).unwrap();
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![b as usize, c as usize]);
    check(&l);
    assert_eq!(l.finish(b, sb, qb).0, SlotOutcome::Granted);
    assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Granted);
    assert_eq!((l.held(b), l.held(c), l.available()), (3, 1, 0));
    check(&l);
    assert_eq!(l.release(b, 4), Err(OpError::NotHeld { held: 3 }));
    l.release(b, 3).unwrap();
    l.release(c, 1).unwrap();
    assert_eq!(l.available(), 4);
}

#[test]
fn cancel_hands_partial_grant_on() {
    let seg = heap_segment(3);
    let l = Locked::new(&seg);
    let (a, b, c) = (attach(&l), attach(&l), attach(&l));
    l.enqueue(a, 2).unwrap();
    let Ok(Enqueued::Queued { slot: sb, seq: qb }) = l.enqueue(b, 3) else {
        panic!()
    };
    let Ok(Enqueued::Queued { slot: sc, seq: qc }) = l.enqueue(c, 1) else {
        panic!()
    };
    let (out, rings) = l.finish(b, sb, qb);
    assert_eq!(out, SlotOutcome::Cancelled { returned: 1 });
    assert_eq!(rings.iter().collect::<Vec<_>>(), vec![c as usize]);
    assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Granted);
    assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Gone);
    check(&l);
}

#[test]
fn reclaim_dead_holder_and_waiter() {
    let seg = heap_segment(4);
    let l = Locked::new(&seg);
    let (a, b, c) = (attach(&l), attach(&l), attach(&l));
    l.enqueue(a, 4).unwrap();
    let Ok(Enqueued::Queued { .. }) = l.enqueue(b, 2) else {
        panic!()
    };
    let Ok(Enqueued::Queued { slot: sc, seq: qc }) = l.enqueue(c, 3) else {
        panic!()
    };
    l.release(a, 3).unwrap(); // b done, c has 1 of 3
    check(&l);
    // c dies while queued: its partial grant (1) goes back; a dies holding 1.
    let r = l.sweep(None, |p| p == c || p == a);
    assert!(r.iter().next().is_none());
    check(&l);
    assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Gone);
    assert_eq!(l.available(), 2); // 4 - b's granted 2
    assert_eq!(l.census().live, 1);
}

#[test]
fn repair_recomputes_derived_words_and_serves() {
    let seg = heap_segment(5);
    let l = Locked::new(&seg);
    let (a, b, c) = (attach(&l), attach(&l), attach(&l));
    l.enqueue(a, 5).unwrap();
    let Ok(Enqueued::Queued { slot: sb, .. }) = l.enqueue(b, 2) else {
        panic!()
    };
    let Ok(Enqueued::Queued { .. }) = l.enqueue(c, 2) else {
        panic!()
    };
    // Simulate a releaser `a` that died inside `release(3)` after lowering
    // its `held` and half-serving: held 5 -> 2, b got 2 (remaining 0) but
    // is still QUEUED, the links were scrambled, the counter is stale.
    seg.procs[a as usize]
        .acct
        .store(2 << acct::BUSY_BITS, Relaxed);
    seg.slots[sb as usize].remaining.store(0, Relaxed);
    seg.hdr.head.store(NIL, Relaxed);
    seg.hdr.state.store(77 * word::ONE, Relaxed);
    // Repair first (the links must be sound before anything is served):
    // the 1 permit in transit goes to the head; b completes (it had all it
    // needed), c gets 1.
    let rings = l.repair(None, |_| false);
    assert_eq!(rings.iter().collect::<Vec<_>>(), vec![b as usize]);
    check(&l);
    // Then the sweep: a is dead, its 2 held come back; c completes, 1 left.
    let rings = l.sweep(None, |p| p == a);
    assert_eq!(rings.iter().collect::<Vec<_>>(), vec![c as usize]);
    check(&l);
    assert_eq!(l.available(), 1);
}

#[test]
fn close_wakes_everyone_and_banks_partials() {
    let seg = heap_segment(2);
    let l = Locked::new(&seg);
    let (a, b) = (attach(&l), attach(&l));
    l.enqueue(a, 1).unwrap();
    let Ok(Enqueued::Queued { slot, seq }) = l.enqueue(b, 2) else {
        panic!()
    };
    assert_eq!(l.close().iter().collect::<Vec<_>>(), vec![b as usize]);
    check(&l);
    assert_eq!(l.available(), 1);
    assert_eq!(l.enqueue(a, 1), Err(OpError::Closed));
    assert_eq!(l.finish(b, slot, seq).0, SlotOutcome::Closed);
    l.release(a, 1).unwrap();
    assert_eq!(l.available(), 2);
}

#[test]
fn queue_full_is_an_error_not_a_loss() {
    let seg = heap_segment(1);
    let l = Locked::new(&seg);
    let a = attach(&l);
    l.enqueue(a, 1).unwrap();
    for _ in 0..MAX_WAITERS {
        assert!(matches!(l.enqueue(a, 1), Ok(Enqueued::Queued { .. })));
    }
    assert_eq!(l.enqueue(a, 1), Err(OpError::QueueFull));
    check(&l);
}

#[test]
fn process_table_full() {
    let seg = heap_segment(1);
    let l = Locked::new(&seg);
    for _ in 0..MAX_PROCESSES {
        attach(&l);
    }
    assert_eq!(
        l.attach(&Ident::test(1), |_| true, |_| false).0,
        Err(OpError::ProcessTableFull)
    );
    // One dies: its record is reused.
    assert_eq!(
        l.attach(&Ident::test(1), |_| true, |p| p == 7).0.unwrap(),
        7
    );
}

/// Every invariant the repair must restore, and that everything can still
/// be drained back to `total` by the live processes.
fn check_repaired(l: &Locked<'_>, dead: &[u32]) {
    let c = l.census();
    assert!(c.conserved(), "{c:?}");
    assert!(c.queued == 0 || c.available == 0, "permits float: {c:?}");
    // The FIFO: links, count and ticket order agree with the QUEUED slots.
    let h = l.hdr();
    let (mut i, mut prev, mut n, mut last_seq) = (h.head.load(Relaxed), NIL, 0, 0);
    while i != NIL {
        let s = l.slot(i);
        assert_eq!(s.state.load(Relaxed), slot_state::QUEUED);
        assert_eq!(s.prev.load(Relaxed), prev);
        assert!(s.seq.load(Relaxed) > last_seq, "FIFO order broken");
        assert!(!dead.contains(&s.owner.load(Relaxed)), "ghost in the queue");
        last_seq = s.seq.load(Relaxed);
        prev = i;
        i = s.next.load(Relaxed);
        n += 1;
    }
    assert_eq!(h.tail.load(Relaxed), prev);
    assert_eq!(n, c.queued);
    assert_eq!(h.queue_len.load(Relaxed), c.queued);
    // The state word: the fast path is open, QUEUED iff the FIFO is not
    // empty, CLOSED iff closed, no operation announced in a live record.
    let st = h.state.load(Relaxed);
    assert_eq!(st & word::FROZEN, 0, "left frozen");
    assert_eq!(st & word::QUEUED != 0, n > 0, "QUEUED flag wrong: {st:#x}");
    assert_eq!(st & word::CLOSED != 0, l.is_closed());
    // A shrink's debt: DEBT iff owed, and then nothing in the counter; no
    // queued request above the total.
    assert_eq!(st & word::DEBT != 0, c.debt != 0, "DEBT flag wrong: {c:?}");
    assert!(
        c.debt == 0 || c.available == 0,
        "debt with permits free: {c:?}"
    );
    let mut i = h.head.load(Relaxed);
    while i != NIL {
        assert!(
            l.slot(i).requested.load(Relaxed) <= c.total,
            "oversized queued"
        );
        i = l.slot(i).next.load(Relaxed);
    }
    assert_eq!(h.recount_pending.load(Relaxed), 0, "a recount still owed");
    for p in &l.seg.procs {
        if p.state.load(Relaxed) == proc_state::LIVE {
            assert_eq!(acct::busy(p.acct.load(Relaxed)), 0);
            assert!(p.lanes.iter().all(|l| l.load(Relaxed) & 1 == 0));
        }
    }
    if n > 0 {
        let head = l.slot(h.head.load(Relaxed));
        assert!(
            head.remaining.load(Relaxed) > 0,
            "a completable head was left"
        );
    }
    for s in &l.seg.slots {
        if s.state.load(Relaxed) != slot_state::FREE {
            assert!(
                !dead.contains(&s.owner.load(Relaxed)),
                "slot of a dead process"
            );
        }
    }
    // Drain: every live process finishes its slots and releases.
    for _ in 0..2 {
        for i in 0..MAX_WAITERS as u32 {
            let s = l.slot(i);
            if s.state.load(Relaxed) != slot_state::FREE {
                let (o, sq) = (s.owner.load(Relaxed), s.seq.load(Relaxed));
                assert_ne!(l.finish(o, i, sq).0, SlotOutcome::Gone);
            }
        }
        for p in 0..MAX_PROCESSES as u32 {
            if l.proc(p).state.load(Relaxed) == proc_state::LIVE {
                l.release(p, l.held(p)).unwrap();
            }
        }
    }
    assert_eq!(l.available(), l.total(), "{:?}", l.census());
}

/// A crash after every number of stores of every operation, from a state
/// with a holder, a granted-not-collected slot, a partly served head and
/// more waiters: the repair (derived words, then a sweep of the dead)
/// always restores every invariant.
#[test]
fn crash_at_every_store_of_every_operation() {
    // The state, built once per run: total 10. A holds 4; B has a GRANTED
    // slot of 5 not yet collected; C (head) has 1 of 2; D waits for 1;
    // A waits for 3.
    struct S {
        seg: Box<Segment>,
        p: [u32; 4],
        slot: [(u32, u64); 4],
    }
    fn build() -> S {
        let seg = heap_segment(10);
        let l = Locked::new(&seg);
        let [a, b, c, d] = [attach(&l), attach(&l), attach(&l), attach(&l)];
        let q = |p, n| match l.enqueue(p, n).unwrap() {
            Enqueued::Queued { slot, seq } => (slot, seq),
            Enqueued::Ready => (NIL, 0),
        };
        q(a, 7);
        let sb = q(b, 5);
        let sc = q(c, 2);
        let sd = q(d, 1);
        l.release(a, 2).unwrap();
        let sa = q(a, 3);
        l.release(a, 1).unwrap();
        check(&l);
        assert_eq!(l.held(a), 4);
        assert_eq!(l.slot(sb.0).state.load(Relaxed), slot_state::GRANTED);
        S {
            seg,
            p: [a, b, c, d],
            slot: [sa, sb, sc, sd],
        }
    }
    type Op = fn(&Locked<'_>, &S) -> Vec<u32>; // runs the op; returns who dies if it crashes
    let ops: Vec<(&str, Op)> = vec![
        ("release all of A", |l, s| {
            l.release(s.p[0], 4).unwrap();
            vec![s.p[0]]
        }),
        ("release 1 of A", |l, s| {
            l.release(s.p[0], 1).unwrap();
            vec![s.p[0]]
        }),
        ("collect B's grant", |l, s| {
            l.finish(s.p[1], s.slot[1].0, s.slot[1].1);
            vec![s.p[1]]
        }),
        (
            "B's abandoned timed acquire settled: collect, release",
            |l, s| {
                // What the doorbell thread does for a timed acquire that gave
                // up while the lock was held by a stopped process and was
                // granted meanwhile (imp.rs, `settle_abandoned`).
                let (out, _) = l.finish(s.p[1], s.slot[1].0, s.slot[1].1);
                assert_eq!(out, SlotOutcome::Granted);
                l.release(s.p[1], 5).unwrap();
                vec![s.p[1]]
            },
        ),
        ("cancel C (partial head)", |l, s| {
            l.finish(s.p[2], s.slot[2].0, s.slot[2].1);
            vec![s.p[2]]
        }),
        ("cancel D", |l, s| {
            l.finish(s.p[3], s.slot[3].0, s.slot[3].1);
            vec![s.p[3]]
        }),
        ("enqueue B", |l, s| {
            l.enqueue(s.p[1], 2).unwrap();
            vec![s.p[1]]
        }),
        ("close by D", |l, s| {
            l.close();
            vec![s.p[3]]
        }),
        ("A reclaims dead C", |l, s| {
            // C is dead from the start: the reclaimer A dies too.
            l.reclaim(s.p[2]);
            vec![s.p[0], s.p[2]]
        }),
        ("D reclaims dead A", |l, s| {
            l.reclaim(s.p[0]);
            vec![s.p[3], s.p[0]]
        }),
        ("attach E", |l, _| {
            let e = l.attach(&Ident::test(9), |_| true, |_| false).0.unwrap();
            assert_eq!(e, 4);
            vec![4]
        }),
        ("B repairs", |l, s| {
            l.repair(Some(s.p[1]), |_| false);
            vec![s.p[1]]
        }),
        ("D shrinks to 3 (debt 7, nothing failed)", |l, s| {
            l.set_total(3);
            vec![s.p[3]]
        }),
        ("D shrinks to 1 (C and A fail)", |l, s| {
            l.set_total(1);
            vec![s.p[3]]
        }),
        ("D grows to 14 (the FIFO is served)", |l, s| {
            l.set_total(14);
            vec![s.p[3]]
        }),
        ("D shrinks to 2, A releases all", |l, s| {
            l.set_total(2);
            l.release(s.p[0], 4).unwrap();
            vec![s.p[3]]
        }),
        ("D closes, reopens", |l, s| {
            l.close();
            l.reopen();
            vec![s.p[3]]
        }),
    ];
    let mut crashes = 0;
    for (name, op) in &ops {
        for budget in 0.. {
            let s = build();
            let l = Locked::new(&s.seg);
            let mut dead = Vec::new();
            let died = crash::run(budget, || dead = op(&l, &s));
            if !died {
                // Ran to completion: the state must be sound as it is
                // (after the planned deaths of the reclaim cases).
                let gone: Vec<u32> = dead.iter().skip(1).copied().collect();
                l.sweep(None, |p| gone.contains(&p));
                check_repaired(&l, &gone);
                break;
            }
            crashes += 1;
            // What a process that finds the lock's owner dead does.
            let dead = if dead.is_empty() {
                // `op` died before returning its list: recompute it.
                let mut d = Vec::new();
                crash::run(u32::MAX, || d = op(&Locked::new(&build().seg), &s));
                d
            } else {
                dead
            };
            l.repair(None, |p| dead.contains(&p));
            l.sweep(None, |p| dead.contains(&p));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check_repaired(&l, &dead)
            }));
            if r.is_err() {
                panic!("{name}: crash after {budget} stores not repaired");
            }
        }
    }
    assert!(crashes > 50, "only {crashes} crash points");
}

/// Issue 26, item 12: values another process wrote into the segment
/// (indices out of range, a `remaining` above `requested`, counters near
/// overflow) stop the operation and mark it corrupt; nothing panics.
#[test]
fn garbage_in_the_segment_is_reported_not_followed() {
    let seg = heap_segment(4);
    let l = Locked::new(&seg);
    let (a, b) = (attach(&l), attach(&l));
    l.try_take(a, 4).unwrap();
    let Enqueued::Queued { slot, seq } = l.enqueue(b, 2).unwrap() else {
        panic!("not queued");
    };
    assert!(!l.is_corrupt());
    // A head out of range: the release's hand-off stops there.
    seg.hdr.head.store(5000, Relaxed);
    let _ = l.release(a, 1);
    assert!(l.is_corrupt());
    // A link out of range, a remaining above requested, a garbage owner.
    let l = Locked::new(&seg);
    seg.hdr.head.store(slot, Relaxed);
    seg.slots[slot as usize].next.store(70_000, Relaxed);
    seg.slots[slot as usize].remaining.store(u64::MAX, Relaxed);
    assert_eq!(
        l.finish(b, slot, seq).0,
        SlotOutcome::Cancelled { returned: 0 }
    );
    assert!(l.is_corrupt());
    let l = Locked::new(&seg);
    seg.hdr.tail.store(9999, Relaxed);
    let _ = l.enqueue(b, 4);
    assert!(l.is_corrupt());
    let l = Locked::new(&seg);
    for s in seg.slots.iter().take(3) {
        s.owner.store(u32::MAX, Relaxed);
        s.requested.store(u64::MAX, Relaxed);
    }
    seg.hdr.head.store(NIL, Relaxed);
    let _ = l.close();
    let _ = l.census();
    let _ = l.repair(None, |_| false);
    // A FIFO that loops: bounded, reported.
    let l = Locked::new(&seg);
    let s0 = &seg.slots[0];
    s0.state.store(slot_state::QUEUED, Relaxed);
    s0.remaining.store(0, Relaxed);
    s0.next.store(0, Relaxed);
    s0.prev.store(0, Relaxed);
    seg.hdr.head.store(0, Relaxed);
    let _ = l.serve(1);
    // Counters at the edge: the fast path refuses instead of overflowing.
    seg.hdr.state.store(!0b111, Relaxed);
    seg.procs[a as usize].acct.store(!acct::BUSY, Relaxed);
    assert_eq!(fast_release(&seg, a, Some(0), 1), Fast::Slow);
    assert_eq!(fast_release(&seg, a, None, 1), Fast::Slow);
    seg.procs[a as usize].lanes[0].store(7, Relaxed); // odd: garbage
    let _ = fast_take(&seg, a, Some(0), 1);
}

#[test]
fn fast_path_takes_and_releases_without_the_lock_until_someone_queues() {
    let seg = heap_segment(4);
    let l = Locked::new(&seg);
    let (a, b) = (attach(&l), attach(&l));
    assert_eq!(fast_take(&seg, a, None, 3), Fast::Done);
    assert_eq!(fast_take(&seg, b, None, 2), Fast::Slow); // only 1 left
    assert_eq!(fast_release(&seg, b, None, 1), Fast::NotHeld { held: 0 });
    assert_eq!(l.held(a), 3);
    check(&l);
    // b queues for 2: the counter (1) is drained into its slot, QUEUED set.
    let Ok(Enqueued::Queued { slot, seq }) = l.enqueue(b, 2) else {
        panic!()
    };
    assert_eq!(seg.hdr.state.load(Relaxed), word::QUEUED);
    // Now the fast path is shut both ways: a release must hand over.
    assert_eq!(fast_release(&seg, a, None, 1), Fast::Slow);
    assert_eq!(fast_take(&seg, a, None, 1), Fast::Slow);
    assert_eq!(l.held(a), 3, "a failed fast release changed nothing");
    let rings = l.release(a, 1).unwrap();
    assert_eq!(rings.iter().collect::<Vec<_>>(), vec![b as usize]);
    assert_eq!(
        seg.hdr.state.load(Relaxed),
        0,
        "QUEUED cleared with the FIFO"
    );
    assert_eq!(l.finish(b, slot, seq).0, SlotOutcome::Granted);
    check(&l);
    assert_eq!(fast_release(&seg, b, None, 2), Fast::Done);
    assert_eq!(fast_release(&seg, a, None, 2), Fast::Done);
    assert_eq!(l.available(), 4);
    // Closed: no fast take; releases still work.
    assert_eq!(fast_take(&seg, a, None, 1), Fast::Done);
    l.close();
    assert_eq!(fast_take(&seg, a, None, 1), Fast::Slow);
    assert_eq!(l.try_take(a, 1), Err(OpError::Closed));
    assert_eq!(fast_release(&seg, a, None, 1), Fast::Done);
    check(&l);
}

#[test]
fn recount_gives_up_on_a_stuck_live_process_and_retries_later() {
    let seg = heap_segment(10);
    let l = Locked::new(&seg);
    let (a, b, c) = (attach(&l), attach(&l), attach(&l));
    // A died inside a fast take of 3 (announced, counter taken): 3 in transit.
    assert!(crash::run(2, || {
        fast_take(&seg, a, None, 3);
    }));
    // B is alive but stopped at the same point of a fast take of 2.
    assert!(crash::run(2, || {
        fast_take(&seg, b, None, 2);
    }));
    assert_eq!(l.available(), 5);
    // C's sweep finds A dead and busy: a recount is owed, but B stays busy
    // for the whole wait: nothing is handed out while unsure.
    l.sweep(Some(c), |p| p == a);
    assert_eq!(seg.hdr.recount_pending.load(Relaxed), GAVE_UP);
    assert_eq!(l.available(), 5);
    assert_eq!(seg.hdr.state.load(Relaxed) & word::FROZEN, 0);
    assert_eq!(
        fast_take(&seg, c, None, 1),
        Fast::Done,
        "the fast path goes on"
    );
    // B resumes (its commit); the next sweep's recount succeeds.
    seg.procs[b as usize]
        .acct
        .fetch_add(2 * acct::HELD - 1, SeqCst);
    l.sweep(Some(c), |p| p == a);
    assert_eq!(seg.hdr.recount_pending.load(Relaxed), 0);
    check(&l);
    assert_eq!((l.available(), l.held(b), l.held(c)), (7, 2, 1));
}

#[test]
fn direct_slots_are_woken_by_slot_not_by_doorbell() {
    let seg = heap_segment(1);
    let l = Locked::new(&seg);
    let (a, b, c) = (attach(&l), attach(&l), attach(&l));
    l.enqueue(a, 1).unwrap();
    let Ok(Enqueued::Queued { slot: sb, seq: qb }) = l.enqueue(b, 1) else {
        panic!()
    };
    let Ok(Enqueued::Queued { slot: sc, .. }) = l.enqueue(c, 1) else {
        panic!()
    };
    assert!(l.set_direct(b, sb, qb));
    assert!(!l.set_direct(c, sb, qb), "not c's slot");
    let rings = l.release(a, 1).unwrap();
    assert_eq!(rings.iter().count(), 0);
    assert_eq!(rings.slots().collect::<Vec<_>>(), vec![sb as usize]);
    let rings = l.close();
    assert_eq!(rings.iter().collect::<Vec<_>>(), vec![c as usize]);
    assert_eq!(l.slot(sc).state.load(Relaxed), slot_state::CLOSED);
    assert!(!l.set_direct(b, sb, qb), "granted already");
}

/// A process killed after every write of every fast operation (no lock
/// held, so no repair: only the liveness sweep of another process), and
/// every lock holder killed after every write of the reclaim and recount
/// that follows such a death: nothing lost, nothing duplicated.
#[test]
fn crash_at_every_write_of_the_fast_path_and_of_its_recovery() {
    // total 10: A holds 3, B holds 2 (both via the fast path), C holds 1
    // and is alive; 4 available.
    struct S {
        seg: Box<Segment>,
        p: [u32; 4],
    }
    fn build() -> S {
        let seg = heap_segment(10);
        let l = Locked::new(&seg);
        let [a, b, c, d] = [attach(&l), attach(&l), attach(&l), attach(&l)];
        assert_eq!(fast_take(&seg, a, None, 3), Fast::Done);
        assert_eq!(fast_take(&seg, b, None, 2), Fast::Done);
        assert_eq!(fast_take(&seg, c, None, 1), Fast::Done);
        check(&l);
        S {
            seg,
            p: [a, b, c, d],
        }
    }
    /// A died inside a fast take of 4 after its first two writes (announced,
    /// counter taken, `held` not yet raised): a record with `busy != 0`.
    fn build_dead_mid_take() -> S {
        let s = build();
        assert!(crash::run(2, || {
            fast_take(&s.seg, s.p[0], None, 4);
        }));
        s
    }
    /// The same death, with A's fast path on a lane (lane odd, `busy` 0).
    fn build_dead_mid_lane_take() -> S {
        let s = build();
        assert!(crash::run(2, || {
            fast_take(&s.seg, s.p[0], Some(0), 4);
        }));
        assert_eq!(s.seg.procs[s.p[0] as usize].lanes[0].load(Relaxed) & 1, 1);
        s
    }
    /// D queued for 5 (the 4 available are its partial grant).
    fn build_queued() -> S {
        let s = build();
        assert!(matches!(
            Locked::new(&s.seg).enqueue(s.p[3], 5),
            Ok(Enqueued::Queued { .. })
        ));
        s
    }
    /// D queued for 5 and was granted by C's release of 1 (4 + 1).
    fn build_granted() -> S {
        let s = build_queued();
        let l = Locked::new(&s.seg);
        l.release(s.p[2], 1).unwrap();
        assert_eq!(l.seg.slots[0].state.load(Relaxed), slot_state::GRANTED);
        s
    }
    type Op = fn(&Locked<'_>, &S);
    // (name, op, who dies if it crashes, who is dead from the start,
    //  whether the op holds the lock (a crash then means a repair))
    type Case = (&'static str, Op, u32, &'static [u32], bool, fn() -> S);
    let ops: Vec<Case> = vec![
        (
            "fast take 2 by A",
            |l, s| assert_eq!(fast_take(l.seg, s.p[0], None, 2), Fast::Done),
            0,
            &[],
            false,
            build,
        ),
        (
            "fast take 4 by B",
            |l, s| assert_eq!(fast_take(l.seg, s.p[1], None, 4), Fast::Done),
            1,
            &[],
            false,
            build,
        ),
        (
            "fast release 3 by A",
            |l, s| assert_eq!(fast_release(l.seg, s.p[0], None, 3), Fast::Done),
            0,
            &[],
            false,
            build,
        ),
        (
            "fast release 1 by B",
            |l, s| assert_eq!(fast_release(l.seg, s.p[1], None, 1), Fast::Done),
            1,
            &[],
            false,
            build,
        ),
        (
            "fast release undone (queued meanwhile)",
            |l, s| {
                // D queued for 5 (drained the 4, QUEUED set) after B's first
                // look at the state word: B's CAS fails and undoes its first write.
                assert_eq!(l.seg.hdr.state.load(Relaxed), word::QUEUED);
                let acct = &l.seg.procs[s.p[1] as usize].acct;
                acct.cas(acct.load(Relaxed), acct.load(Relaxed) - 2 * acct::HELD + 1)
                    .unwrap();
                acct.add(2 * acct::HELD - 1);
            },
            1,
            &[],
            false,
            build_queued,
        ),
        (
            "fast take 2 by A on a lane",
            |l, s| assert_eq!(fast_take(l.seg, s.p[0], Some(0), 2), Fast::Done),
            0,
            &[],
            false,
            build,
        ),
        (
            "fast release 3 by A on a lane",
            |l, s| assert_eq!(fast_release(l.seg, s.p[0], Some(1), 3), Fast::Done),
            0,
            &[],
            false,
            build,
        ),
        (
            "D sweeps A (dead mid take on a lane)",
            |l, s| {
                l.sweep(Some(s.p[3]), |p| p == s.p[0]);
            },
            3,
            &[0],
            true,
            build_dead_mid_lane_take,
        ),
        (
            "D repairs (A dead mid take on a lane)",
            |l, s| {
                l.repair(Some(s.p[3]), |p| p == s.p[0]);
            },
            3,
            &[0],
            true,
            build_dead_mid_lane_take,
        ),
        (
            "fast collect by D",
            |l, s| {
                let seq = l.seg.slots[0].seq.load(Relaxed);
                assert_eq!(fast_collect(l.seg, s.p[3], 0, seq), Fast::Done);
                assert_eq!(l.held(s.p[3]), 5);
            },
            3,
            &[],
            false,
            build_granted,
        ),
        (
            "D sweeps A (dead mid take)",
            |l, s| {
                l.sweep(Some(s.p[3]), |p| p == s.p[0]);
            },
            3,
            &[0],
            true,
            build_dead_mid_take,
        ),
        (
            "D attaches over A (dead mid take)",
            |l, s| {
                // Reclaims A's record, then claims it (the attacher is record 0 too).
                let _ = l.attach(&Ident::test(9), |_| true, |p| p == s.p[0]);
            },
            0,
            &[0],
            true,
            build_dead_mid_take,
        ),
        (
            "D repairs (A dead mid take)",
            |l, s| {
                l.repair(Some(s.p[3]), |p| p == s.p[0]);
            },
            3,
            &[0],
            true,
            build_dead_mid_take,
        ),
        (
            "census by D",
            |l, _| {
                l.census();
            },
            3,
            &[],
            true,
            build,
        ),
        (
            "locked take by C",
            |l, s| l.try_take(s.p[2], 2).unwrap(),
            2,
            &[],
            true,
            build,
        ),
        (
            "locked release by B",
            |l, s| {
                l.release(s.p[1], 2).unwrap();
            },
            1,
            &[],
            true,
            build,
        ),
        (
            "enqueue by D",
            |l, s| {
                l.enqueue(s.p[3], 6).unwrap();
            },
            3,
            &[],
            true,
            build,
        ),
    ];
    let mut crashes = 0;
    for (name, op, dies, dead0, locked, build) in &ops {
        for budget in 0.. {
            let s = build();
            let l = Locked::new(&s.seg);
            let died = crash::run(budget, || op(&l, &s));
            let mut dead: Vec<u32> = dead0.iter().map(|&i| s.p[i as usize]).collect();
            if !died {
                l.sweep(None, |p| dead.contains(&p));
                check_repaired(&l, &dead);
                break;
            }
            crashes += 1;
            dead.push(s.p[*dies as usize]);
            if *locked {
                // The next locker finds the lock's owner dead.
                l.repair(None, |p| dead.contains(&p));
            }
            // A fast operation holds no lock: only a sweep finds it.
            l.sweep(None, |p| dead.contains(&p));
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check_repaired(&l, &dead)
            }));
            if r.is_err() {
                panic!("{name}: crash after {budget} writes not recovered");
            }
        }
    }
    assert!(crashes > 40, "only {crashes} crash points");
}

/// The offsets `tests/procs.rs` aims its garbage at (layout version 4; the
/// lock ABI at 12 is what `tests/api.rs` rewrites).
#[test]
fn layout_offsets() {
    use core::mem::{offset_of, size_of};
    assert_eq!(LAYOUT_VERSION, 4);
    assert_eq!(offset_of!(Header, version), 8);
    assert_eq!(offset_of!(Header, lock_abi), 12);
    assert_eq!(offset_of!(Segment, lock), 128);
    assert_eq!(offset_of!(Segment, procs), 192);
    assert_eq!(size_of::<Proc>(), 384);
    assert_eq!(offset_of!(Segment, slots), 192 + MAX_PROCESSES * 384);
    assert_eq!(size_of::<Slot>(), 56);
}

/// `inspect` over plain memory: holders by record with their labels, the
/// FIFO in ticket order with partial grants, an uncollected grant counted as
/// its owner's, and the conservation sum on every snapshot.
#[test]
fn inspect_lists_holders_and_the_fifo_in_order() {
    let seg = heap_segment(5);
    let l = Locked::new(&seg);
    let who = |pid, label| Ident {
        pid,
        start_time: 0,
        label,
        host: "h",
    };
    let a = l.attach(&who(10, "a"), |_| true, |_| false).0.unwrap();
    let b = l.attach(&who(11, "b"), |_| true, |_| false).0.unwrap();
    let c = l.attach(&who(12, "c"), |_| true, |_| false).0.unwrap();
    let sums = |i: &Inspection| {
        assert_eq!(
            i.available + i.held() + i.granted_to_waiters(),
            i.total,
            "{i:?}"
        );
    };
    assert_eq!(l.enqueue(a, 4), Ok(Enqueued::Ready));
    let Ok(Enqueued::Queued { .. }) = l.enqueue(b, 3) else {
        panic!()
    };
    let Ok(Enqueued::Queued { slot: sc, seq: qc }) = l.enqueue(c, 1) else {
        panic!()
    };
    let i = l.inspect(crate::clock::now());
    sums(&i);
    assert_eq!((i.total, i.available, i.closed), (5, 0, false));
    assert_eq!(i.holders.len(), 1);
    assert_eq!((i.holders[0].label.as_str(), i.holders[0].pid), ("a", 10));
    assert_eq!(i.holders[0].permits, 4);
    assert!(i.holders[0].held_for.is_some());
    let w: Vec<_> = i
        .waiters
        .iter()
        .map(|w| {
            (
                w.label.as_str(),
                w.host.as_str(),
                w.pid,
                w.permits,
                w.granted,
                w.position,
            )
        })
        .collect();
    assert_eq!(w, [("b", "h", 11, 3, 1, 0), ("c", "h", 12, 1, 0, 1)]);
    // a releases 3: b completes (granted, not collected: b's), c gets 1.
    l.release(a, 3).unwrap();
    let i = l.inspect(crate::clock::now());
    sums(&i);
    let h: Vec<_> = i.holders.iter().map(|h| (h.pid, h.permits)).collect();
    assert_eq!(h, [(10, 1), (11, 3), (12, 1)]);
    assert!(i.waiters.is_empty());
    assert_eq!(l.finish(c, sc, qc).0, SlotOutcome::Granted);
    sums(&l.inspect(crate::clock::now()));
    check(&l);
}

/// Issue 29: `set_total`. Growing serves the FIFO head first, in order;
/// shrinking below what is held revokes nothing and leaves a debt that
/// releases (and cancels, and reclaims) pay before any waiter or the
/// counter; queued requests above the new total fail, the others keep
/// their place and partial grants.
#[test]
fn set_total_grows_into_the_fifo_and_shrinks_into_a_debt() {
    let seg = heap_segment(4);
    let l = Locked::new(&seg);
    let (a, b, c, d) = (attach(&l), attach(&l), attach(&l), attach(&l));
    l.try_take(a, 4).unwrap();
    let q = |p, n| match l.enqueue(p, n).unwrap() {
        Enqueued::Queued { slot, seq } => (slot, seq),
        Enqueued::Ready => panic!("not queued"),
    };
    let sb = q(b, 2);
    let sc = q(c, 3);
    let sd = q(d, 1);
    // Grow by 3: b (2) complete, c gets 1 of 3, d keeps waiting behind it.
    let r = l.set_total(7);
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![b as usize]);
    assert_eq!(l.slot(sb.0).state.load(Relaxed), slot_state::GRANTED);
    assert_eq!(l.slot(sc.0).remaining.load(Relaxed), 2);
    assert_eq!(l.slot(sd.0).state.load(Relaxed), slot_state::QUEUED);
    assert_eq!(l.total(), 7);
    check(&l);
    // Shrink to 2: held 4 (a) + granted 2 (b) + partial 1 (c) = 7; c (3)
    // fails and its 1 pays the debt; d (1) stays queued.
    let r = l.set_total(2);
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![c as usize]);
    assert_eq!(l.slot(sc.0).state.load(Relaxed), slot_state::FAILED);
    assert_eq!(l.finish(c, sc.0, sc.1).0, SlotOutcome::TooManyPermits);
    let cen = l.census();
    assert_eq!((cen.total, cen.debt, cen.available), (2, 4, 0));
    assert!(cen.conserved(), "{cen:?}");
    assert_ne!(seg.hdr.state.load(Relaxed) & word::DEBT, 0);
    // The fast release is shut while in debt; releases pay it first.
    assert_eq!(fast_release(&seg, a, None, 1), Fast::Slow);
    assert_eq!(l.release(a, 3).unwrap(), Rings::default());
    assert_eq!(l.census().debt, 1);
    assert_eq!(l.slot(sd.0).state.load(Relaxed), slot_state::QUEUED);
    // b collects and releases: 1 pays the rest of the debt, 1 serves d.
    assert_eq!(l.finish(b, sb.0, sb.1).0, SlotOutcome::Granted);
    let r = l.release(b, 2).unwrap();
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![d as usize]);
    assert_eq!(l.census().debt, 0);
    assert_eq!(seg.hdr.state.load(Relaxed) & word::DEBT, 0);
    check(&l);
    // Held now: a 1, d 1 (granted) = 2 = total. Nothing free.
    assert_eq!(l.available(), 0);
    assert_eq!(l.enqueue(b, 3), Err(OpError::TooManyPermits));
    // A dead holder's permits pay a debt first too.
    l.set_total(1);
    assert_eq!(l.census().debt, 1);
    l.sweep(None, |p| p == a);
    let cen = l.census();
    assert_eq!((cen.debt, cen.available), (0, 0), "{cen:?}");
    assert!(cen.conserved());
    assert_eq!(l.finish(d, sd.0, sd.1).0, SlotOutcome::Granted);
    l.release(d, 1).unwrap();
    assert_eq!(l.available(), 1);
    check(&l);
}

/// Issue 29: a recount rebuilds the debt from the truth (held and granted
/// beyond the total).
#[test]
fn recount_rebuilds_the_debt() {
    let seg = heap_segment(5);
    let l = Locked::new(&seg);
    let a = attach(&l);
    l.try_take(a, 5).unwrap();
    l.set_total(2);
    seg.hdr.debt.store(0, Relaxed);
    seg.hdr.state.store(0, Relaxed);
    l.repair(None, |_| false);
    let c = l.census();
    assert_eq!((c.debt, c.available, c.total), (3, 0, 2), "{c:?}");
    assert_ne!(seg.hdr.state.load(Relaxed) & word::DEBT, 0);
    l.release(a, 5).unwrap();
    assert_eq!(l.available(), 2);
    check(&l);
}

/// Issue 29: `reopen` undoes `close`; the requests close failed stay failed.
#[test]
fn reopen_undoes_close() {
    let seg = heap_segment(1);
    let l = Locked::new(&seg);
    let (a, b) = (attach(&l), attach(&l));
    l.try_take(a, 1).unwrap();
    let Enqueued::Queued { slot, seq } = l.enqueue(b, 1).unwrap() else {
        panic!("not queued");
    };
    l.close();
    l.reopen();
    assert!(!l.is_closed());
    assert_eq!(l.finish(b, slot, seq).0, SlotOutcome::Closed);
    l.release(a, 1).unwrap();
    assert_eq!(l.enqueue(b, 1), Ok(Enqueued::Ready));
    check(&l);
}
