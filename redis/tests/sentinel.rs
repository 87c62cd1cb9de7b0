//! Redis Sentinel: a master, its replica and a Sentinel (real redis-server
//! processes); the client finds the master through the Sentinel, and after
//! the master is killed and the replica promoted it finds the new one, its
//! waiter keeps its place, and fencing tokens keep increasing.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{Error, RedisSemaphore};

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn through_sentinel_and_across_a_failover() {
    let mut set = SentinelSet::start();
    let url = set.url();
    let o = || opts().connect_timeout(Duration::from_secs(1));

    // Bad Sentinel input: typed errors, never a hang.
    let dead = format!("redis+sentinel://127.0.0.1:{}/nope", set.sentinel.port);
    let e = RedisSemaphore::connect(&dead, "s", 2, o()).unwrap_err();
    assert!(
        matches!(&e, Error::Connection(m) if m.contains("nope")),
        "unknown master: {e:?}"
    );
    let no_master = format!("redis+sentinel://127.0.0.1:{}", set.sentinel.port);
    assert!(matches!(
        RedisSemaphore::connect(&no_master, "s", 2, o()).unwrap_err(),
        Error::InvalidUrl(_)
    ));
    assert!(matches!(
        RedisSemaphore::connect(&url, "s", 2, o().cluster(true)).unwrap_err(),
        Error::InvalidOption(_)
    ));
    // A password the master does not want: refused, and never shown.
    let pw = format!(
        "redis+sentinel://:sentinel-s3cret@127.0.0.1:{}/{}",
        set.sentinel.port, set.name
    );
    let e = RedisSemaphore::connect(&pw, "s", 2, o()).unwrap_err();
    assert!(!format!("{e} {e:?}").contains("sentinel-s3cret"), "{e:?}");
    let start = Instant::now();
    let nobody = format!("redis+sentinel://127.0.0.1:{}/{}", free_port(), set.name);
    let e = RedisSemaphore::connect(&nobody, "s", 2, o()).unwrap_err();
    assert!(matches!(e, Error::Connection(_)), "{e:?}");
    assert!(start.elapsed() < LIMIT);

    // Through the Sentinel (the first address in the URL is dead: skipped).
    // With a lease longer than the failover may take here (`LIMIT`): a
    // failover slower than what remains of the lease (at most 10 s by
    // default, less the time since the last heartbeat) costs the holder its
    // permits, which is the lease's contract, not what this test checks.
    let held_across = || o().lease(2 * LIMIT);
    let a = RedisSemaphore::connect(&url, "sentinel", 2, held_across()).unwrap();
    let b = RedisSemaphore::connect(&url, "sentinel", 2, held_across()).unwrap();
    let p = a.acquire_blocking(1).unwrap();
    let t0 = p.token();
    p.release().unwrap();
    let held = a.acquire_blocking(2).unwrap();
    let t1 = held.token();
    assert!(t1 > t0);
    let rx = acquire_in_thread(&b, 1);
    eventually("b queued", LIMIT, || {
        a.census().unwrap().queued == 1 && b.stats().queued == 1
    });
    eventually("the replica caught up", LIMIT, || {
        replica_caught_up(&set.master)
    });

    // The master dies; the Sentinel promotes the replica.
    let old = set.master_port();
    assert_eq!(old, set.master.port);
    set.master.stop();
    let stopped = Instant::now();
    eventually("the Sentinel promoted the replica", LIMIT, || {
        set.master_port() == set.replica.port
    });

    // The holder releases on the new master (its command connection is
    // found dead before the release is sent, and the master is resolved
    // again); the waiter, whose agent reconnected the same way, is served
    // in its place with a larger token.
    let promoted = stopped.elapsed();
    thread::sleep(Duration::from_millis(1100));
    if let Err(e) = held.release() {
        panic!(
            "the release after the failover failed with {e:?} ({:?} after the \
             master stopped, promoted after {promoted:?})",
            stopped.elapsed()
        );
    }
    let pb = rx.recv_timeout(LIMIT).unwrap().unwrap();
    let tb = pb.token();
    assert!(tb > t1, "tokens keep increasing across the failover");
    drop(pb);
    let c = assert_conserved(&a);
    assert_eq!((c.available, c.queued, c.held), (2, 0, 0));
    let p = b.acquire_blocking(2).unwrap();
    assert!(p.token() > tb);
    drop(p);
    // The state lives on the new master.
    let mut raw = set.replica.raw();
    let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut raw).unwrap();
    assert_eq!(role[0], redis::Value::BulkString(b"master".to_vec()));
    let keys = volt_sem_redis::scripts::Keys::new("volt-sem", "sentinel");
    let exists: u64 = redis::cmd("EXISTS")
        .arg(&keys.all()[0])
        .query(&mut raw)
        .unwrap();
    assert_eq!(exists, 1);
}
