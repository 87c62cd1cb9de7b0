//! `min_replicas_acked` (Redis `WAIT`) against a real master and replica:
//! writes acknowledged by the replica go through; when the replica stops
//! acknowledging, a grant fails with NotReplicated and is handed back, and
//! nothing is lost.

mod support;

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use support::*;
use volt_sem_redis::{Error, RedisSemaphore};

const LIMIT: Duration = Duration::from_secs(30);

struct Paused<'a>(&'a Server);

impl<'a> Paused<'a> {
    /// Freezes a server (`SIGSTOP`): it stays connected but acknowledges nothing.
    fn new(s: &'a Server) -> Self {
        // SAFETY: kill(2) on a redis-server child this test started.
        unsafe { libc::kill(s.pid() as i32, libc::SIGSTOP) };
        Paused(s)
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.0.pid() as i32, libc::SIGCONT) };
    }
}

#[test]
fn min_replicas_acked_with_a_replica_that_stops_acknowledging() {
    let master = Server::start();
    let port = master.port.to_string();
    let replica = Server::start_args(&["--replicaof", "127.0.0.1", &port]);
    eventually("the replica streaming and acknowledging", LIMIT, || {
        replica_streaming(&master)
    });
    let wait = || {
        opts()
            .lease(Duration::from_secs(3))
            .min_replicas_acked(1, Duration::from_millis(300))
    };
    assert!(matches!(
        RedisSemaphore::connect(
            &master.url(),
            "w",
            2,
            opts().min_replicas_acked(1, Duration::from_secs(5))
        )
        .unwrap_err(),
        Error::InvalidOption(_)
    ));
    let a = RedisSemaphore::connect(&master.url(), "w", 2, wait()).unwrap();
    let b = RedisSemaphore::connect(&master.url(), "w", 2, wait()).unwrap();
    // A plain handle (no WAIT) to hold, release and count.
    let plain = RedisSemaphore::connect(&master.url(), "w", 2, opts()).unwrap();

    // Replica acknowledging: every call goes through, a notified grant too.
    drop(a.acquire_blocking(2).unwrap());
    let held = plain.acquire_blocking(2).unwrap();
    let (tx, rx) = mpsc::channel();
    let bb = b.clone();
    thread::spawn(move || {
        let _ = tx.send(bb.acquire_blocking(1).map(drop));
    });
    eventually("b queued", LIMIT, || plain.census().unwrap().queued == 1);
    held.release().unwrap();
    rx.recv_timeout(LIMIT).unwrap().unwrap();
    // b's release (its own session) reached Redis before plain counts.
    b.flush().unwrap();
    assert_eq!(assert_conserved(&plain).available, 2);
    // Asking for more replicas than there are: never acknowledged.
    let two = RedisSemaphore::connect(
        &master.url(),
        "w",
        2,
        wait().min_replicas_acked(2, Duration::from_millis(100)),
    )
    .unwrap();
    assert_eq!(
        two.acquire_blocking(1).unwrap_err(),
        Error::NotReplicated {
            acked: 1,
            wanted: 2
        }
    );
    eventually("its grant handed back", LIMIT, || {
        let c = plain.census().unwrap();
        c.conserved() && c.available == 2
    });

    // The replica stops acknowledging.
    {
        let _frozen = Paused::new(&replica);
        // An immediate grant: the caller does not get permits that a
        // failover could forget; they go back (the session is given up).
        let e = a.acquire_blocking(1).unwrap_err();
        assert_eq!(
            e,
            Error::NotReplicated {
                acked: 0,
                wanted: 1
            }
        );
        eventually("a's grant handed back", LIMIT, || {
            let c = plain.census().unwrap();
            c.conserved() && c.available == 2
        });
    }
    // A grant made by someone else's release, learnt from a notification:
    // b queued while the replica acknowledged; the replica freezes; the
    // release grants to b, whose agent's WAIT fails: the waiter fails the
    // same way and the permit goes back.
    eventually("the replica acknowledging", LIMIT, || replica_acks(&master));
    let held = plain.acquire_blocking(2).unwrap();
    // Returns once b's queueing call (and its WAIT) returned.
    let rx = acquire_in_thread(&b, 1);
    assert_eq!(plain.census().unwrap().queued, 1);
    {
        let _frozen = Paused::new(&replica);
        assert!(
            rx.try_recv().is_err(),
            "b's queueing acquire was acknowledged"
        );
        held.release().unwrap();
        let e = rx.recv_timeout(LIMIT).unwrap().unwrap_err();
        assert_eq!(
            e,
            Error::NotReplicated {
                acked: 0,
                wanted: 1
            }
        );
        eventually("b's grant handed back", LIMIT, || {
            let c = plain.census().unwrap();
            c.conserved() && c.available == 2 && c.queued == 0
        });
    }
    // Acknowledging again: both handles work again (new sessions).
    eventually("the replica acknowledging", LIMIT, || replica_acks(&master));
    drop(a.acquire_timeout(2, LIMIT).unwrap());
    drop(b.acquire_timeout(1, LIMIT).unwrap());
    a.flush().unwrap();
    b.flush().unwrap();
    assert_eq!(assert_conserved(&plain).available, 2);
}
