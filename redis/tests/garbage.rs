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
//! handle is gone every permit is available again. The same for a note
//! pushed onto a session's notification list (the last test), which must
//! grant or fail nothing.

mod support;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::scripts::{Keys, Reply, Scripts, Who};
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

/// A session driven through the scripts on its own connection (as
/// `lost_grant.rs` does), so that one of its calls and a planted value can
/// be one transaction: no heartbeat of a handle runs between them.
struct Virtual {
    sc: Scripts,
    k: Keys,
    inc: String,
    c: redis::Connection,
}

impl Virtual {
    /// Joins semaphore `name` (made by a handle) as session "v" (a 60 s
    /// lease), and loads the scripts [`Virtual::atomically`] sends.
    fn join(s: &Server, name: &str, total: u64) -> Virtual {
        let mut c = s.raw();
        let k = Keys::new("volt-sem", name);
        let inc: String = redis::cmd("HGET")
            .arg(&k.all()[0])
            .arg("inc")
            .query(&mut c)
            .unwrap();
        let mut v = Virtual {
            sc: Scripts::new(),
            k,
            inc,
            c,
        };
        v.ok(
            |sc, c, k, w| sc.connect(c, k, w, total, "", "9 v h", "", false),
            "OK",
        );
        // An acquire, a release, a close and a reopen with nothing queued:
        // EVALSHA finds them loaded inside a transaction.
        v.take("v:0", 1);
        v.ok(|sc, c, k, w| sc.release(c, k, w, 1), "OK");
        v.ok(|sc, c, k, w| sc.close(c, k, w), "OK");
        v.ok(|sc, c, k, w| sc.reopen(c, k, w), "OK");
        v
    }

    /// Runs a script call of session "v", which must answer `status`.
    fn ok(
        &mut self,
        call: impl FnOnce(
            &Scripts,
            &mut redis::Connection,
            &Keys,
            Who<'_>,
        ) -> Result<Reply, volt_sem_redis::scripts::CallError>,
        status: &str,
    ) {
        let Virtual { sc, k, inc, c } = self;
        let r = call(sc, c, k, Self::who_of(inc)).unwrap();
        assert_eq!(r.status, status, "{r:?}");
    }

    fn who_of(inc: &str) -> Who<'_> {
        Who {
            sid: "v",
            inc,
            lease_ms: 60_000,
        }
    }

    /// Takes `n` permits (available now).
    fn take(&mut self, eid: &str, n: u64) {
        self.ok(|sc, c, k, w| sc.acquire(c, k, w, eid, n, false), "READY");
    }

    /// The only queued request's id.
    fn queued(&mut self) -> String {
        let q: Vec<String> = redis::cmd("ZRANGE")
            .arg(&self.k.all()[1])
            .arg(0)
            .arg(-1)
            .query(&mut self.c)
            .unwrap();
        assert_eq!(q.len(), 1, "queued: {q:?}");
        q[0].clone()
    }

    /// `call` (a release or a close of this session), then `value` in
    /// `eid`'s grant record, in one transaction.
    fn atomically(&mut self, call: redis::Cmd, eid: &str, value: &str) {
        let mut hset = redis::cmd("HSET");
        hset.arg(&self.k.all()[5]).arg(eid).arg(value);
        let r: Vec<redis::Value> = redis::pipe()
            .atomic()
            .add_command(call)
            .add_command(hset)
            .query(&mut self.c)
            .unwrap();
        assert!(
            !matches!(r[0], redis::Value::ServerError(_)),
            "the call: {r:?}"
        );
    }

    fn release_cmd(&self, n: u64) -> redis::Cmd {
        self.sc.release_cmd(&self.k, Self::who_of(&self.inc), n)
    }

    fn close_cmd(&self) -> redis::Cmd {
        self.sc.close_cmd(&self.k, Self::who_of(&self.inc))
    }

    fn end(mut self) {
        self.ok(|sc, c, k, w| sc.end(c, k, w), "OK");
    }
}

/// Values in a grant record that no script writes there (a token is at
/// most 2^53 - 1, in digits; "0" and "T" are written by close and
/// set_total): besides [`GARBAGE`], a token with a sign, the heartbeat's
/// own words for a request still queued or gone, u64::MAX (which the
/// client took for "T"), 2^53, a token with a leading zero.
const GRANT_GARBAGE: [&str; 8] = [
    "007",
    "+5",
    "Q",
    "X",
    " 5",
    "W",
    "18446744073709551615",
    "9007199254740992",
];

/// Census of `name` conserved, Redis counting `virt` held for the
/// session "v" plus what `b` counts.
fn consistent_with(what: &str, b: &RedisSemaphore, virt: u64) {
    b.flush().ok();
    if !soon(Duration::from_secs(20), || {
        b.census()
            .is_ok_and(|c| c.conserved() && c.held == virt + b.held_permits() as u64)
    }) {
        fail(format!(
            "{what}: Redis does not conserve, or count what the handle ({}) and v ({virt}) hold: {:?}",
            b.held_permits(),
            b.census()
        ));
    }
}

/// A queued waiter `b` of semaphore `name` (total 1) granted by a
/// release that, in the same transaction, leaves `value` in its grant
/// record; its notification lost first if `lost`. The waiter's outcome
/// passes `ok` (else it is a failure), then the census is checked and
/// everything is given back.
fn a_grant_record_of(
    s: &Server,
    name: &str,
    value: &str,
    lost: bool,
    ok: impl Fn(&Result<volt_sem_redis::Permit, Error>, &str) -> bool,
) {
    let what = format!("grants = {value:?}, notification lost: {lost}");
    let b = RedisSemaphore::connect(
        &s.url(),
        name,
        1,
        short_lease().own_session(true).label("waiter"),
    )
    .unwrap();
    let mut v = Virtual::join(s, name, 1);
    v.take("v:1", 1);
    let waiter = acquire_in_thread(&b, 1);
    let note = lost.then(|| lose_notifications(s, name, "waiter"));
    let eid = v.queued();
    v.atomically(v.release_cmd(1), &eid, value);
    let Ok(got) = waiter.recv_timeout(Duration::from_secs(15)) else {
        return fail(format!("{what}: the waiter still waits (15 s)"));
    };
    if !ok(&got, &eid) {
        fail(format!("{what}: the waiter got {got:?}"));
    }
    if let Some(note) = note {
        let _: () = redis::cmd("DEL").arg(&note).query(&mut s.raw()).unwrap();
    }
    consistent_with(&what, &b, 0);
    drop(got);
    v.end();
    drop(b);
    all_back(s, name, 1);
}

/// A queued waiter whose grant notification is lost, and whose grant
/// record (written by the same release) holds a value volt-sem never
/// writes: the heartbeat, which repairs a lost notification from that
/// record, read it as no answer (the waiter waited for ever, or until its
/// timeout, with the permit counted for it in Redis), as still queued
/// ("Q"), as gone ("X": LeaseExpired), as a grant with a wrong token
/// ("+5", 2^53) or as failed by set_total (u64::MAX). It fails the waiter
/// with WrongType now; the session is given up (whether Redis counts the
/// permit for it cannot be told) and its end gives the permit back.
#[test]
fn garbage_in_the_grant_record_of_a_waiter_whose_notification_is_lost() {
    let s = Server::start();
    for (i, value) in GARBAGE.iter().chain(&GRANT_GARBAGE).enumerate() {
        a_grant_record_of(
            &s,
            &format!("grants-{i}"),
            value,
            true,
            |r, eid| matches!(r, Err(Error::WrongType(m)) if m.contains(eid)),
        );
    }
    report();
}

/// The same with the notification delivered: the agent completes the
/// waiter from it (the token is the notification's) and its ack forgets
/// the record unread. Harmless, unless the heartbeat reads the record
/// first (it runs every half second here): then WrongType, as above.
#[test]
fn garbage_in_the_grant_record_of_a_notified_waiter() {
    let s = Server::start();
    for (i, value) in ["garbage", "Q", "X"].iter().enumerate() {
        a_grant_record_of(&s, &format!("notified-{i}"), value, false, |r, _| {
            matches!(r, Ok(p) if p.token() > 5) || matches!(r, Err(Error::WrongType(_)))
        });
    }
    report();
}

/// A handle of `name` labelled `waiter`, with a 60 s lease: its heartbeat
/// runs every 20 s.
fn long_lease_waiter(s: &Server, name: &str, total: usize) -> RedisSemaphore {
    let o = opts()
        .lease(Duration::from_secs(60))
        .own_session(true)
        .label("waiter");
    RedisSemaphore::connect(&s.url(), name, total, o).unwrap()
}

/// A waiter whose request was closed (its record "0", its notification
/// lost) times out before its heartbeat reads the record, which holds
/// garbage by then: its cancel reads the record. It took the garbage for a
/// grant ("GRANTED" with no token) and released the request's permit,
/// which Redis never counted for it: one taken from the permit the handle
/// still holds, so Redis counted one permit fewer held than the handle
/// did (an over-grant once it goes back). The cancel now fails with
/// WrongType before its first write, and the handle gives the session up
/// (as for any failed cancel): its holder learns LeaseExpired, and the
/// session's end gives back what Redis counts for it.
#[test]
fn garbage_in_the_grant_record_of_a_cancelled_waiter() {
    let s = Server::start();
    for (i, value) in GARBAGE.iter().chain(&["Q", "+5"]).enumerate() {
        let what = format!("grants = {value:?}, cancelled");
        let name = format!("cancelled-{i}");
        // A long lease: no heartbeat reads the record before the cancel.
        let b = long_lease_waiter(&s, &name, 2);
        let mut v = Virtual::join(&s, &name, 2);
        let held = b.try_acquire(1).unwrap();
        v.take("v:1", 1);
        let bb = b.clone();
        let waiter =
            std::thread::spawn(move || bb.acquire_timeout(1, Duration::from_secs(2)).map(drop));
        let note = lose_notifications(&s, &name, "waiter");
        let eid = soon(Duration::from_secs(10), || {
            b.census().is_ok_and(|c| c.queued == 1)
        })
        .then(|| v.queued())
        .expect("queued");
        v.atomically(v.close_cmd(), &eid, value);
        let got = waiter.join().unwrap();
        if !matches!(got, Err(Error::TimedOut | Error::WrongType(_))) {
            fail(format!("{what}: the waiter got {got:?}"));
        }
        v.ok(|sc, c, k, w| sc.reopen(c, k, w), "OK");
        // The list again, with a `reap` notice in it (acquire.lua's): it
        // wakes the agent from its `BLPOP` now, so that it ends the session
        // given up, rather than at its next heartbeat, 20 s on.
        let _: () = redis::pipe()
            .cmd("DEL")
            .arg(&note)
            .cmd("RPUSH")
            .arg(&note)
            .arg("reap")
            .query(&mut s.raw())
            .unwrap();
        consistent_with(&what, &b, 1);
        // Given up by the refused cancel (or by the heartbeat's WrongType).
        if !held.is_lost() {
            fail(format!("{what}: the session was not given up"));
        }
        drop(held);
        v.ok(|sc, c, k, w| sc.release(c, k, w, 1), "OK");
        v.end();
        drop(b);
        all_back(&s, &name, 2);
    }
    report();
}

/// Notes volt-sem never writes on a notification list (what the agent's
/// `BLPOP` reads: `<sid>:<n> <token>`, `0` or `T`, and `reap`, `bye`),
/// for the waiting request `eid` (`<sid>:<ctr>`): a value that is no grant
/// record (u64::MAX, which the agent took for `T`: TooManyPermits; a
/// token with a sign, which it took for a grant), a request id with a sign
/// or a leading zero (taken for the waiting one: a grant), one never
/// issued, one of another session, a word, an empty note, bytes that are
/// no UTF-8, a very long note.
fn foreign_notes(eid: &str) -> Vec<(String, Vec<u8>)> {
    let (sid, ctr) = eid.split_once(':').unwrap();
    let mut notes: Vec<Vec<u8>> = [
        format!("{eid} 18446744073709551615"),
        format!("{eid} 9007199254740992"),
        format!("{eid} 007"),
        format!("{eid} -1"),
        format!("{eid} +5"),
        format!("{eid} 1e3"),
        format!("{eid} 1.5"),
        format!("{eid} garbage"),
        format!("{eid} "),
        format!("{eid}  5"),
        format!("{eid} 5 6"),
        format!("{eid} Q"),
        format!("{sid}:+{ctr} 5"),
        format!("{sid}:0{ctr} 5"),
        format!("{sid}:999999 5"),
        format!("{sid}: 5"),
        format!("other:{ctr} 5"),
        eid.to_string(),
        String::new(),
        "garbage".into(),
        "-1".into(),
        "1e3".into(),
        "reap 1".into(),
        " bye".into(),
    ]
    .map(String::into_bytes)
    .into();
    notes.push(b"\xff\xfe 5".to_vec());
    notes.push(format!("{eid} {}", "7".repeat(100_000)).into_bytes());
    notes
        .into_iter()
        .map(|n| {
            let shown = String::from_utf8_lossy(&n[..n.len().min(60)]).into_owned();
            (shown, n)
        })
        .collect()
}

/// Whether the agent of the handle labelled `label` took what was pushed
/// on `note` and is blocked in its `BLPOP` again: everything it read there
/// is dealt with (a blocked client is served as the push runs, so the
/// `BLPOP` seen blocked after the list was found empty is a later one).
fn agent_done_with(s: &Server, note: &str, label: &str) -> bool {
    let mut raw = s.raw();
    let limit = Duration::from_secs(10);
    soon(limit, || {
        redis::cmd("LLEN").arg(note).query::<u64>(&mut raw).unwrap() == 0
    }) && soon(limit, || {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut raw).unwrap();
        list.lines().any(|l| {
            l.contains(&format!(" name={label} "))
                && l.split(' ')
                    .any(|f| f.starts_with("flags=") && f.contains('b'))
        })
    })
}

/// A foreign note on the list of a waiting session, pushed by a raw client
/// to the key its agent's `BLPOP` reads. While the request waits (the
/// permit held by session "v"), the note grants nothing and fails nothing:
/// the handle counts no permit, the waiter still waits, Redis conserves.
/// Then the release of "v" grants the request in the same transaction
/// that replaces its notification by the foreign note: the waiter gets
/// its permit all the same, from its grant record, without waiting for
/// its next heartbeat (a third of its 60 s lease): the foreign note makes
/// the agent run it now. The agent survives every note (it delivers the
/// grant).
#[test]
fn foreign_notes_on_a_notification_list() {
    let s = Server::start();
    for i in 0..foreign_notes("s:1").len() {
        let name = format!("notes-{i}");
        let b = long_lease_waiter(&s, &name, 1);
        let mut v = Virtual::join(&s, &name, 1);
        v.take("v:1", 1);
        let waiter = acquire_in_thread(&b, 1);
        let eid = v.queued();
        let note = v.k.note(eid.split_once(':').unwrap().0);
        let (shown, foreign) = foreign_notes(&eid).swap_remove(i);
        let what = format!("note {shown:?}");
        // While the request waits.
        let _: () = redis::cmd("RPUSH")
            .arg(&note)
            .arg(&foreign)
            .query(&mut s.raw())
            .unwrap();
        if !agent_done_with(&s, &note, "waiter") {
            fail(format!(
                "{what}: the agent never took it, or never waited again"
            ));
            continue;
        }
        if b.held_permits() != 0 {
            fail(format!("{what}: granted by the note"));
            continue;
        }
        if let Ok(got) = waiter.try_recv() {
            fail(format!(
                "{what}: the waiter got {got:?} while the permit was held"
            ));
            continue;
        }
        consistent_with(&what, &b, 1);
        // Its grant, with the foreign note in place of its notification.
        let mut del = redis::cmd("DEL");
        del.arg(&note);
        let mut push = redis::cmd("RPUSH");
        push.arg(&note).arg(&foreign);
        let _: Vec<redis::Value> = redis::pipe()
            .atomic()
            .add_command(v.release_cmd(1))
            .add_command(del)
            .add_command(push)
            .query(&mut v.c)
            .unwrap();
        let got = match waiter.recv_timeout(Duration::from_secs(10)) {
            Ok(got) => got,
            Err(_) => {
                fail(format!(
                    "{what}: the waiter still waits 10 s after its grant (its heartbeat is 20 s on)"
                ));
                continue;
            }
        };
        if !matches!(&got, Ok(p) if p.token() > 0) {
            fail(format!("{what}: the waiter got {got:?}"));
            continue;
        }
        consistent_with(&what, &b, 0);
        drop(got);
        v.end();
        drop(b);
        all_back(&s, &name, 1);
    }
    report();
}

/// The largest token the scripts write (2^53 - 1: `hand.lua` counts in
/// doubles) is a grant wherever the handle reads one: in the notification
/// its agent pops and, the notification lost, in the grant record its
/// heartbeat reads (`note.rs`, by the rule of `hand.lua`'s
/// `grant_record()`). Read as a foreign value it would fail the waiter with
/// WrongType, or leave it to the next heartbeat.
#[test]
fn the_largest_token_the_scripts_write_is_a_grant() {
    const MAX: u64 = (1 << 53) - 1;
    let s = Server::start();
    for lost in [false, true] {
        let name = format!("largest-token-{lost}");
        let a = RedisSemaphore::connect(&s.url(), &name, 1, o()).unwrap();
        let wo = short_lease().own_session(true).label("waiter");
        let b = RedisSemaphore::connect(&s.url(), &name, 1, wo).unwrap();
        let held = a.try_acquire(1).unwrap();
        let bb = b.clone();
        let waiter = std::thread::spawn(move || {
            bb.acquire_timeout(1, Duration::from_secs(10))
                .map(|p| p.token())
        });
        assert!(soon(Duration::from_secs(10), || {
            a.census().is_ok_and(|c| c.queued == 1)
        }));
        if lost {
            lose_notifications(&s, &name, "waiter");
        }
        // The next grant's token: the last one + 1 (above the clock's
        // microseconds, which hand() takes when larger).
        let _: () = redis::cmd("HSET")
            .arg(format!("{{volt-sem:{name}}}:meta"))
            .arg("token")
            .arg(MAX - 1)
            .query(&mut s.raw())
            .unwrap();
        drop(held);
        let got = waiter.join().unwrap();
        assert!(matches!(got, Ok(MAX)), "lost = {lost}: {got:?}");
        assert_conserved(&b);
    }
}
