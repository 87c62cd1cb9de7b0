//! What a Redis under memory pressure does to a semaphore's keys behind the
//! clients' backs, on a real `redis-server`:
//!
//! * An `allkeys-*` eviction policy evicts any key, the semaphore's
//!   included, idle ones first (LRU): a holder's keys are idle while it
//!   holds. When the `:meta` hash went and other keys stayed, a `connect`
//!   created the semaphore anew with every permit free, and the old
//!   sessions, reaped into the new incarnation at their leases' end, gave
//!   it permits it had never granted: more holders than the total, for
//!   good. `connect` now carries the holdings of live sessions over and
//!   drops the rest of the lost incarnation (`connect.lua`). Other keys
//!   lost while `:meta` stayed went unreported (permits lost for good,
//!   waiters never woken): the heartbeats now find that and end the
//!   incarnation for every client (`StateLost`).
//! * `noeviction`, and the `volatile-*` policies (the semaphore's keys have
//!   no TTL, so these never evict them): a full Redis refuses the scripts
//!   with `OOM`, before their first write; nothing is lost, and every
//!   permit is back once memory is freed.

mod support;

use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

fn o() -> ConnectOptions {
    opts().own_session(true).lease(Duration::from_millis(1500))
}

const KEYS: [&str; 7] = [
    "meta", "queue", "entries", "sessions", "held", "grants", "own",
];

fn key(name: &str, k: &str) -> String {
    format!("{{volt-sem:{name}}}:{k}")
}

fn exists(raw: &mut redis::Connection, k: &str) -> bool {
    redis::cmd("EXISTS").arg(k).query::<u64>(raw).unwrap() == 1
}

/// Fills Redis with 10 kB strings `filler:<from..from + n>` (errors, such
/// as OOM, ignored); returns how many were refused.
fn fill(raw: &mut redis::Connection, from: usize, n: usize) -> usize {
    let v = "x".repeat(10_000);
    (from..from + n)
        .filter(|i| {
            redis::cmd("SET")
                .arg(format!("filler:{i}"))
                .arg(&v)
                .query::<()>(raw)
                .is_err()
        })
        .count()
}

fn info_field(raw: &mut redis::Connection, section: &str, field: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(raw).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The `:meta` hash gone while the other keys stay (what an `allkeys-*`
/// policy does when it evicts that one key; here it is deleted, so that
/// which key goes is not left to chance). Before the fix the new
/// connect's `try_acquire(1)` succeeded with both permits held by the old
/// session, and once that session was reaped a client held 2 permits and
/// could take 2 more of a total of 2.
#[test]
fn the_meta_hash_lost_alone_never_lets_more_than_the_total_be_held() {
    let s = Server::start();
    let mut raw = s.raw();
    let a = RedisSemaphore::connect(&s.url(), "m", 2, o()).unwrap();
    let held = a.acquire_blocking(2).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "m", 2, o()).unwrap();
    let waiter = std::thread::spawn(move || {
        b.acquire_timeout(1, Duration::from_secs(20))
            .map(|p| p.token())
    });
    eventually("b queued", Duration::from_secs(10), || {
        exists(&mut raw, &key("m", "queue"))
    });
    let _: () = redis::cmd("DEL")
        .arg(key("m", "meta"))
        .query(&mut raw)
        .unwrap();

    // A new client creates the semaphore anew (nothing tells it the old
    // one existed but the leftovers): the live holding is carried over.
    let c = RedisSemaphore::connect(&s.url(), "m", 2, o()).unwrap();
    let census = assert_conserved(&c);
    assert_eq!((census.available, census.held), (0, 2), "{census:?}");
    assert_eq!(
        c.try_acquire(1).map(|p| p.token()),
        Err(Error::NoPermits),
        "granted while the old holder still holds every permit"
    );
    // The old clients learn it, typed.
    assert_eq!(waiter.join().unwrap(), Err(Error::StateLost));
    eventually(
        "the holder sees its permits lost",
        Duration::from_secs(10),
        || held.is_lost(),
    );
    assert_eq!(held.release(), Err(Error::StateLost));
    // Once the old session's lease ended, its permits come back, once.
    let two = {
        let mut got = None;
        eventually("the old session reaped", Duration::from_secs(10), || {
            got = c.try_acquire(2).ok();
            got.is_some()
        });
        got.unwrap()
    };
    let census = assert_conserved(&c);
    assert_eq!((census.available, census.held), (0, 2), "{census:?}");
    assert_eq!(c.try_acquire(1).map(|p| p.token()), Err(Error::NoPermits));
    drop(two);
    let census = assert_conserved(&c);
    assert_eq!(census.available, 2, "{census:?}");
}

/// A holding carried over that exceeds the total asked for by the new
/// connect is a debt, paid by the old session's permits when it is reaped.
#[test]
fn a_carried_holding_above_the_new_total_is_a_debt() {
    let s = Server::start();
    let mut raw = s.raw();
    let a = RedisSemaphore::connect(&s.url(), "d", 5, o()).unwrap();
    let held = a.acquire_blocking(4).unwrap();
    let _: () = redis::cmd("DEL")
        .arg(key("d", "meta"))
        .query(&mut raw)
        .unwrap();
    let c = RedisSemaphore::connect(&s.url(), "d", 3, o()).unwrap();
    let census = assert_conserved(&c);
    assert_eq!((census.available, census.debt), (0, 1), "{census:?}");
    assert_eq!(c.try_acquire(1).map(|p| p.token()), Err(Error::NoPermits));
    drop(held);
    drop(a);
    let mut got = None;
    eventually("the old session reaped", Duration::from_secs(10), || {
        got = c.try_acquire(3).ok();
        got.is_some()
    });
    let census = assert_conserved(&c);
    assert_eq!(
        (census.available, census.held, census.debt),
        (0, 3, 0),
        "{census:?}"
    );
}

/// A real `allkeys-lru` eviction: a holder's keys, idle while it holds, are
/// evicted before the fresh keys of a cache that fills Redis. The old
/// client gets a typed error (never a silent success), and a new client
/// never holds more than the total with what survived.
#[test]
fn allkeys_lru_evicts_a_held_semaphore_and_its_clients_are_told() {
    let s = Server::start_args(&["--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut raw = s.raw();
    // A long lease: the holder's agent stays idle while the keys age.
    let long = opts().own_session(true).lease(Duration::from_secs(30));
    let a = RedisSemaphore::connect(&s.url(), "lru", 2, long.clone()).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    // LRU ages have a resolution of 1 s: let ours grow older than the filler's.
    std::thread::sleep(Duration::from_millis(2100));
    let mut n = 0;
    while exists(&mut raw, &key("lru", "meta")) {
        assert!(n < 5_000, "the meta hash never evicted");
        fill(&mut raw, n, 50);
        n += 50;
    }
    let evicted = info_field(&mut raw, "stats", "evicted_keys");
    let left: Vec<&str> = KEYS
        .iter()
        .copied()
        .filter(|k| exists(&mut raw, &key("lru", k)))
        .collect();
    println!("{evicted} keys evicted after {n} filler writes; the semaphore's keys left: {left:?}");
    for i in 0..n {
        let _: () = redis::cmd("DEL")
            .arg(format!("filler:{i}"))
            .query(&mut raw)
            .unwrap();
    }
    // Typed, and at once: the census runs a script that checks the incarnation.
    assert_eq!(a.census().map(|_| ()), Err(Error::StateLost));
    assert!(held.is_lost());
    assert_eq!(held.release(), Err(Error::StateLost));
    // A new client: what survived of the old holding (if its session and
    // holding were not evicted) is carried over, never granted again.
    let c = RedisSemaphore::connect(&s.url(), "lru", 2, long).unwrap();
    let census = assert_conserved(&c);
    assert_eq!(census.held + census.available, 2, "{census:?}");
    let free = census.available as usize;
    let got = c.try_acquire(free).expect("what is available");
    assert_eq!(c.try_acquire(1).map(|p| p.token()), Err(Error::NoPermits));
    assert_conserved(&c);
    drop(got);
}

/// The semaphore's keys carry no TTL (only the notification lists do, and
/// they are hints): a `volatile-*` policy never evicts them. With it, as
/// with `noeviction`, a full Redis refuses the scripts with `OOM`
/// ([`Error::OutOfMemory`], the server's text), no script stops half way (it is
/// refused before its first write), and every permit is back once memory
/// is freed.
#[test]
fn a_full_redis_refuses_with_oom_and_loses_nothing() {
    for policy in ["noeviction", "volatile-lru", "volatile-ttl"] {
        let s = Server::start_args(&["--maxmemory-policy", policy]);
        let mut raw = s.raw();
        let a = RedisSemaphore::connect(&s.url(), "oom", 3, o()).unwrap();
        let held = a.acquire_blocking(1).unwrap();
        let b = RedisSemaphore::connect(&s.url(), "oom", 3, o()).unwrap();
        let bb = b.clone();
        let big = std::thread::spawn(move || bb.acquire_blocking(3).map(|p| p.token()));
        eventually("a request queued", Duration::from_secs(10), || {
            exists(&mut raw, &key("oom", "queue"))
        });
        for k in KEYS {
            let ttl: i64 = redis::cmd("PTTL")
                .arg(key("oom", k))
                .query(&mut raw)
                .unwrap();
            assert!(ttl == -1 || ttl == -2, "{policy}: {k} has a TTL ({ttl} ms)");
        }
        // Full, well past the limit (not at its edge, where the buffer of
        // one command decides): 2 MB of other data, then a limit 1 MB lower
        // than what is used.
        let n = 200;
        assert_eq!(fill(&mut raw, 0, n), 0);
        let used: u64 = info_field(&mut raw, "memory", "used_memory")
            .parse()
            .unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(used - 1_000_000)
            .query(&mut raw)
            .unwrap();
        assert_eq!(fill(&mut raw, n, 1), 1, "{policy}: not full");
        let oom = |r: Result<(), Error>| match r {
            Err(Error::OutOfMemory(t)) if t.contains("OOM") => {}
            other => panic!("{policy}: not an OOM refusal: {other:?}"),
        };
        oom(a.acquire_timeout(1, Duration::from_secs(10)).map(drop));
        oom(RedisSemaphore::connect(&s.url(), "oom", 3, o()).map(drop));
        oom(RedisSemaphore::connect(&s.url(), "other", 3, o()).map(drop));
        // A release refused by OOM gives the session up: nothing twice.
        let _ = held.release();
        if policy == "noeviction" {
            assert_eq!(info_field(&mut raw, "stats", "evicted_keys"), "0");
        }
        for k in ["meta", "queue", "entries", "sessions", "held"] {
            assert!(exists(&mut raw, &key("oom", k)), "{policy}: {k} gone");
        }
        for i in 0..n {
            let _: () = redis::cmd("DEL")
                .arg(format!("filler:{i}"))
                .query(&mut raw)
                .unwrap();
        }
        // The queued request is granted (the holder's permit came back,
        // released or reclaimed with its session), or it failed typed
        // with its own session given up during the OOM.
        match big.join().unwrap() {
            Ok(_) | Err(Error::LeaseExpired) => {}
            Err(e) => panic!("{policy}: {e:?}"),
        }
        drop(b);
        let c = RedisSemaphore::connect(&s.url(), "oom", 3, o()).unwrap();
        let mut got = None;
        eventually("every permit back", Duration::from_secs(10), || {
            got = c.try_acquire(3).ok();
            got.is_some()
        });
        assert_conserved(&c);
        assert!(
            !exists(&mut raw, &key("other", "meta")),
            "{policy}: half a connect"
        );
    }
}

/// One key lost while the `:meta` hash stays (an `allkeys-*` policy evicts
/// keys one by one; here deleted, to choose which). Before, nothing told
/// the clients: a lost `held` hash lost both permits for good (every later
/// acquire waited for ever), a lost `queue` left the waiter waiting while
/// permits were free, lost `entries` left an orphan at the queue's head
/// that took the holder's permits for good, a lost `sessions` set expired every lease and left
/// the holdings of sessions that never ended unreclaimed. Now the clients'
/// heartbeats find it, the incarnation ends for every client (typed
/// `StateLost`), and a new `connect` starts again without granting a
/// permit the old holder may still use: it gets them only once that
/// holder has been told they are lost.
#[test]
fn a_key_lost_while_the_meta_hash_stays_is_state_lost_for_every_client() {
    for k in ["held", "queue", "entries", "sessions"] {
        let s = Server::start();
        let mut raw = s.raw();
        let a = RedisSemaphore::connect(&s.url(), "k", 2, o()).unwrap();
        let held = a.acquire_blocking(2).unwrap();
        let b = RedisSemaphore::connect(&s.url(), "k", 2, o()).unwrap();
        let waiter = std::thread::spawn(move || {
            b.acquire_timeout(1, Duration::from_secs(20))
                .map(|p| p.token())
        });
        eventually("b queued", Duration::from_secs(10), || {
            exists(&mut raw, &key("k", "queue"))
        });
        let _: () = redis::cmd("DEL").arg(key("k", k)).query(&mut raw).unwrap();
        assert_eq!(
            waiter.join().unwrap(),
            Err(Error::StateLost),
            "{k}: the waiter"
        );
        eventually("the holder told", Duration::from_secs(10), || {
            held.is_lost()
        });
        assert_eq!(held.release(), Err(Error::StateLost), "{k}");
        let c = RedisSemaphore::connect(&s.url(), "k", 2, o()).unwrap();
        assert_conserved(&c);
        let mut two = None;
        eventually("every permit back", Duration::from_secs(10), || {
            two = c.try_acquire(2).ok();
            two.is_some()
        });
        assert_eq!(
            c.try_acquire(1).map(|p| p.token()),
            Err(Error::NoPermits),
            "{k}"
        );
        assert_conserved(&c);
    }
}

/// The `:meta` and `:held` keys both lost, the `:sessions` set kept: a new
/// `connect` cannot know what the old live session holds, so it counts it
/// as holding the whole total until its lease ends.
#[test]
fn an_unknown_holding_of_a_live_session_reserves_the_total() {
    let s = Server::start();
    let mut raw = s.raw();
    let a = RedisSemaphore::connect(&s.url(), "u", 3, o()).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    let _: () = redis::cmd("DEL")
        .arg(key("u", "meta"))
        .arg(key("u", "held"))
        .query(&mut raw)
        .unwrap();
    let c = RedisSemaphore::connect(&s.url(), "u", 3, o()).unwrap();
    let census = assert_conserved(&c);
    assert_eq!((census.available, census.held), (0, 3), "{census:?}");
    assert_eq!(c.try_acquire(1).map(|p| p.token()), Err(Error::NoPermits));
    let mut all = None;
    eventually("the old session reaped", Duration::from_secs(10), || {
        all = c.try_acquire(3).ok();
        all.is_some()
    });
    assert!(held.is_lost(), "granted while the old holder was not told");
    assert_conserved(&c);
}
