//! Issue 29: changing the total online (`set_total`,
//! `ConnectOptions::resize`, `reopen`) against a real redis-server, with
//! worker processes as the other clients.

mod support;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{Census, Error, Permit, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

/// A handle with a session of its own (another client, as far as Redis goes).
fn client(s: &Server, name: &str, permits: usize) -> RedisSemaphore {
    RedisSemaphore::connect(&s.url(), name, permits, opts().own_session(true)).expect("connect")
}

/// The conservation sums with the debt term: `available + held + partial ==
/// total + debt`, the debt being exactly what is held and partly granted
/// beyond the total (then nothing is available).
#[track_caller]
fn conserved(sem: &RedisSemaphore) -> Census {
    let c = sem.census().expect("census");
    assert!(c.conserved(), "permits not conserved: {c:?}");
    assert_eq!(
        c.debt,
        (c.held + c.partial).saturating_sub(c.total),
        "{c:?}"
    );
    assert!(c.queued == 0 || c.available == 0, "permits float: {c:?}");
    assert!(
        c.debt == 0 || c.available == 0,
        "debt with permits free: {c:?}"
    );
    c
}

/// The same on an `inspect()` snapshot (no debt field there: `available`
/// must be `total − held − granted`, or 0 when that is negative).
#[track_caller]
fn inspect_conserved(sem: &RedisSemaphore) -> volt_sem::inspect::Inspection {
    let i = sem.inspect().expect("inspect");
    let used = i.held() + i.granted_to_waiters();
    assert_eq!(i.available, i.total.saturating_sub(used), "{i:?}");
    i
}

fn wait_queued(sem: &RedisSemaphore, n: u64) {
    eventually("queued", Duration::from_secs(10), || {
        sem.census().unwrap().queued == n
    });
}

/// Growing while other processes' requests are queued serves them at once,
/// in FIFO order, weights included (a head the new permits cannot complete
/// keeps them; a later, smaller request does not overtake it).
#[test]
fn grow_serves_queued_waiters_at_once_in_fifo_order() {
    let s = Server::start();
    let h = client(&s, "rgrow", 4);
    let _all = h.try_acquire(4).unwrap();
    let mut a = Worker::spawn(&s.url(), "rgrow", 4, 10_000);
    a.send("acquire 3");
    wait_queued(&h, 1);
    let mut b = Worker::spawn(&s.url(), "rgrow", 4, 10_000);
    b.send("acquire 2");
    wait_queued(&h, 2);
    let mut c = Worker::spawn(&s.url(), "rgrow", 4, 10_000);
    c.send("acquire 1");
    wait_queued(&h, 3);
    h.set_total(8).unwrap();
    assert_eq!(h.total_permits(), 8);
    assert!(a.line().starts_with("granted 3 "));
    let i = inspect_conserved(&h);
    assert_eq!(i.total, 8);
    assert_eq!(
        i.waiters
            .iter()
            .map(|w| (w.permits, w.granted))
            .collect::<Vec<_>>(),
        vec![(2, 1), (1, 0)]
    );
    h.set_total(10).unwrap();
    let (lb, lc) = (b.line(), c.line());
    assert!(lb.starts_with("granted 2 ") && lc.starts_with("granted 1 "));
    // FIFO: B's grant was issued before C's (tokens increase per grant).
    let tok = |l: &str| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap();
    assert!(tok(&lb) < tok(&lc));
    let cen = conserved(&h);
    assert_eq!((cen.available, cen.queued, cen.held), (0, 0, 10));
}

/// Shrinking below what is held revokes nothing: what comes back pays the
/// debt first, new acquires wait until enough came back; a queued request
/// above the new total fails at once with `TooManyPermits` (its partial
/// grant pays the debt), a smaller one keeps its place.
#[test]
fn shrink_below_held_leaves_a_debt_that_releases_pay_first() {
    let s = Server::start();
    let h = client(&s, "rshrink", 6);
    let mut mine: Vec<Permit> = (0..5).map(|_| h.try_acquire(1).unwrap()).collect();
    let mut a = Worker::spawn(&s.url(), "rshrink", 6, 10_000);
    a.send("acquire 4"); // takes the 1 left, queues for 3
    wait_queued(&h, 1);
    let mut b = Worker::spawn(&s.url(), "rshrink", 6, 10_000);
    b.send("acquire 1");
    wait_queued(&h, 2);
    h.set_total(3).unwrap();
    assert_eq!(a.line(), "error TooManyPermits");
    let c = conserved(&h);
    assert_eq!((c.total, c.held, c.debt, c.queued), (3, 5, 2, 1), "{c:?}");
    let i = inspect_conserved(&h);
    assert_eq!(
        (i.total, i.held(), i.available, i.waiters.len()),
        (3, 5, 0, 1)
    );
    assert_eq!(h.held_permits(), 5, "nothing revoked");
    let other = client(&s, "rshrink", 3);
    drop(mine.pop());
    assert_eq!(conserved(&h).debt, 1);
    assert_eq!(other.try_acquire(1).map(|_| ()), Err(Error::NoPermits));
    drop(mine.pop());
    let c = conserved(&h);
    assert_eq!((c.debt, c.queued), (0, 1));
    // The next one serves B.
    drop(mine.pop());
    assert!(b.line().starts_with("granted 1 "));
    let c = conserved(&h);
    assert_eq!((c.held, c.available), (3, 0));
    assert_eq!(h.set_total(0), Err(Error::InvalidPermits));
    assert_eq!(
        h.set_total(volt_sem_redis::MAX_PERMITS + 1),
        Err(Error::InvalidPermits)
    );
    drop(mine);
    let c = conserved(&h);
    assert_eq!((c.available, c.total, c.held), (2, 3, 1));
}

/// A session reaped at its lease's expiry while a debt exists: its permits
/// pay the debt first.
#[test]
fn a_reaped_session_pays_the_debt_first() {
    let s = Server::start();
    let h = client(&s, "rreap", 4);
    let mut w = Worker::spawn(&s.url(), "rreap", 4, 1500);
    w.send("try 3");
    assert!(w.line().starts_with("granted 3 "));
    let _one = h.try_acquire(1).unwrap();
    h.set_total(2).unwrap();
    assert_eq!(conserved(&h).debt, 2);
    let _ = w.child.kill();
    let _ = w.child.wait();
    eventually("reaped", Duration::from_secs(10), || {
        conserved(&h).sessions == 1
    });
    let c = conserved(&h);
    assert_eq!((c.debt, c.available, c.held), (0, 1, 1), "{c:?}");
}

/// `connect` to an existing semaphore with another total: `TotalMismatch`
/// by default (nothing changes), the total changed with `resize(true)`.
#[test]
fn connect_with_another_total_needs_resize() {
    let s = Server::start();
    let first = client(&s, "rconnect", 8);
    assert_eq!(
        RedisSemaphore::connect(&s.url(), "rconnect", 10, opts()).map(|_| ()),
        Err(Error::TotalMismatch { existing: 8 })
    );
    assert_eq!(conserved(&first).total, 8);
    let second = RedisSemaphore::connect(&s.url(), "rconnect", 10, opts().resize(true)).unwrap();
    assert_eq!(second.total_permits(), 10);
    let c = conserved(&first);
    assert_eq!((c.total, c.available), (10, 10));
    assert_eq!(first.total_permits(), 10, "learnt from the census");
    // Another process, the same.
    let mut w = Worker::spawn(&s.url(), "rconnect", 10, 10_000);
    w.send("try 10");
    assert!(w.line().starts_with("granted 10 "));
}

/// A `connect` that shares the live session of an earlier one in this
/// process (same URL, name and options) is still a `connect`: the total
/// asked for is checked against the one in Redis (another client may have
/// changed it since the first), `TotalMismatch` without `resize`, and with
/// `resize` the total becomes the one asked for (the last one wins). It
/// compared with the total the first handle had last heard of instead.
#[test]
fn a_shared_connect_checks_and_resizes_the_total_in_redis() {
    let s = Server::start();
    let other = client(&s, "rshared", 4);
    // Shared sessions (no own_session): the second connect finds the first.
    let first = RedisSemaphore::connect(&s.url(), "rshared", 4, opts()).unwrap();
    other.set_total(6).unwrap();
    assert_eq!(first.total_permits(), 4, "not heard of yet");
    assert_eq!(
        RedisSemaphore::connect(&s.url(), "rshared", 4, opts()).map(|_| ()),
        Err(Error::TotalMismatch { existing: 6 })
    );
    assert_eq!(
        conserved(&other).total,
        6,
        "a refused connect changes nothing"
    );
    // With resize: the first connect set 4, another client 6, this one 4
    // again, and it is the last.
    let r1 = RedisSemaphore::connect(&s.url(), "rshared", 4, opts().resize(true)).unwrap();
    assert_eq!(conserved(&other).total, 4);
    other.set_total(6).unwrap();
    let r2 = RedisSemaphore::connect(&s.url(), "rshared", 4, opts().resize(true)).unwrap();
    assert_eq!(
        conserved(&other).total,
        4,
        "the last connect with resize wins"
    );
    assert_eq!((r1.total_permits(), r2.total_permits()), (4, 4));
    // And the same total as in Redis still shares.
    let same = RedisSemaphore::connect(&s.url(), "rshared", 4, opts().resize(true)).unwrap();
    assert_eq!(same.total_permits(), 4);
    drop((first, r1, r2, same));
    conserved(&other);
}

/// `reopen` undoes `close`: acquires work again, also through a handle
/// that saw the close; a waiter the close failed stays failed.
#[test]
fn reopen_after_close() {
    let s = Server::start();
    let h = client(&s, "rreopen", 1);
    let p = h.try_acquire(1).unwrap();
    let mut w = Worker::spawn(&s.url(), "rreopen", 1, 10_000);
    w.send("acquire 1");
    wait_queued(&h, 1);
    h.close().unwrap();
    assert_eq!(w.line(), "error Closed");
    assert_eq!(h.try_acquire(1).map(|_| ()), Err(Error::Closed));
    let other = client(&s, "rreopen", 1);
    other.reopen().unwrap();
    drop(p);
    assert!(h.is_closed(), "h saw the close, not the reopen yet");
    let again = h.try_acquire(1).unwrap();
    assert!(!h.is_closed());
    w.send("acquire 1");
    wait_queued(&h, 1);
    drop(again);
    assert!(w.line().starts_with("granted 1 "));
    other.reopen().unwrap(); // not closed: a no-op
    conserved(&h);
}

/// Threads with sessions of their own acquire and release weighted permits
/// (1 to 3; 3 is above the total while it is 2) while the test resizes
/// 4 -> 8 -> 2 -> 5 over and over: every snapshot is conserved (with the
/// debt term), the workers never count more permits in use than the limit
/// (the total, or the total before a shrink until its debt is paid), and
/// at the end, everything released, `available == total`.
#[test]
fn resize_under_load() {
    let s = Server::start();
    let name = "rload";
    let sem = client(&s, name, 4);
    let current = AtomicI64::new(0);
    let allowed = AtomicU64::new(4);
    let stop = AtomicU64::new(0);
    let (ops, checked, too_many, violations) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    struct StopOnDrop<'a>(&'a AtomicU64);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(1, SeqCst);
        }
    }
    let (mut snapshots, mut debts) = (0u32, 0u32);
    // Connected before the resizing starts (at total 4).
    let handles: Vec<RedisSemaphore> = (0..3).map(|_| client(&s, name, 4)).collect();
    std::thread::scope(|sc| {
        for (t, h) in handles.into_iter().enumerate() {
            let t = t as u64;
            let (current, allowed, stop) = (&current, &allowed, &stop);
            let (ops, checked, too_many, violations) = (&ops, &checked, &too_many, &violations);
            sc.spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1);
                let mut next = move |n: u64| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng % n
                };
                while stop.load(SeqCst) == 0 {
                    let k = 1 + next(3);
                    let got = if next(2) == 0 {
                        h.acquire_timeout(k as usize, Duration::from_millis(next(20) + 1))
                    } else {
                        h.try_acquire(k as usize)
                    };
                    let p = match got {
                        Ok(p) => p,
                        Err(Error::TimedOut | Error::NoPermits) => continue,
                        Err(Error::TooManyPermits) => {
                            too_many.fetch_add(1, SeqCst);
                            continue;
                        }
                        Err(e) => panic!("acquire({k}): {e}"),
                    };
                    let w1 = allowed.load(SeqCst);
                    let now = current.fetch_add(k as i64, SeqCst) + k as i64;
                    let w2 = allowed.load(SeqCst);
                    if (w2 >> 32) - (w1 >> 32) <= 1 {
                        let lim = (w1 & 0xffff_ffff).max(w2 & 0xffff_ffff) as i64;
                        if now > lim {
                            violations.fetch_add(1, SeqCst);
                            eprintln!("limit exceeded: {now} in use, allowed {lim}");
                        }
                        checked.fetch_add(1, SeqCst);
                    }
                    if next(2) == 0 {
                        std::thread::sleep(Duration::from_micros(next(500)));
                    }
                    current.fetch_sub(k as i64, SeqCst);
                    drop(p);
                    ops.fetch_add(1, SeqCst);
                }
            });
        }
        let _stop = StopOnDrop(&stop);
        let mut gen = 0u64;
        let mut publish = |v: u64| {
            gen += 1;
            allowed.store(gen << 32 | v, SeqCst);
        };
        let mut total = 4u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            for next in [8u64, 2, 5, 4] {
                if next > total {
                    publish(next);
                    sem.set_total(next as usize).unwrap();
                } else {
                    sem.set_total(next as usize).unwrap();
                    let t = Instant::now();
                    loop {
                        let c = conserved(&sem);
                        snapshots += 1;
                        if c.debt == 0 {
                            break;
                        }
                        debts += 1;
                        assert!(t.elapsed() < Duration::from_secs(10), "debt never paid");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    publish(next);
                }
                total = next;
                inspect_conserved(&sem);
                snapshots += 1;
                std::thread::sleep(Duration::from_millis(3));
            }
        }
    });
    let c = conserved(&sem);
    let (ops, checked, too_many) = (
        ops.load(SeqCst),
        checked.load(SeqCst),
        too_many.load(SeqCst),
    );
    eprintln!(
        "resize under load: {ops} grants used ({checked} checked against the limit), \
         {too_many} TooManyPermits, {snapshots} snapshots ({debts} with a debt), {c:?}"
    );
    assert_eq!(violations.load(SeqCst), 0, "the limit was exceeded");
    assert_eq!(
        (c.available, c.total, c.held, c.queued, c.debt),
        (4, 4, 0, 0, 0)
    );
    assert!(ops > 50 && checked > 50, "the load did not run: {ops} ops");
    assert!(
        debts > 0,
        "no shrink ever left a debt: the test did not test it"
    );
}

/// A handle whose session was lost registers a new one with whatever total
/// the semaphore has then (another client changed it meanwhile), instead
/// of failing with `TotalMismatch`.
#[test]
fn a_new_session_adopts_the_total_in_force() {
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "radopt", 2, short_lease()).unwrap();
    let p = a.acquire_blocking(1).unwrap();
    let b = client(&s, "radopt", 2);
    b.set_total(3).unwrap();
    // Expire a's session behind its back (as a long pause would).
    let keys = volt_sem_redis::scripts::Keys::new("volt-sem", "radopt");
    let mut raw = s.raw();
    let held: Vec<(String, u64)> = redis::cmd("HGETALL")
        .arg(&keys.all()[4])
        .query(&mut raw)
        .unwrap();
    // (The other sessions' holdings are at 0.)
    let held: Vec<(String, u64)> = held.into_iter().filter(|(_, n)| *n > 0).collect();
    assert_eq!(held.len(), 1);
    let _: () = redis::cmd("ZADD")
        .arg(&keys.all()[3])
        .arg(1)
        .arg(&held[0].0)
        .query(&mut raw)
        .unwrap();
    eventually("a learns the loss", Duration::from_secs(10), || {
        let _ = b.census();
        p.is_lost()
    });
    assert_eq!(a.total_permits(), 2, "not heard of the change yet");
    let q = a.acquire_timeout(3, Duration::from_secs(5)).unwrap();
    assert_eq!(a.total_permits(), 3);
    drop(q);
    a.flush().unwrap();
    let c = conserved(&b);
    assert_eq!((c.total, c.available), (3, 3));
}
