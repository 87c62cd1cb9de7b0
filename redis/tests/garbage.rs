//! Garbage inside the semaphore's own keys: a value volt-sem never writes,
//! put into one of its hash fields by something else (an operator's `HSET`,
//! an old tool, a partial restore): a word where a count is kept, a
//! negative count, a fraction, a number in exponent form, one too large for
//! the scripts' doubles, `avail` above the total. The scripts used to read
//! such a value with `tonumber`, getting `nil` (a Lua error, reported as an
//! untyped `Error::Redis`, sometimes after the script's first writes: a
//! permit taken from one count and added to none) or a number out of range
//! (`avail` above the total granted more permits than the total).
//!
//! Each case plants one value (saving and restoring what was there), makes
//! the calls of the public API, which must each answer as without the
//! value or fail with `Error::WrongType` (never another error, a hang or an
//! over-grant), puts the field back, and checks that nothing was lost: the
//! census is conserved, Redis counts what the handles count, and once every
//! handle is gone every permit is available again.

mod support;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

fn o() -> ConnectOptions {
    opts().own_session(true)
}

/// Values volt-sem never writes where it keeps a count.
const GARBAGE: [&str; 6] = [
    "garbage",
    "",
    "-1",
    "1.5",
    "1e3",
    "123456789012345678901234567890",
];

/// `value` in `field` of `{volt-sem:name}:key` ("*": every field of that
/// hash) until dropped; then what was there is back.
struct Planted {
    raw: redis::Connection,
    key: String,
    saved: Vec<(String, Option<String>)>,
}

fn plant(s: &Server, name: &str, key: &str, field: &str, value: &str) -> Planted {
    let mut raw = s.raw();
    let key = format!("{{volt-sem:{name}}}:{key}");
    let fields: Vec<String> = if field == "*" {
        redis::cmd("HKEYS").arg(&key).query(&mut raw).unwrap()
    } else {
        vec![field.to_string()]
    };
    assert!(!fields.is_empty(), "nothing to plant in {key}");
    let mut saved = Vec::new();
    for f in fields {
        let old: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg(&f)
            .query(&mut raw)
            .unwrap();
        let _: () = redis::cmd("HSET")
            .arg(&key)
            .arg(&f)
            .arg(value)
            .query(&mut raw)
            .unwrap();
        saved.push((f, old));
    }
    Planted { raw, key, saved }
}

impl Drop for Planted {
    fn drop(&mut self) {
        for (f, old) in &self.saved {
            let mut c = redis::cmd(if old.is_some() { "HSET" } else { "HDEL" });
            c.arg(&self.key).arg(f);
            if let Some(v) = old {
                c.arg(v);
            }
            let _: () = c.query(&mut self.raw).unwrap();
        }
    }
}

thread_local! {
    /// The failures of the running test, reported together at its end.
    static FAILED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn fail(why: String) {
    eprintln!("FAILED: {why}");
    FAILED.with(|f| f.borrow_mut().push(why));
}

/// Fails the test with every failure recorded.
fn report() {
    let failed = FAILED.with(|f| std::mem::take(&mut *f.borrow_mut()));
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Whether `cond` holds within `limit` (polled).
fn soon(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// What a call answered with garbage planted: its answer without it
/// (`ok`), or `WrongType`.
fn typed<T: std::fmt::Debug>(
    what: &str,
    r: &Result<T, Error>,
    ok: impl Fn(&Result<T, Error>) -> bool,
) {
    if !(ok(r) || matches!(r, Err(Error::WrongType(_)))) {
        fail(format!("{what}: {r:?}"));
    }
}

/// A release's answer (the next `flush`): applied, or refused, and then,
/// as any refused release, its session was given up (`LeaseExpired`): the
/// permits go back when the session is ended (once the value is gone).
fn refused_release(r: &Result<(), Error>) -> bool {
    matches!(r, Ok(()) | Err(Error::LeaseExpired))
}

/// Redis conserves, and soon counts for the sessions what `handles` count.
fn consistent(what: &str, handles: &[&RedisSemaphore]) {
    for h in handles {
        h.flush().ok();
    }
    let counted = || handles.iter().map(|h| h.held_permits() as u64).sum::<u64>();
    if !soon(Duration::from_secs(20), || {
        handles[0]
            .census()
            .is_ok_and(|c| c.conserved() && c.held == counted())
    }) {
        fail(format!(
            "{what}: Redis does not conserve, or count what the handles count ({} held): {:?}",
            counted(),
            handles[0].census()
        ));
    }
}

/// Once every handle is gone, all `total` permits are available again, and
/// no more.
fn all_back(s: &Server, name: &str, total: usize) {
    let sem = RedisSemaphore::connect(&s.url(), name, total, o()).unwrap();
    if !soon(Duration::from_secs(20), || {
        sem.census().is_ok_and(|c| {
            c.conserved() && c.available == total as u64 && c.queued == 0 && c.held == 0
        })
    }) {
        fail(format!("{name}: not every permit back: {:?}", sem.census()));
        return;
    }
    let p = sem.try_acquire(total);
    let more = sem.try_acquire(1);
    if p.is_err() || !matches!(more, Err(Error::NoPermits)) {
        fail(format!(
            "{name}: all {total} then one more: {p:?}, {more:?}"
        ));
    }
}

/// Fields of the meta hash, and for each the values planted besides
/// [`GARBAGE`] (out of range there).
const META: [(&str, &[&str]); 7] = [
    ("total", &["0"]),
    ("avail", &["1000", "3"]),
    ("debt", &[]),
    ("token", &[]),
    ("seq", &[]),
    ("reap", &[]),
    ("closed", &[]),
];

/// One holder `a` (1 of 2 permits), then with the value planted: `b`'s
/// try_acquire of 2 (never granted: only 1 is free), of 1, a queued
/// acquire, a release, the census, inspect, connect, set_total.
fn the_calls(s: &Server, name: &str, key: &str, field: &str, value: &str) {
    let what = format!("{key}.{field} = {value:?}");
    let a = RedisSemaphore::connect(&s.url(), name, 2, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), name, 2, o()).unwrap();
    let held = a.try_acquire(1).unwrap();
    {
        let _p = plant(s, name, key, field, value);
        let r = b.try_acquire(2);
        typed(&format!("{what}: try_acquire(2)"), &r, |r| {
            matches!(r, Err(Error::NoPermits))
        });
        let one = b.try_acquire(1);
        typed(&format!("{what}: try_acquire(1)"), &one, |r| r.is_ok());
        let r = b.acquire_timeout(1, Duration::from_millis(300));
        typed(&format!("{what}: acquire_timeout(1)"), &r, |r| {
            matches!(r, Err(Error::TimedOut))
        });
        drop(r);
        drop(one);
        typed(&format!("{what}: release"), &b.flush(), refused_release);
        typed(&format!("{what}: census"), &b.census(), |r| r.is_ok());
        typed(&format!("{what}: inspect"), &b.inspect(), |r| r.is_ok());
        let c = RedisSemaphore::connect(&s.url(), name, 2, o());
        typed(&format!("{what}: connect"), &c, |r| r.is_ok());
        drop(c);
        typed(&format!("{what}: set_total(2)"), &b.set_total(2), |r| {
            r.is_ok()
        });
    }
    consistent(&what, &[&a, &b]);
    drop(held);
    drop((a, b));
    all_back(s, name, 2);
}

#[test]
fn garbage_in_the_meta_hash() {
    let s = Server::start();
    let mut i = 0;
    for (field, more) in META {
        for value in GARBAGE.iter().chain(more.iter()) {
            i += 1;
            the_calls(&s, &format!("meta-{i}"), "meta", field, value);
        }
    }
    report();
}

#[test]
fn garbage_in_the_holdings() {
    let s = Server::start();
    for (i, value) in GARBAGE.iter().enumerate() {
        the_calls(&s, &format!("held-{i}"), "held", "*", value);
    }
    report();
}

/// A semaphore whose fields hold garbage that nobody puts back: every call
/// refuses it, so its sessions cannot end and expire with their leases;
/// then `delete` removes it (it reads none of those values when no session
/// is live), and the name works again.
#[test]
fn a_semaphore_left_with_garbage_can_be_deleted() {
    let s = Server::start();
    for (i, (key, field, value)) in [
        ("meta", "avail", "garbage"),
        ("meta", "total", "-1"),
        ("held", "*", "x"),
        ("entries", "*", "1:2"),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("delete-{i}");
        let a = RedisSemaphore::connect(&s.url(), &name, 2, short_lease()).unwrap();
        let b = RedisSemaphore::connect(&s.url(), &name, 2, short_lease()).unwrap();
        let held = a.try_acquire(2).unwrap();
        let waiter = acquire_in_thread(&b, 1);
        std::mem::forget(plant(&s, &name, key, field, value));
        drop(held);
        drop(a);
        drop(b);
        let _ = waiter.recv_timeout(Duration::from_secs(30));
        if !soon(Duration::from_secs(20), || {
            volt_sem_redis::delete(&s.url(), &name, opts()).is_ok()
        }) {
            fail(format!(
                "{key}.{field} = {value:?}: delete: {:?}",
                volt_sem_redis::delete(&s.url(), &name, opts())
            ));
            continue;
        }
        let mut raw = s.raw();
        let left: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{{volt-sem:{name}}}:*"))
            .query(&mut raw)
            .unwrap();
        let left: Vec<&String> = left.iter().filter(|k| !k.contains(":note:")).collect();
        if !left.is_empty() {
            fail(format!("{key}.{field} = {value:?}: keys left: {left:?}"));
        }
        all_back(&s, &name, 2);
    }
    report();
}

/// A queued request's record (`need:got`) replaced, then a release that
/// hands its permit on (the hand-off reads the record), a close.
#[test]
fn garbage_in_a_queued_request() {
    let s = Server::start();
    for (i, value) in GARBAGE.iter().chain(&["2:5", "0:0", "3"]).enumerate() {
        let what = format!("entries = {value:?}");
        let name = format!("entries-{i}");
        let a = RedisSemaphore::connect(&s.url(), &name, 2, o()).unwrap();
        let b = RedisSemaphore::connect(&s.url(), &name, 2, o()).unwrap();
        let first = a.try_acquire(1).unwrap();
        let held = a.try_acquire(1).unwrap();
        let waiter = acquire_in_thread(&b, 1);
        {
            let _p = plant(&s, &name, "entries", "*", value);
            // Half of what `a` holds goes back: the hand-off reads the record.
            drop(first);
            typed(&format!("{what}: release"), &a.flush(), refused_release);
            typed(&format!("{what}: census"), &a.census(), |r| r.is_ok());
            typed(&format!("{what}: inspect"), &a.inspect(), |r| r.is_ok());
            typed(&format!("{what}: set_total(2)"), &a.set_total(2), |r| {
                r.is_ok()
            });
        }
        // The waiter gets its permit (from the release, or from `a`'s
        // session given up after a refused release).
        let got = waiter.recv_timeout(Duration::from_secs(30));
        if !matches!(got, Ok(Ok(_))) {
            fail(format!("{what}: the waiter got {got:?}"));
        }
        consistent(&what, &[&a, &b]);
        drop(got);
        drop(held);
        drop((a, b));
        all_back(&s, &name, 2);
    }
    report();
}
