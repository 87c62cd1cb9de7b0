//! Deleting a Redis semaphore's name (issue 26, item 6): a service that
//! derives names must be able to remove them, or Redis grows without bound.
//! `delete` is refused while anyone holds, waits or is connected, not by a
//! crashed client whose lease ended; what stays in Redis after every session
//! ended without it is the `:meta` hash alone (and notification lists that
//! expire).

mod support;

use std::time::Duration;

use support::*;
use volt_sem_redis::{delete, ConnectOptions, Error, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

/// The semaphore's keys in Redis, with their TTL in ms (-1: none).
fn keys_of(s: &Server, name: &str) -> Vec<(String, i64)> {
    let mut raw = s.raw();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{{volt-sem:{name}}}*"))
        .query(&mut raw)
        .unwrap();
    let mut out: Vec<(String, i64)> = keys
        .into_iter()
        .map(|k| {
            let ttl: i64 = redis::cmd("PTTL").arg(&k).query(&mut raw).unwrap();
            (k, ttl)
        })
        .collect();
    out.sort();
    out
}

fn o() -> ConnectOptions {
    opts().own_session(true)
}

#[test]
fn delete_is_refused_while_anyone_holds_waits_or_is_connected() {
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "del", 1, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "del", 1, o()).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    let waiting = acquire_in_thread(&b, 1);
    eventually("queued", Duration::from_secs(30), || {
        a.census().unwrap().queued == 1
    });
    assert_eq!(
        delete(&s.url(), "del", o()).unwrap_err(),
        Error::InUse { sessions: 2 }
    );
    drop(held);
    let p = waiting
        .recv_timeout(Duration::from_secs(30))
        .unwrap()
        .unwrap();
    drop(p);
    drop(a);
    // b is only connected: still refused (it would find the state lost).
    // a's session ends with its last handle: at once, or a moment later on
    // its door thread if that was still finishing the job that carried the
    // release (it holds the handle while it runs one).
    eventually("a's session ended", Duration::from_secs(30), || {
        delete(&s.url(), "del", o()).unwrap_err() == Error::InUse { sessions: 1 }
    });
    assert_conserved(&b);
    drop(b);

    // Every session ended: only the meta hash stays, with no TTL; the
    // notification lists expire.
    let left = keys_of(&s, "del");
    let lasting: Vec<_> = left.iter().filter(|(_, ttl)| *ttl < 0).collect();
    assert_eq!(
        lasting,
        [&("{volt-sem:del}:meta".to_string(), -1)],
        "what stays: {left:?}"
    );
    assert!(left
        .iter()
        .all(|(k, ttl)| k.ends_with(":meta") || (k.contains(":note:") && *ttl > 0)));

    delete(&s.url(), "del", o()).unwrap();
    assert!(
        keys_of(&s, "del").iter().all(|(k, _)| k.contains(":note:")),
        "nothing but expiring notification lists after delete"
    );
    assert_eq!(delete(&s.url(), "del", o()).unwrap_err(), Error::NotFound);
    // The name works again, afresh (another total is fine now).
    let c = RedisSemaphore::connect(&s.url(), "del", 3, o()).unwrap();
    assert_eq!(assert_conserved(&c).total, 3);
    drop(c);
    delete(&s.url(), "del", ConnectOptions::new()).unwrap();
}

#[test]
fn a_crashed_client_does_not_block_delete_once_its_lease_ended() {
    let s = Server::start();
    let mut w = Worker::spawn(&s.url(), "del-crash", 2, 1000);
    w.send("acquire 1");
    assert!(w.line().starts_with("granted 1"));
    assert!(matches!(
        delete(&s.url(), "del-crash", o()),
        Err(Error::InUse { sessions: 1 })
    ));
    w.kill9();
    eventually(
        "the dead client's lease ended",
        Duration::from_secs(30),
        || delete(&s.url(), "del-crash", o()).is_ok(),
    );
    assert!(keys_of(&s, "del-crash")
        .iter()
        .all(|(k, _)| k.contains(":note:")));
}

#[test]
fn delete_checks_its_input_and_keeps_other_prefixes() {
    let s = Server::start();
    assert_eq!(delete(&s.url(), "", o()).unwrap_err(), Error::InvalidName);
    assert_eq!(
        delete(&s.url(), "x", o().prefix("a{b")).unwrap_err(),
        Error::InvalidPrefix
    );
    assert!(matches!(
        delete("nope://x", "x", o()).unwrap_err(),
        Error::InvalidUrl(_)
    ));
    let other = RedisSemaphore::connect(&s.url(), "same", 1, o().prefix("other")).unwrap();
    drop(other);
    assert_eq!(delete(&s.url(), "same", o()).unwrap_err(), Error::NotFound);
    delete(&s.url(), "same", o().prefix("other")).unwrap();
}

/// `attach_only`: `connect` to a name nobody created, or one deleted since
/// it was created, fails with `NotFound` and writes no key; to one that
/// exists it connects as usual (resize mode included, which then sets the
/// total).
#[test]
fn attach_only_refuses_to_create_a_deleted_or_unknown_semaphore() {
    let s = Server::start();
    let url = s.url();
    let e = RedisSemaphore::connect(&url, "never", 2, o().attach_only()).unwrap_err();
    assert!(matches!(e, Error::NotFound), "{e:?}");
    assert_eq!(keys_of(&s, "never"), []);

    drop(RedisSemaphore::connect(&url, "was", 2, o()).unwrap());
    let sem = RedisSemaphore::connect(&url, "was", 3, o().attach_only().resize(true)).unwrap();
    assert_eq!(sem.total_permits(), 3);
    drop(sem);
    delete(&url, "was", opts()).unwrap();
    let e = RedisSemaphore::connect(&url, "was", 3, o().attach_only().resize(true)).unwrap_err();
    assert!(matches!(e, Error::NotFound), "{e:?}");
    // Only the earlier sessions' notification lists, which expire.
    let left = keys_of(&s, "was");
    assert!(
        left.iter().all(|(k, ttl)| k.contains(":note:") && *ttl > 0),
        "{left:?}"
    );
}
