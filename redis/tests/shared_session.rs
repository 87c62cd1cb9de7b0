//! One session per process per semaphore: a second `connect` to the same
//! URL, options and name shares the first one's session, connections and
//! agent thread (a process-wide registry of weak references); a different
//! prefix or option does not. In its own test binary: it counts the agent
//! threads of this process, so its tests also run one at a time (the test
//! harness runs tests on parallel threads of one process, and another test's
//! agents would count).

mod support;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

/// Held by each test of this binary: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The agent threads of this process (each is named "volt-sem-redis").
fn agents() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let comm = t.as_ref().unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.trim() == "volt-sem-redis")
        })
        .count()
}

/// Established TCP connections of this process to `port` (from /proc/net/tcp
/// and this process's socket inodes).
fn connections_to(port: u16) -> usize {
    let mut inodes = std::collections::HashSet::new();
    for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        if let Ok(l) = std::fs::read_link(fd.path()) {
            let l = l.to_string_lossy().into_owned();
            if let Some(i) = l.strip_prefix("socket:[").and_then(|x| x.strip_suffix(']')) {
                inodes.insert(i.to_string());
            }
        }
    }
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    tcp.lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let remote_port = f[2].rsplit(':').next().unwrap();
            u16::from_str_radix(remote_port, 16).unwrap() == port
                && f[3] == "01"
                && inodes.contains(f[9])
        })
        .count()
}

#[test]
fn a_second_connect_shares_the_session_connections_and_thread() {
    let _serial = serial();
    let s = Server::start();
    let url = s.url();
    // The agents of the other test's handles exit soon after their drop.
    eventually("no agent yet", Duration::from_secs(5), || {
        agents() == 0 && connections_to(s.port) == 0
    });
    let a = RedisSemaphore::connect(&url, "shared", 3, ConnectOptions::new()).unwrap();
    let b = RedisSemaphore::connect(&url, "shared", 3, ConnectOptions::new()).unwrap();
    let c = a.census().unwrap();
    assert_eq!(c.sessions, 1, "one session for both handles");
    eventually("one agent, two connections", Duration::from_secs(5), || {
        agents() == 1 && connections_to(s.port) == 2
    });
    // Both handles work, on the one session; each still owns only the
    // waiters queued through it.
    let p = a.acquire_blocking(2).unwrap();
    let q = b.try_acquire(1).unwrap();
    assert_eq!((a.held_permits(), b.held_permits()), (3, 3));
    drop((p, q));
    // Another prefix or other options: another session, thread and connections.
    let other =
        RedisSemaphore::connect(&url, "shared", 3, ConnectOptions::new().prefix("t2")).unwrap();
    let longer = RedisSemaphore::connect(
        &url,
        "shared",
        3,
        ConnectOptions::new().lease(Duration::from_secs(20)),
    )
    .unwrap();
    assert_eq!(a.census().unwrap().sessions, 2, "the longer lease's own");
    eventually(
        "three agents, six connections",
        Duration::from_secs(5),
        || agents() == 3 && connections_to(s.port) == 6,
    );
    drop((other, longer));
    // Dropping one of the sharing handles keeps the session for the other.
    drop(a);
    let c = assert_conserved(&b);
    assert_eq!((c.sessions, c.available), (1, 3));
    drop(b.acquire_blocking(3).unwrap());
    // The last one gone: the session ends, the thread exits, the
    // connections close; a new connect opens a new session.
    drop(b);
    eventually("all gone", Duration::from_secs(5), || {
        agents() == 0 && connections_to(s.port) == 0
    });
    let fresh = RedisSemaphore::connect(&url, "shared", 3, ConnectOptions::new()).unwrap();
    let c = assert_conserved(&fresh);
    assert_eq!((c.sessions, c.available), (1, 3));
}

#[test]
fn an_own_session_is_never_shared_and_takes_its_permits_back_when_dropped() {
    let _serial = serial();
    let s = Server::start();
    let url = s.url();
    let shared = RedisSemaphore::connect(&url, "own-session", 3, ConnectOptions::new()).unwrap();
    let own = ConnectOptions::new().own_session(true);
    let a = RedisSemaphore::connect(&url, "own-session", 3, own.clone()).unwrap();
    let b = RedisSemaphore::connect(&url, "own-session", 3, own).unwrap();
    assert_eq!(shared.census().unwrap().sessions, 3, "one session each");
    a.try_acquire(2).unwrap().forget();
    b.try_acquire(1).unwrap().forget();
    assert_eq!((a.held_permits(), b.held_permits()), (2, 1));
    // Dropping `a` gives back what `a` held, and only that, at once.
    drop(a);
    let c = assert_conserved(&shared);
    assert_eq!((c.sessions, c.available, c.held), (2, 2, 1), "{c:?}");
    b.release(1).unwrap();
    // Applied in Redis (a release returns at once) before another session
    // counts.
    b.flush().unwrap();
    assert_eq!(assert_conserved(&shared).available, 3);
}

/// A `connect` made after a handle of the same URL, name and options was
/// disconnected (and is still alive: a clone kept, a `Permit` not yet
/// dropped) gets a working handle with a session of its own. The registry
/// passed over handles whose state Redis lost, not over disconnected ones:
/// the new handle shared the ended session, and every request it made
/// failed with `Closed`.
#[test]
fn connect_after_a_disconnect_gets_a_live_handle() {
    let _g = serial();
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "shared-disc", 2, opts()).unwrap();
    a.disconnect();
    let b = RedisSemaphore::connect(&s.url(), "shared-disc", 2, opts()).unwrap();
    assert!(!b.is_disconnected());
    let p = b.try_acquire(1).expect("a new handle's acquire");
    drop(p);
    assert_eq!(a.try_acquire(1).unwrap_err(), volt_sem_redis::Error::Closed);
}

/// Nor a handle whose semaphore Redis lost without the handle knowing yet
/// (emptied between two of its calls): the registry passed over a handle
/// only once it had seen the loss, and a `connect` right after the loss
/// returned a handle whose every request failed with `StateLost`.
///
/// Redis loses the state by a `FLUSHALL`, not a restart: a restart also
/// drops the handle's connections, and then which comes first was a race.
/// Mostly the agent's `BLPOP` broke, it reconnected, and its heartbeat saw
/// the loss before the second `connect` (which then passed over the handle
/// without the check this test is for); under load the `connect` came
/// first and its census met the dropped command connection
/// (`Connection("unexpected end of file")`). A flush leaves every
/// connection up and the agent blocked until its next heartbeat (a long
/// lease: not before the second connect), so the connect itself must find
/// the loss, every run.
#[test]
fn connect_after_redis_lost_the_state_gets_a_live_handle() {
    let _g = serial();
    let s = Server::start();
    // A long lease: no heartbeat finds the loss before the second connect.
    let o = || opts().lease(Duration::from_secs(60));
    let a = RedisSemaphore::connect(&s.url(), "shared-lost", 2, o()).unwrap();
    drop(a.try_acquire(1).unwrap());
    let _: () = redis::cmd("FLUSHALL").query(&mut s.raw()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "shared-lost", 2, o()).unwrap();
    let p = b.try_acquire(1).expect("a new handle's acquire");
    drop(p);
    assert_eq!(
        a.try_acquire(1).unwrap_err(),
        volt_sem_redis::Error::StateLost
    );
}

/// A lease watch's waker may hold the last handle (the future of a task,
/// say): when the session is lost, waking it drops the handle on the
/// thread that found the loss (here the agent, at the heartbeat that finds
/// Redis restarted empty), and that drop ends the session. Woken under the
/// handle's state lock, that drop deadlocked the agent: its thread never
/// exited.
#[test]
fn a_waker_holding_the_last_handle_may_be_woken_by_the_loss_of_its_session() {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};

    struct Holder(#[allow(dead_code)] RedisSemaphore);
    impl Wake for Holder {
        fn wake(self: Arc<Self>) {}
    }

    let _serial = serial();
    let mut s = Server::start();
    eventually("no agent of another test", Duration::from_secs(10), || {
        agents() == 0
    });
    let sem = RedisSemaphore::connect(&s.url(), "waker-holds", 1, short_lease()).unwrap();
    // Named by the thread itself once it runs.
    eventually("its agent", Duration::from_secs(10), || agents() == 1);
    let p = sem.try_acquire(1).unwrap();
    let holder = Arc::new(Holder(sem.clone()));
    let waker = Waker::from(Arc::clone(&holder));
    let mut watch = Box::pin(sem.lease_watch(p.session()));
    assert!(watch
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    // The registered waker (its clone, kept by the handle) now holds the
    // only handle left once these go.
    p.forget();
    drop((watch, waker, sem));
    let woken = Arc::downgrade(&holder);
    drop(holder);
    s.restart_empty();
    eventually("the agent exits", Duration::from_secs(10), || agents() == 0);
    // The waker was woken and dropped with its handle.
    assert!(woken.upgrade().is_none());
}
