//! A key of the wrong type planted in a semaphore's key space (another
//! program's `SET` on `{volt-sem:name}:queue`, say). Redis does not roll a
//! script back when a command inside it fails, so a script that wrote
//! before it met the foreign key stopped half way with those writes made:
//! a permit taken from `avail` and counted nowhere, a session counted as
//! holding a permit its handle never got, a queue entry without its record
//! (which failed every later hand-off). Every script now meets such a key
//! before its first write, and the caller gets `Error::WrongType`.
//!
//! Each case plants a string on one key (saving and restoring what was
//! there), makes one call through the public API, removes the string again,
//! and checks that nothing was lost: the census is conserved, Redis counts
//! for each session what its handle counts, and once every handle is gone
//! every permit is available again.

mod support;

use std::time::Duration;

use redis::Connection;
use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

/// Every key a script writes besides the two every script reads first
/// (`meta`, `sessions`).
const KEYS: [&str; 6] = ["queue", "entries", "held", "grants", "own", "info"];

fn o() -> ConnectOptions {
    opts().own_session(true)
}

/// A string where `key` of semaphore `name` was, until dropped (then what
/// was there is back).
///
/// Both swaps are one `MULTI`/`EXEC` each: the handles' background work (a
/// session given up and ended by the agent, a new one started) writes these
/// keys at any time, and a write between a `DEL` and the `RESTORE` after it
/// failed the `RESTORE` with `BUSYKEY` (1 run of 15 under load; every run
/// with a 300 ms pause put between the two), while one between the `DUMP`
/// and the `DEL` was lost.
struct Planted {
    raw: Connection,
    key: String,
    saved: Option<Vec<u8>>,
}

fn plant(s: &Server, name: &str, key: &str) -> Planted {
    let mut raw = s.raw();
    let key = format!("{{volt-sem:{name}}}:{key}");
    let (saved,): (Option<Vec<u8>>,) = redis::pipe()
        .atomic()
        .cmd("DUMP")
        .arg(&key)
        .cmd("SET")
        .arg(&key)
        .arg("planted")
        .ignore()
        .query(&mut raw)
        .unwrap();
    Planted { raw, key, saved }
}

impl Drop for Planted {
    fn drop(&mut self) {
        let mut swap = redis::pipe();
        swap.atomic().cmd("DEL").arg(&self.key).ignore();
        if let Some(d) = &self.saved {
            swap.cmd("RESTORE")
                .arg(&self.key)
                .arg(0)
                .arg(d.as_slice())
                .ignore();
        }
        let _: () = swap.query(&mut self.raw).unwrap();
    }
}

/// `r` is what a call returned with a foreign key planted: its own result,
/// or `WrongType`.
fn ok_or_wrong_type<T: std::fmt::Debug>(what: &str, r: &Result<T, Error>) {
    assert!(
        matches!(r, Ok(_) | Err(Error::WrongType(_))),
        "{what}: {r:?}"
    );
}

/// Redis conserves, and soon counts for the sessions what `handles` count
/// (a refused release gives its session up: the agent ends it in Redis
/// once the foreign key is gone, which takes a back-off).
fn consistent(handles: &[&RedisSemaphore]) {
    for h in handles {
        h.flush().ok();
    }
    assert_conserved(handles[0]);
    let counted = || handles.iter().map(|h| h.held_permits() as u64).sum::<u64>();
    eventually(
        "Redis counts what the handles count",
        Duration::from_secs(20),
        || {
            handles[0]
                .census()
                .is_ok_and(|c| c.conserved() && c.held == counted())
        },
    );
}

/// Once every handle is gone, all `total` permits are available again.
fn all_back(s: &Server, name: &str, total: usize) {
    let sem = RedisSemaphore::connect(&s.url(), name, total, o()).unwrap();
    eventually("every permit back", Duration::from_secs(20), || {
        sem.census().is_ok_and(|c| {
            c.conserved() && c.available == total as u64 && c.queued == 0 && c.held == 0
        })
    });
    // And the semaphore works.
    drop(sem.try_acquire(total).unwrap());
}

#[test]
fn an_uncontended_acquire_and_release() {
    let s = Server::start();
    for key in KEYS {
        let name = format!("fast-{key}");
        let a = RedisSemaphore::connect(&s.url(), &name, 2, o()).unwrap();
        let held = a.try_acquire(1).unwrap();
        let second = {
            let _p = plant(&s, &name, key);
            a.try_acquire(1)
        };
        ok_or_wrong_type(&format!("try_acquire, {key} planted"), &second);
        consistent(&[&a]);
        // With the second permit held, this release hands its permit on
        // (to nobody): the release script's other path.
        let r = {
            let _p = plant(&s, &name, key);
            drop(held);
            a.flush()
        };
        eprintln!(
            "{key}: try_acquire: {:?}, release: {r:?}",
            second.as_ref().map(|_| ())
        );
        consistent(&[&a]);
        drop(second);
        drop(a);
        all_back(&s, &name, 2);
    }
}

#[test]
fn a_queued_acquire() {
    let s = Server::start();
    for key in KEYS {
        let name = format!("queued-{key}");
        let a = RedisSemaphore::connect(&s.url(), &name, 1, o()).unwrap();
        let b = RedisSemaphore::connect(&s.url(), &name, 1, o()).unwrap();
        let held = a.acquire_blocking(1).unwrap();
        let r = {
            let _p = plant(&s, &name, key);
            b.acquire_timeout(1, Duration::from_millis(500))
        };
        assert!(
            matches!(r, Err(Error::WrongType(_) | Error::TimedOut)),
            "acquire, {key} planted: {r:?}"
        );
        consistent(&[&a, &b]);
        drop(held);
        // The permit goes back (no queue entry was left half made).
        let p = b.acquire_timeout(1, Duration::from_secs(10)).unwrap();
        consistent(&[&a, &b]);
        drop(p);
        drop((a, b));
        all_back(&s, &name, 1);
    }
}

#[test]
fn a_release_that_hands_its_permit_on() {
    let s = Server::start();
    for key in KEYS {
        let name = format!("handoff-{key}");
        let a = RedisSemaphore::connect(&s.url(), &name, 1, o()).unwrap();
        let b = RedisSemaphore::connect(&s.url(), &name, 1, o()).unwrap();
        let held = a.acquire_blocking(1).unwrap();
        let bb = b.clone();
        let waiter = std::thread::spawn(move || bb.acquire_timeout(1, Duration::from_secs(20)));
        eventually("queued", Duration::from_secs(10), || {
            a.census().unwrap().queued == 1
        });
        let r = {
            let _p = plant(&s, &name, key);
            drop(held);
            a.flush()
        };
        eprintln!("{key}: release: {r:?}");
        // Refused or applied, the permit reaches the waiter: a refused
        // release gives the session up, and ending it hands the permit on.
        let got = waiter.join().unwrap();
        assert!(got.is_ok(), "{key} planted: the waiter got {got:?}");
        consistent(&[&a, &b]);
        drop(got);
        drop((a, b));
        all_back(&s, &name, 1);
    }
}

#[test]
fn the_other_calls() {
    let s = Server::start();
    for key in KEYS {
        let name = format!("other-{key}");
        let a = RedisSemaphore::connect(&s.url(), &name, 2, o()).unwrap();
        let held = a.acquire_blocking(1).unwrap();
        let c = {
            let _p = plant(&s, &name, key);
            ok_or_wrong_type(&format!("census, {key}"), &a.census());
            ok_or_wrong_type(&format!("inspect, {key}"), &a.inspect());
            ok_or_wrong_type(&format!("set_total, {key}"), &a.set_total(3));
            ok_or_wrong_type(&format!("close, {key}"), &a.close());
            ok_or_wrong_type(&format!("reopen, {key}"), &a.reopen());
            let c = RedisSemaphore::connect(&s.url(), &name, 2, o().resize(true));
            ok_or_wrong_type(&format!("connect, {key}"), &c);
            c
        };
        drop(c);
        let _ = a.reopen();
        let _ = a.set_total(2);
        consistent(&[&a]);
        drop(held);
        drop(a);
        all_back(&s, &name, 2);
    }
}

/// A notification list of another type: the one key a script cannot check
/// before its first write (which session a hand-off notifies is known only
/// inside it). The push fails alone (a lost notification), the waiter's
/// heartbeat finds its grant, and the foreign value expires.
#[test]
fn a_notification_list_of_another_type() {
    let s = Server::start();
    let name = "note";
    let a = RedisSemaphore::connect(&s.url(), name, 1, o()).unwrap();
    let b = RedisSemaphore::connect(
        &s.url(),
        name,
        1,
        short_lease().own_session(true).label("waiter"),
    )
    .unwrap();
    let held = a.acquire_blocking(1).unwrap();
    let bb = b.clone();
    let waiter = std::thread::spawn(move || bb.acquire_timeout(1, Duration::from_secs(20)));
    eventually("queued", Duration::from_secs(10), || {
        a.census().unwrap().queued == 1
    });
    let note = lose_notifications(&s, name, "waiter");
    let mut raw = s.raw();
    drop(held);
    assert_eq!(a.flush(), Ok(()), "the release is applied");
    let got = waiter.join().unwrap();
    assert!(got.is_ok(), "the waiter got {got:?}");
    consistent(&[&a, &b]);
    // The failed push left the foreign value to expire (PEXPIRE still ran).
    let ttl: i64 = redis::cmd("PTTL").arg(&note).query(&mut raw).unwrap();
    assert!(ttl > 0, "the planted list's TTL: {ttl}");
    let _: () = redis::cmd("DEL").arg(&note).query(&mut raw).unwrap();
    drop(got);
    drop((a, b));
    all_back(&s, name, 1);
}
