//! Real processes on one semaphore: FIFO across processes, kill -9 of a
//! holder and of a queued waiter, SIGSTOP past the lease, and a conservation
//! stress with a process killed mid-run.

mod support;

use std::time::Duration;

use support::*;

/// A short lease keeps the tests fast; long enough that a loaded 2-core
/// machine does not starve a live agent past it.
const LEASE_MS: u64 = 1500;

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

fn queued(sem: &volt_sem_redis::RedisSemaphore, n: u64) {
    eventually(&format!("{n} queued"), Duration::from_secs(10), || {
        sem.census().unwrap().queued == n
    });
}

#[test]
fn fifo_across_processes() {
    let s = Server::start();
    let url = s.url();
    let me = connect(&s, "pfifo", 3);
    let held = me.acquire_blocking(3).unwrap();
    let mut a = Worker::spawn(&url, "pfifo", 3, 10_000);
    let mut b = Worker::spawn(&url, "pfifo", 3, 10_000);
    a.send("acquire 3");
    queued(&me, 1);
    b.send("acquire 1");
    queued(&me, 2);
    drop(held);
    let line = a.line();
    assert!(line.starts_with("granted 3 "), "{line}");
    // b's acquire(1) did not overtake: still queued while a holds all 3.
    let c = assert_conserved(&me);
    assert_eq!((c.queued, c.held), (1, 3));
    a.send("release 3");
    assert_eq!(a.line(), "released");
    let line = b.line();
    assert!(line.starts_with("granted 1 "), "{line}");
    b.send("release 1");
    assert_eq!(b.line(), "released");
    assert_eq!(assert_conserved(&me).available, 3);
}

#[test]
fn kill9_of_a_holder_and_of_a_queued_waiter() {
    let s = Server::start();
    let url = s.url();
    let me = connect(&s, "kill", 2);
    let mut h = Worker::spawn(&url, "kill", 2, LEASE_MS);
    h.send("acquire 2");
    assert!(h.line().starts_with("granted 2 "));
    let mut w1 = Worker::spawn(&url, "kill", 2, LEASE_MS);
    w1.send("acquire 2");
    queued(&me, 1);
    let mut w2 = Worker::spawn(&url, "kill", 2, LEASE_MS);
    w2.send("acquire 1");
    queued(&me, 2);
    w1.kill9(); // a queued waiter (with no partial grant)
    h.kill9(); // a holder
               // Both sessions expire; w2's heartbeat reaps them and is granted
               // (bound: the lease, 1.5 s, and a reap; asserted loosely).
    let line = w2.line();
    assert!(line.starts_with("granted 1 "), "{line}");
    let c = assert_conserved(&me);
    assert_eq!((c.held, c.queued, c.available), (1, 0, 1));
    w2.send("release 1");
    assert_eq!(w2.line(), "released");
    assert_eq!(assert_conserved(&me).available, 2);
}

#[test]
fn sigstop_holder_past_its_lease() {
    let s = Server::start();
    let url = s.url();
    let me = connect(&s, "stop", 2);
    let mut h = Worker::spawn(&url, "stop", 2, LEASE_MS);
    h.send("acquire 2");
    let l = h.line();
    let t1: u64 = l.rsplit(' ').next().unwrap().parse().unwrap();
    let mut w = Worker::spawn(&url, "stop", 2, LEASE_MS);
    w.send("acquire 2");
    queued(&me, 1);
    h.signal(libc::SIGSTOP);
    let l = w.line(); // after h's lease expired
    assert!(l.starts_with("granted 2 "), "{l}");
    let t2: u64 = l.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        t2 > t1,
        "the new holder's token {t2} is larger than the paused one's {t1}"
    );
    h.signal(libc::SIGCONT);
    // The paused holder learns it lost its permits; nothing is released twice.
    h.send("release 2");
    assert_eq!(h.line(), "error LeaseExpired");
    let c = assert_conserved(&me);
    assert_eq!((c.held, c.available), (2, 0));
    // And it can acquire again with a new session, behind w.
    h.send("acquire 1");
    queued(&me, 1);
    w.send("release 2");
    assert_eq!(w.line(), "released");
    assert!(h.line().starts_with("granted 1 "));
}

#[test]
fn stress_conservation_with_a_kill() {
    let s = Server::start();
    let url = s.url();
    let me = connect(&s, "stress", 4);
    let mut ws: Vec<Worker> = (0..4)
        .map(|_| Worker::spawn(&url, "stress", 4, LEASE_MS))
        .collect();
    // Two victims killed mid-run: one holding, one in the stress loop (it
    // counts its holdings under another key, which its death leaves behind).
    let mut holder = Worker::spawn(&url, "stress", 4, LEASE_MS);
    holder.send("acquire 1");
    assert!(holder.line().starts_with("granted 1 "));
    let mut victim = ws.remove(0);
    victim.send("stress 1000 4 2 victim");
    for w in &mut ws {
        w.send("stress 60 4 2");
    }
    std::thread::sleep(Duration::from_millis(300));
    victim.kill9();
    holder.kill9();
    let (mut grants, mut timeouts) = (0, 0);
    for w in &mut ws {
        let l = w.line();
        let f: Vec<u64> = l.split(' ').skip(1).map(|x| x.parse().unwrap()).collect();
        assert_eq!(l.split(' ').next(), Some("stressed"), "{l}");
        assert_eq!(f[1], 0, "the limit was exceeded {} times", f[1]);
        grants += f[0];
        timeouts += f[2];
    }
    assert!(grants > 0);
    eprintln!("stress: {grants} grants, {timeouts} timeouts, limit never exceeded");
    // After the victim's lease, everything is back.
    eventually("all permits back", Duration::from_secs(10), || {
        let c = me.census().unwrap();
        c.conserved() && c.available == 4 && c.queued == 0
    });
}

#[test]
fn exit_without_dropping_ends_the_session() {
    let s = Server::start();
    let me = connect(&s, "atexit", 1);
    // A long lease: only the exit handler can bring the permit back soon.
    let mut w = Worker::spawn(&s.url(), "atexit", 1, 60_000);
    w.send("hold_and_exit");
    assert_eq!(w.line(), "holding");
    let _ = w.child.wait();
    eventually(
        "the permit back long before the 60 s lease",
        Duration::from_secs(10),
        || {
            let c = me.census().unwrap();
            c.conserved() && c.available == 1 && c.sessions == 1
        },
    );
}

/// A dead client's permits reach a waiter soon after the dead client's
/// lease ends, whatever the waiter's own lease: the waiter's agent reaps
/// when the earliest lease deadline passes, not only at its own heartbeat
/// (a third of its own lease). Here the holder's lease is 1 s and the
/// waiter's 30 s: its heartbeat alone would reap some 10 s after connecting.
#[test]
fn a_long_lease_waiter_gets_a_short_lease_holders_permits_soon() {
    let s = Server::start();
    let url = s.url();
    let mut h = Worker::spawn(&url, "mixed", 1, 1000);
    h.send("acquire 1");
    let l = h.line();
    assert!(l.starts_with("granted 1 "), "{l}");
    // The only live client after the kill: no other client's script reaps.
    let w = volt_sem_redis::RedisSemaphore::connect(
        &url,
        "mixed",
        1,
        opts().lease(Duration::from_secs(30)),
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let ww = w.clone();
    std::thread::spawn(move || {
        let _ = tx.send(ww.acquire_blocking(1).map(|p| p.forget()));
    });
    queued(&w, 1);
    h.kill9();
    // A bound, not a measurement: the holder's lease (1 s) plus a generous
    // margin for a loaded machine, well below the waiter's heartbeat
    // interval (10 s), when the waiter alone would reap.
    match rx.recv_timeout(Duration::from_secs(6)) {
        Ok(r) => r.unwrap(),
        Err(_) => panic!("not granted within 6 s of the holder's death (lease 1 s)"),
    }
    let c = assert_conserved(&w);
    assert_eq!((c.held, c.queued, c.sessions), (1, 0, 1));
}
