//! Ending one handle's session without closing the semaphore (issue 27):
//! `disconnect` hands what the handle held to the next waiter at once (the
//! lease is set far longer than the wait allowed, so the permit can only
//! come back through the session's end), fails the handle's own queued
//! requests with `Closed`, refuses every later request of the handle, and
//! leaves the semaphore open for every other client.

mod support;

use std::future::Future;
use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

fn o() -> ConnectOptions {
    opts().own_session(true).lease(Duration::from_secs(60))
}

#[test]
fn disconnect_hands_permits_on_and_fails_own_waiters() {
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "disc", 1, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "disc", 1, o()).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    held.forget(); // counted by the handle only: the session's end must return it
    let own = acquire_in_thread(&a, 1);
    eventually("a's request queued", Duration::from_secs(30), || {
        b.census().unwrap().queued == 1
    });
    let other = acquire_in_thread(&b, 1);
    eventually("b's request queued", Duration::from_secs(30), || {
        b.census().unwrap().queued == 2
    });
    assert!(!a.is_disconnected());
    a.disconnect();
    assert!(a.is_disconnected());
    // Well before the 60 s lease: the permit came back with the session.
    let p = other
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(
        own.recv_timeout(Duration::from_secs(10))
            .unwrap()
            .unwrap_err(),
        Error::Closed
    );
    assert_eq!(a.try_acquire(1).unwrap_err(), Error::Closed);
    assert_eq!(a.release(1).unwrap_err(), Error::Closed);
    // Requests of 0 permits too, on every path (the async one was granted).
    assert_eq!(a.try_acquire(0).unwrap_err(), Error::Closed);
    assert_eq!(a.acquire_blocking(0).unwrap_err(), Error::Closed);
    assert_eq!(
        futures::executor::block_on(a.acquire(0)).unwrap_err(),
        Error::Closed
    );
    a.disconnect(); // idempotent
    let c = b.census().unwrap();
    assert!(!c.closed);
    assert_eq!((c.held, c.queued, c.sessions), (1, 0, 1));
    drop(p);
    assert_eq!(assert_conserved(&b).available, 1);
}

/// The child of `disconnect_has_ended_the_session_when_it_returns`: two
/// handles with sessions of their own (a 60 s lease); the first holds the
/// one permit, the second queues for it. On "go" it disconnects both at
/// once (as Node's and Python's signal handlers disconnect every handle)
/// while other threads keep both cores busy, and leaves with `_exit` the
/// moment both calls returned: a process killed by the signal it re-raised
/// runs nothing more (no exit handler, no destructor).
#[test]
#[ignore = "the body of the child processes of a test below, not a test"]
fn disconnect_child() {
    let Ok(spec) = std::env::var("VOLT_DISCONNECT_CHILD") else {
        return;
    };
    let (url, name) = spec.split_once(' ').unwrap();
    let holder = RedisSemaphore::connect(url, name, 1, o()).unwrap();
    holder.acquire_blocking(1).unwrap().forget();
    let waiter = RedisSemaphore::connect(url, name, 1, o()).unwrap();
    // Polled once: queued; dropped below, as a signal handler cancels the
    // handle's waiters before it disconnects it.
    let mut queued = Box::pin(waiter.acquire(1));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(queued.as_mut().poll(&mut cx).is_pending());
    eventually("queued", Duration::from_secs(30), || {
        holder.census().unwrap().queued == 1
    });
    println!("@@ ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for _ in 0..4 {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
    }
    let h = holder.clone();
    let t = std::thread::spawn(move || h.disconnect());
    drop(queued);
    waiter.disconnect();
    t.join().unwrap();
    // SAFETY: _exit(2) ends the process at once; nothing of it is used after.
    unsafe { libc::_exit(0) };
}

/// A disconnect that returned has ended the session in Redis: a process
/// that dies right after (a signal re-raised once the handles were
/// disconnected) leaves nothing held until a lease expiry. The agent thread
/// also ends given-up sessions, and it could take the disconnected session
/// off the list the door was about to end it from (it wakes up when the
/// first handle's end grants the permit to the second's queued request):
/// disconnect then returned with the end script not yet sent, and the
/// process died before the agent sent it (a Node test saw the other
/// client's grant only at the lease's expiry).
#[test]
fn disconnect_has_ended_the_session_when_it_returns() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let s = Server::start();
    for i in 0..40 {
        let name = format!("disc-exit-{i}");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "disconnect_child", "--nocapture"])
            .env("VOLT_DISCONNECT_CHILD", format!("{} {name}", s.url()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("@@ ready") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the child ended early"
            );
        }
        let other = RedisSemaphore::connect(&s.url(), &name, 1, o()).unwrap();
        let mine = acquire_in_thread(&other, 1);
        eventually("queued behind the child's", Duration::from_secs(30), || {
            other.census().unwrap().queued == 2
        });
        writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
        assert!(child.wait().unwrap().success());
        // Both sessions ended before the child was gone: nothing of them is
        // left (a session the child's agent had yet to end would hold the
        // permit until its 60 s lease expired).
        let c = other.census().unwrap();
        assert_eq!(
            (c.sessions, c.held + c.partial, c.queued),
            (1, 1, 0),
            "iteration {i}: the child's sessions are still in Redis after it exited: {c:?}"
        );
        drop(mine.recv_timeout(Duration::from_secs(10)).unwrap().unwrap());
        other.disconnect();
    }
}

/// `INFO section`'s text.
fn info(s: &Server, section: &str) -> String {
    redis::cmd("INFO").arg(section).query(&mut s.raw()).unwrap()
}

/// The number of clients Redis holds blocked now (a `CLIENT PAUSE`
/// postpones a script call as a blocked client).
fn blocked_clients(s: &Server) -> u64 {
    info(s, "clients")
        .lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// How many scripts Redis has run (EVAL and EVALSHA calls).
fn script_calls(s: &Server) -> u64 {
    info(s, "commandstats")
        .lines()
        .filter(|l| l.starts_with("cmdstat_eval:") || l.starts_with("cmdstat_evalsha:"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// A disconnect made while the door registers a new session for a queued
/// acquire (the last one was lost) fails that acquire with `Closed`, as it
/// fails every request queued before it, and leaves no session behind. The
/// door checked `disconnected` before the connect script and not after, so
/// it took the new session as the handle's: the request was sent and
/// granted (or, with no permit free, queued for ever: the agent had exited
/// with the disconnect), and the session stayed in Redis, renewed by nobody,
/// until its lease expired.
#[test]
fn disconnect_while_a_new_session_is_registered_fails_the_request() {
    let s = Server::start();
    let o = opts()
        .own_session(true)
        .lease(Duration::from_millis(1500))
        .command_timeout(Duration::from_secs(30));
    let a = RedisSemaphore::connect(&s.url(), "disc-reg", 1, o).unwrap();
    let mut admin = s.raw();
    let pause = |admin: &mut redis::Connection| {
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(600_000)
            .arg("WRITE")
            .query(admin)
            .unwrap();
    };
    // Scripts wait in Redis: the heartbeats stop, the first session is lost
    // at its lease's end (read from the handle's clock).
    pause(&mut admin);
    eventually("first session lost", Duration::from_secs(30), || {
        a.lease_watch(1).is_lost()
    });
    // Scripts run again: the agent ends the lost session (then it has
    // nothing to do), and nothing of the handle waits in Redis any more.
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut admin)
        .unwrap();
    // The sessions' sorted set (keys: meta, queue, entries, sessions, ...).
    let sessions = volt_sem_redis::scripts::Keys::new("volt-sem", "disc-reg").all()[3].clone();
    eventually("first session ended", Duration::from_secs(30), || {
        let n: u64 = redis::cmd("ZCARD")
            .arg(&sessions)
            .query(&mut admin)
            .unwrap();
        n == 0
    });
    // ZCARD may read 0 before the agent's end of the lost session ran (the
    // stale heartbeat, run at the unpause, reaps it itself); the agent ends
    // it on a connection of its own, at most lease/3 (500 ms) apart per
    // try. A script of its arriving after the next pause would count as a
    // blocked client: wait until no script has run for 1.5 s (a CI-like
    // run failed 4 times in 6 at "no blocked client" without this).
    let mut last = (script_calls(&s), std::time::Instant::now());
    eventually("the handle idle in Redis", Duration::from_secs(30), || {
        let n = script_calls(&s);
        if n != last.0 {
            last = (n, std::time::Instant::now());
        }
        last.1.elapsed() > Duration::from_millis(1500)
    });
    pause(&mut admin);
    eventually("no blocked client", Duration::from_secs(30), || {
        blocked_clients(&s) == 0
    });
    // The acquire registers a new session: its connect script waits in Redis.
    let (tx, rx) = std::sync::mpsc::channel();
    let a2 = a.clone();
    std::thread::spawn(move || {
        let _ = tx.send(a2.acquire_blocking(1).map(|p| p.forget()));
    });
    eventually("the connect script waits", Duration::from_secs(30), || {
        blocked_clients(&s) == 1
    });
    let a3 = a.clone();
    let disc = std::thread::spawn(move || a3.disconnect());
    eventually("disconnected", Duration::from_secs(30), || {
        a.is_disconnected()
    });
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut admin)
        .unwrap();
    disc.join().unwrap();
    let r = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(r, Err(Error::Closed));
    // The session the door registered was ended, not left to its lease.
    let i = volt_sem_redis::inspect(&s.url(), "disc-reg", opts()).unwrap();
    assert_eq!((i.available, i.holders.len()), (1, 0), "{i:?}");
}

/// A queued acquire racing `disconnect` must end: with `Closed` (or a
/// grant), never waiting for ever. The door stamps a request with its
/// session after `ensure_session` returned it; a disconnect (or a loss)
/// between the two used to leave the request stamped with a session it
/// had already ended, sent under it, answered Pending and never completed.
/// The window holds no I/O, so this races it many times rather than
/// reaching it on purpose.
#[test]
fn an_acquire_racing_disconnect_always_ends() {
    let s = Server::start();
    let holder = RedisSemaphore::connect(&s.url(), "disc-race", 1, o()).unwrap();
    let _held = holder.acquire_blocking(1).unwrap();
    let rounds = std::env::var("VOLT_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let mut hung = 0;
    for _ in 0..rounds {
        let a = RedisSemaphore::connect(&s.url(), "disc-race", 1, o()).unwrap();
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (aa, go) = (a.clone(), start.clone());
        let waiter = std::thread::spawn(move || {
            go.wait();
            aa.acquire_timeout(1, Duration::from_secs(10))
        });
        start.wait();
        a.disconnect();
        match waiter.join().unwrap() {
            Err(Error::Closed) => {}
            Err(Error::TimedOut) => hung += 1,
            other => panic!("acquire after disconnect: {other:?}"),
        }
    }
    assert_eq!(hung, 0, "acquires left waiting by a disconnect");
    let c = assert_conserved(&holder);
    assert_eq!((c.queued, c.held, c.sessions), (0, 1, 1), "{c:?}");
}

/// A grant that reached a request before its handle's `disconnect` and is
/// collected only after it: the session's end gave those permits back (to
/// the next waiter, or to the counter), so the request ends as the
/// disconnect's other requests do, `Closed`, never granted. Found by the C
/// API fuzzer's redis mode (`volt_sem_cancel` answered `VOLT_OK` there).
#[test]
fn a_grant_collected_after_the_disconnect_is_not_granted() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "disc-uncollected", 1, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "disc-uncollected", 1, o()).unwrap();
    let held = b.acquire_blocking(1).unwrap();
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = Box::pin(a.acquire(1));
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    eventually("a's request queued", Duration::from_secs(30), || {
        b.census().unwrap().queued == 1
    });
    drop(held);
    // Granted, and the grant reached the request (its waker ran).
    eventually("a's request granted", Duration::from_secs(30), || {
        flag.0.load(Ordering::SeqCst)
    });
    a.disconnect();
    let c = assert_conserved(&b);
    assert_eq!(
        (c.available, c.held),
        (1, 0),
        "the disconnect gave the grant back"
    );
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(Err(e)) => assert_eq!(e, Error::Closed),
        Poll::Ready(Ok(_)) => panic!("a grant the disconnect gave back was reported granted"),
        Poll::Pending => panic!("still pending after the disconnect"),
    }
    let p = b.try_acquire(1).unwrap();
    drop(p);
    assert_eq!(assert_conserved(&b).available, 1);
}

/// A lease watch's waker that panics when woken (a user's executor bug).
struct PanickingWaker;
impl std::task::Wake for PanickingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        panic!("a lease watch's waker panicked (on purpose)");
    }
}

/// A first `disconnect` that a panicking waker it wakes (a lease watch of
/// the session it ends) unwinds: a later `disconnect` of the handle, on
/// another thread, still returns (it waits for the first one only while
/// that one runs), and the session is ended (its permit back).
#[test]
fn a_disconnect_after_one_that_panicked_returns() {
    use std::sync::Arc;
    use std::task::{Context, Waker};

    let s = Server::start();
    let a = Arc::new(RedisSemaphore::connect(&s.url(), "disc-panicked", 1, o()).unwrap());
    let b = RedisSemaphore::connect(&s.url(), "disc-panicked", 1, o()).unwrap();
    let p = a.try_acquire(1).unwrap();
    let mut watch = Box::pin(a.lease_watch(p.session()));
    p.forget();
    let waker = Waker::from(Arc::new(PanickingWaker));
    assert!(watch
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    let first = {
        let a = Arc::clone(&a);
        std::thread::spawn(move || a.disconnect())
    };
    assert!(
        first.join().is_err(),
        "the waker's panic unwound the first disconnect"
    );
    assert!(a.is_disconnected());
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let a = Arc::clone(&a);
        std::thread::spawn(move || {
            a.disconnect();
            let _ = tx.send(());
        });
    }
    assert!(
        rx.recv_timeout(Duration::from_secs(20)).is_ok(),
        "the second disconnect returned"
    );
    eventually("the session's permit back", Duration::from_secs(10), || {
        b.census().is_ok_and(|c| c.available == 1 && c.held == 0)
    });
    // Leaked: on failure the second disconnect's thread still uses it.
    std::mem::forget(a);
}
