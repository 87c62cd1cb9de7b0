//! What a disconnected handle still holds in this process: nothing. Once
//! `disconnect` has returned, the handle's door and agent threads have
//! exited and both its Redis connections are closed, while the handle
//! itself (and its clones) stay alive: a program that connects and
//! disconnects per request must not pile up threads and connections until
//! it drops the handles (or its garbage collector gets to the objects of a
//! binding). Before, each disconnected handle kept its door thread and its
//! command connection until dropped.
//!
//! One test per binary on purpose: the threads of this process are counted
//! (`/proc/self/task`), and another test running beside it would change the
//! count. Bounded polls only (the server notices a closed socket when it
//! reads it), no timing asserts.

mod support;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

/// This process's Redis session threads now (each handle's door and agent,
/// named `volt-sem-redis...`); other threads come and go.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("volt-sem-redis"))
        .count()
}

/// The connections the server has open for clients named `label`.
fn clients_named(s: &Server, label: &str) -> usize {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut s.raw())
        .unwrap();
    let tag = format!(" name={label} ");
    list.lines().filter(|l| l.contains(&tag)).count()
}

fn o(label: &str) -> ConnectOptions {
    opts()
        .own_session(true)
        .label(label)
        .lease(Duration::from_secs(60))
}

/// Waits (bounded) until this process has `base` threads and the server no
/// connection named `label`; panics naming what is left.
fn all_gone(s: &Server, label: &str, base: usize, what: &str) {
    let mut last = (0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        last = (threads(), clients_named(s, label));
        if last == (base, 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "{what}: {} threads (baseline {base}) and {} connections named {label} \
         still open 20 s after disconnect() returned",
        last.0, last.1
    );
}

/// A waker that disconnects a handle when woken: the grant it is woken for
/// is delivered on one of the handle's own threads (the agent's, or the
/// door's when the handle's own release granted it), which must not wait
/// for itself to end.
struct DisconnectOnWake(Mutex<Option<RedisSemaphore>>, std::sync::mpsc::Sender<()>);

impl Wake for DisconnectOnWake {
    fn wake(self: Arc<Self>) {
        if let Some(sem) = self.0.lock().unwrap().take() {
            sem.disconnect();
            assert!(sem.is_disconnected());
            let _ = self.1.send(());
        }
    }
}

#[test]
fn a_disconnected_handle_keeps_no_thread_and_no_connection() {
    let s = Server::start();
    // Nothing of the handles yet: the server and the test's own thread.
    let base = threads();

    // N handles kept alive (with a clone each) after their disconnect.
    const N: usize = 20;
    let label = "disc-res";
    let sems: Vec<RedisSemaphore> = (0..N)
        .map(|_| RedisSemaphore::connect(&s.url(), "disc-res", N, o(label)).unwrap())
        .collect();
    let clones: Vec<RedisSemaphore> = sems.to_vec();
    let held: Vec<_> = sems
        .iter()
        .map(|s| s.acquire_blocking(1).unwrap())
        .collect();
    // Two threads and two connections per handle while connected (a
    // session thread names itself once it runs: `connect` may return
    // before both have).
    eventually(
        "both threads of each handle named",
        Duration::from_secs(20),
        || threads() == base + 2 * N,
    );
    eventually(
        "both connections of each handle seen",
        Duration::from_secs(20),
        || clients_named(&s, label) == 2 * N,
    );
    for s in &sems {
        s.disconnect();
    }
    all_gone(
        &s,
        label,
        base,
        "after disconnecting the handles, kept alive",
    );
    // The promises of a disconnect still hold: what they held went back,
    // every later request is refused, it is idempotent; the census still
    // answers (on a connection for that call, closed after it).
    let census = sems[0].census().unwrap();
    assert_eq!((census.held, census.sessions), (0, 0), "{census:?}");
    for s in &clones {
        assert_eq!(s.try_acquire(1).unwrap_err(), Error::Closed);
        assert_eq!(s.acquire_blocking(1).unwrap_err(), Error::Closed);
        assert_eq!(
            futures::executor::block_on(s.acquire(1)).unwrap_err(),
            Error::Closed
        );
        assert_eq!(s.close().unwrap_err(), Error::Closed);
        s.flush().unwrap();
        s.disconnect();
    }
    drop(held); // releases refused: the session's end gave them back
    all_gone(&s, label, base, "after calls on the disconnected handles");

    // Disconnected from a wake on the handle's own threads: no deadlock,
    // and the thread that called it exits right after.
    for own_release in [false, true] {
        let a = RedisSemaphore::connect(&s.url(), "disc-res-wake", 1, o(label)).unwrap();
        let b = RedisSemaphore::connect(&s.url(), "disc-res-wake", 1, o(label)).unwrap();
        let holder = if own_release { &a } else { &b };
        let permit = holder.acquire_blocking(1).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waker = Waker::from(Arc::new(DisconnectOnWake(Mutex::new(Some(a.clone())), tx)));
        let mut fut = Box::pin(a.acquire(1));
        assert!(fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        a.flush().unwrap();
        eventually("queued", Duration::from_secs(20), || {
            b.census().unwrap().queued == 1
        });
        drop(permit);
        rx.recv_timeout(Duration::from_secs(20))
            .expect("disconnect() from inside the wake never returned");
        match fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            // Granted just before the disconnect (the permit went back with
            // the session's end) or failed by it.
            Poll::Ready(Ok(p)) => drop(p),
            Poll::Ready(Err(e)) => assert_eq!(e, Error::Closed),
            Poll::Pending => panic!("pending after its handle was disconnected"),
        }
        drop(fut);
        b.disconnect();
        all_gone(&s, label, base, "after a disconnect from inside a wake");
        let c = a.census().unwrap();
        assert_eq!((c.held, c.queued, c.sessions), (0, 0, 0), "{c:?}");
    }
}
