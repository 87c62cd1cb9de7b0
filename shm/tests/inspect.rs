//! `SharedSemaphore::inspect` and handle labels (issue 29), with real
//! processes: who holds (label, host, pid, permits, `held_for`), who waits in
//! FIFO order (`granted`, `waiting_for`), dead processes never listed, and
//! the conservation sum on every snapshot.
#![cfg(target_os = "linux")]

mod support;

use std::time::{Duration, Instant};

use support::child::{say, Child};
use support::Name;
use volt_sem::inspect::{default_label, hostname, MAX_LABEL_LEN};
use volt_sem_shm::{Error, Inspection, OpenOptions, SharedSemaphore};

/// How much later than the truth a duration may be reported: the test's own
/// scheduling between its clock reads and the read under the lock, and one
/// tick of the coarse clock that stamps `held_for`. Generous on a loaded
/// 2-core machine, still far below the durations slept (300 ms and more).
const LATE: Duration = Duration::from_millis(100);
/// How much earlier: none is expected (stamps are taken before the moments
/// the test measures from); 5 ms for clock granularity.
const EARLY: Duration = Duration::from_millis(5);

fn env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// Not a test of its own: the entry point of the child processes (see
/// `support::child`). Roles: `acquire` (`N` permits, blocking, with the
/// label `LABEL` if set; then holds them until killed), `churn` (acquires
/// and releases of every kind until killed).
#[test]
fn child_main() {
    let Some(role) = env("VOLT_SHM_ROLE") else {
        return;
    };
    let name = env("VOLT_SHM_NAME").unwrap();
    let total: usize = env("VOLT_SHM_TOTAL").unwrap().parse().unwrap();
    let mut opts = OpenOptions::new().attach_only();
    if let Some(label) = env("LABEL") {
        opts = opts.label(label);
    }
    let sem = SharedSemaphore::open(&name, total, opts).unwrap();
    match role.as_str() {
        "acquire" => {
            let n: usize = env("N").unwrap().parse().unwrap();
            let before = now_ns();
            say("start");
            say(&format!("start {before}"));
            sem.acquire_blocking(n).unwrap().forget();
            let after = now_ns();
            say("got");
            // The shared clock around the acquire, for the parent's bounds.
            say(&format!("times {before} {after}"));
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "churn" => {
            // Fast-path pairs, blocking acquires that queue, and cancels
            // (timeouts), until killed.
            say("churning");
            loop {
                if let Ok(p) = sem.try_acquire(1) {
                    drop(p);
                }
                if let Ok(p) = sem.acquire_timeout(2, Duration::from_micros(200)) {
                    drop(p);
                }
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// `CLOCK_MONOTONIC`, the clock `inspect` measures with, which every process
/// of the machine shares: a child's readings bound the truth for the parent.
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn ns(d: u64) -> Duration {
    Duration::from_nanos(d)
}

/// A child's `times` line: the shared clock just before its acquire
/// started and just after it returned.
#[track_caller]
fn times(c: &mut Child) -> (u64, u64) {
    let t = Instant::now();
    loop {
        c.drain();
        if let Some(l) = c.seen.iter().find(|l| l.starts_with("times ")) {
            let v: Vec<u64> = l[6..].split(' ').map(|x| x.parse().unwrap()).collect();
            return (v[0], v[1]);
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", c.seen);
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn acquirer(name: &str, total: usize, n: usize, label: &str) -> Child {
    Child::spawn(
        name,
        total,
        "acquire",
        &[("N", n.to_string()), ("LABEL", label.to_string())],
    )
}

/// One snapshot, checked for conservation and for positions `0..len`.
#[track_caller]
fn inspect(sem: &SharedSemaphore) -> Inspection {
    let i = sem.inspect().unwrap();
    assert_eq!(
        i.available + i.held() + i.granted_to_waiters(),
        i.total,
        "not conserved: {i:?}"
    );
    for (k, w) in i.waiters.iter().enumerate() {
        assert_eq!(w.position, k, "{i:?}");
    }
    i
}

/// Waits until `n` requests are queued; returns the snapshot that showed it.
#[track_caller]
fn wait_waiters(sem: &SharedSemaphore, n: usize) -> Inspection {
    let t = Instant::now();
    loop {
        let i = inspect(sem);
        if i.waiters.len() == n {
            return i;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "never {n} queued: {i:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn labels_hosts_pids_and_fifo_positions_with_a_partial_grant() {
    let name = Name::new("ilabels");
    let sem = SharedSemaphore::open(&name, 4, OpenOptions::new()).unwrap();
    assert_eq!(sem.label(), default_label());
    sem.try_acquire(3).unwrap().forget();
    let mut a = acquirer(&name, 4, 1, "child-a");
    a.expect("got", Duration::from_secs(5));
    // The queue, one after another, each confirmed queued before the next
    // starts: B wants 3, C 1, D 2.
    let b = acquirer(&name, 4, 3, "child-b");
    wait_waiters(&sem, 1);
    let c = acquirer(&name, 4, 1, "child-c");
    wait_waiters(&sem, 2);
    let d = acquirer(&name, 4, 2, "child-d");
    wait_waiters(&sem, 3);
    // One permit back: B, the head, is granted 1 of its 3, not C.
    sem.release(1).unwrap();
    let i = inspect(&sem);
    assert_eq!((i.total, i.available, i.closed), (4, 0, false));
    let host = hostname();
    let me = std::process::id();
    let mut holders: Vec<_> = i
        .holders
        .iter()
        .map(|h| (h.label.clone(), h.host.clone(), h.pid, h.permits))
        .collect();
    holders.sort();
    let mut want = vec![
        (default_label(), host.clone(), me, 2),
        ("child-a".to_string(), host.clone(), a.pid() as u32, 1),
    ];
    want.sort();
    assert_eq!(holders, want);
    assert!(i
        .holders
        .iter()
        .all(|h| h.held_for.is_some() && h.lease_remaining.is_none() && h.token.is_none()));
    let waiters: Vec<_> = i
        .waiters
        .iter()
        .map(|w| {
            (
                w.label.as_str(),
                w.host.as_str(),
                w.pid,
                w.permits,
                w.granted,
            )
        })
        .collect();
    assert_eq!(
        waiters,
        [
            ("child-b", host.as_str(), b.pid() as u32, 3, 1),
            ("child-c", host.as_str(), c.pid() as u32, 1, 0),
            ("child-d", host.as_str(), d.pid() as u32, 2, 0),
        ]
    );
    // Two more: B completes and leaves the queue; C is now the head.
    sem.release(2).unwrap();
    let t = Instant::now();
    let i = loop {
        let i = inspect(&sem);
        if i.holders
            .iter()
            .any(|h| h.label == "child-b" && h.permits == 3)
        {
            break i;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{i:?}");
        std::thread::sleep(Duration::from_millis(1));
    };
    let order: Vec<_> = i.waiters.iter().map(|w| w.label.as_str()).collect();
    assert_eq!(order, ["child-c", "child-d"]);
}

#[test]
fn held_for_and_waiting_for_within_100_ms_of_the_time_measured() {
    let name = Name::new("itimes");
    let sem = SharedSemaphore::open(&name, 3, OpenOptions::new()).unwrap();
    let me = std::process::id();
    let mine = |i: &Inspection| i.holders.iter().find(|h| h.pid == me).cloned();

    // This process: a fast-path acquire, then another one while it holds the
    // first: held_for counts from the first (held rose from 0 only there).
    let before_take = now_ns();
    sem.try_acquire(1).unwrap().forget();
    let after_take = now_ns();
    std::thread::sleep(Duration::from_millis(150));
    sem.try_acquire(1).unwrap().forget();
    std::thread::sleep(Duration::from_millis(150));

    // A child takes the last permit; a second one queues behind it. Each
    // reads the shared clock right before and after its acquire.
    let mut holder = acquirer(&name, 3, 1, "holder");
    let (h_before, h_after) = times(&mut holder);
    let mut waiter = acquirer(&name, 3, 2, "waiter");
    wait_waiters(&sem, 1);
    let queued_seen = now_ns();
    std::thread::sleep(Duration::from_millis(300));

    let t0 = now_ns();
    let i = inspect(&sem);
    let t1 = now_ns();
    eprintln!("{i:#?}");

    // Each duration d must lie in [t0 - (latest possible start),
    // t1 - (earliest possible start)], give or take EARLY / LATE.
    let within = |what: &str, d: Duration, latest_start: u64, earliest_start: u64| {
        let (lo, hi) = (ns(t0 - latest_start), ns(t1 - earliest_start));
        eprintln!("{what}: {d:?} in [{lo:?}, {hi:?}]");
        assert!(d + EARLY >= lo, "{what}: {d:?} < {lo:?}");
        assert!(d < hi + LATE, "{what}: {d:?} >= {hi:?} + {LATE:?}");
    };
    let h = mine(&i).unwrap();
    assert_eq!(h.permits, 2);
    within("this process", h.held_for.unwrap(), after_take, before_take);
    assert!(h.held_for.unwrap() >= Duration::from_millis(600) - EARLY);

    let c = i.holders.iter().find(|h| h.label == "holder").unwrap();
    assert_eq!((c.pid, c.permits), (holder.pid() as u32, 1));
    within("holder child", c.held_for.unwrap(), h_after, h_before);

    let w_before = started(&mut waiter);
    let w = &i.waiters[0];
    assert_eq!((w.pid, w.permits, w.granted), (waiter.pid() as u32, 2, 0));
    within("waiter child", w.waiting_for, queued_seen, w_before);
    assert!(w.waiting_for >= Duration::from_millis(300) - EARLY);

    // Back to 0, then a new acquire: held_for starts again from it.
    sem.release(2).unwrap();
    // (The waiter, head of the queue, took the two permits: queue empty.)
    waiter.expect("got", Duration::from_secs(10));
    holder.kill9(); // its permit comes back at the next inspect
    let i = inspect(&sem);
    assert!(mine(&i).is_none(), "{i:?}");
    assert_eq!(i.available, 1, "{i:?}");
    let before_take = now_ns();
    sem.acquire_blocking(1).unwrap().forget();
    std::thread::sleep(Duration::from_millis(50));
    let t1 = now_ns();
    let held = mine(&inspect(&sem)).unwrap().held_for.unwrap();
    assert!(
        held < ns(t1 - before_take) + LATE,
        "{held:?}: the old stamp?"
    );
    assert!(
        held < Duration::from_millis(300),
        "{held:?}: the old stamp?"
    );
}

/// The waiter's clock reading before its acquire (its `times` line comes
/// only once it is granted): parsed from the `start` line's time instead.
#[track_caller]
fn started(c: &mut Child) -> u64 {
    let t = Instant::now();
    loop {
        c.drain();
        if let Some(l) = c.seen.iter().find(|l| l.starts_with("start ")) {
            return l[6..].parse().unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", c.seen);
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn kill9_holder_and_waiter_are_not_listed_and_their_permits_are_back() {
    let name = Name::new("ikill");
    let sem = SharedSemaphore::open(&name, 3, OpenOptions::new()).unwrap();
    sem.try_acquire(1).unwrap().forget();
    let mut h = acquirer(&name, 3, 2, "doomed-holder");
    h.expect("got", Duration::from_secs(5));
    let mut w = acquirer(&name, 3, 2, "doomed-waiter");
    let i = wait_waiters(&sem, 1);
    assert_eq!(i.waiters[0].pid, w.pid() as u32);
    assert!(i
        .holders
        .iter()
        .any(|x| x.pid == h.pid() as u32 && x.permits == 2));

    // The waiter first: the queue empties; nothing else changes.
    let wpid = w.pid() as u32;
    w.kill9();
    let i = inspect(&sem);
    assert!(i.waiters.is_empty(), "a dead waiter is listed: {i:?}");
    assert!(i.holders.iter().all(|x| x.pid != wpid));
    assert_eq!(i.available, 0);

    // Then the holder: its 2 permits are available again, at once (no
    // other operation in between: inspect itself reclaims).
    let hpid = h.pid() as u32;
    h.kill9();
    let i = inspect(&sem);
    assert!(
        i.holders.iter().all(|x| x.pid != hpid),
        "a dead holder is listed: {i:?}"
    );
    assert_eq!(i.available, 2, "{i:?}");
    assert_eq!(i.held(), 1);
    assert_eq!(i.holders.len(), 1);
    assert_eq!(i.holders[0].pid, std::process::id());
    // Closed: reported, holders still listed, the sum still holds.
    sem.close().unwrap();
    let i = inspect(&sem);
    assert!(i.closed);
    assert_eq!((i.available, i.held()), (2, 1));
}

#[test]
fn invalid_labels_are_refused_and_nothing_is_created() {
    let name = Name::new("ibad");
    let too_long = "x".repeat(MAX_LABEL_LEN + 1);
    for bad in ["", "two words", "tab\there", "caf\u{e9}", too_long.as_str()] {
        assert_eq!(
            SharedSemaphore::open(&name, 2, OpenOptions::new().label(bad)).unwrap_err(),
            Error::InvalidLabel,
            "{bad:?}"
        );
        assert!(!std::path::Path::new(&name.path()).exists());
    }
    // The longest valid label is kept whole.
    let longest = "y".repeat(MAX_LABEL_LEN);
    let sem = SharedSemaphore::open(&name, 2, OpenOptions::new().label(longest.clone())).unwrap();
    sem.try_acquire(1).unwrap().forget();
    assert_eq!(inspect(&sem).holders[0].label, longest);
    // An invalid label is refused on an existing name too.
    assert_eq!(
        SharedSemaphore::open(&name, 2, OpenOptions::new().label("a b")).unwrap_err(),
        Error::InvalidLabel
    );
}

#[test]
fn the_first_label_of_a_process_wins_until_it_detaches() {
    let name = Name::new("ifirst");
    let first = SharedSemaphore::open(&name, 2, OpenOptions::new().label("first")).unwrap();
    let second = SharedSemaphore::open(&name, 2, OpenOptions::new().label("second")).unwrap();
    assert_eq!(second.process_record(), first.process_record());
    assert_eq!((first.label(), second.label()), ("first", "first"));
    second.try_acquire(1).unwrap().forget();
    let i = inspect(&first);
    assert_eq!(i.holders.len(), 1);
    assert_eq!(i.holders[0].label, "first");
    second.release(1).unwrap();
    drop((first, second));
    // Detached: the next open attaches a new record, with its own label.
    let third = SharedSemaphore::open(&name, 2, OpenOptions::new().label("third")).unwrap();
    assert_eq!(third.label(), "third");
    third.try_acquire(2).unwrap().forget();
    assert_eq!(inspect(&third).holders[0].label, "third");
}

#[test]
fn a_segment_of_layout_version_2_is_refused_with_version_mismatch() {
    // What a process of the previous release would have left: its magic and
    // version 2 (the first 32 bytes keep their places in every version).
    let name = Name::new("iv2");
    let mut old = Vec::new();
    old.extend_from_slice(b"VOLTSHM\x01");
    old.extend_from_slice(&2u32.to_le_bytes());
    old.resize(4096, 0);
    std::fs::write(name.path(), &old).unwrap();
    assert_eq!(
        SharedSemaphore::open(&name, 2, OpenOptions::new()).unwrap_err(),
        Error::VersionMismatch {
            found: 2,
            expected: 4
        }
    );
    assert_eq!(std::fs::read(name.path()).unwrap(), old);
}

#[test]
fn every_snapshot_is_conserved_while_other_processes_and_threads_churn() {
    let name = Name::new("ichurn");
    let sem = SharedSemaphore::open(&name, 3, OpenOptions::new()).unwrap();
    let mut kids: Vec<Child> = (0..2)
        .map(|k| Child::spawn(&name, 3, "churn", &[("LABEL", format!("churn-{k}"))]))
        .collect();
    for k in &mut kids {
        k.expect("churning", Duration::from_secs(5));
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok(p) = sem.try_acquire(1) {
                        drop(p);
                    }
                }
            });
        }
        // `inspect` asserts the sum on each snapshot; some must show permits
        // held or queued (the churn is seen, not just an idle semaphore).
        // At least 300 snapshots, and until one saw the churn: on a loaded
        // machine all of the first 300 can run while no churner does (3
        // runs in 120 under CI-like load took 300 snapshots of an idle
        // semaphore and failed "never saw a permit in use").
        let mut busy = 0;
        let mut taken = 0;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while taken < 300 || (busy == 0 && std::time::Instant::now() < deadline) {
            taken += 1;
            let i = inspect(&sem);
            if i.available < i.total {
                busy += 1;
            }
            for h in &i.holders {
                assert!(
                    h.label.starts_with("churn-") || h.pid == std::process::id(),
                    "{h:?}"
                );
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(busy > 0, "never saw a permit in use");
    });
    // One churner killed wherever it was: the next snapshot is still exact
    // and does not list it.
    let pid = kids[0].pid() as u32;
    kids[0].kill9();
    let i = inspect(&sem);
    assert!(i.holders.iter().all(|h| h.pid != pid) && i.waiters.iter().all(|w| w.pid != pid));
}
