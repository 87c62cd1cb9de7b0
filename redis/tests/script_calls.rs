//! The Redis commands each script makes on the paths the latency goals
//! are about (docs/benchmarks.md, appendix D): an uncontended acquire and
//! release, a queued acquire, a release that hands its permit on. Every
//! call inside a script costs the server about a microsecond back to back
//! and several after an idle pause, and a hand-off's waiter is woken only
//! once the whole release script has run; so these counts are a budget,
//! and a change that adds a call to one of these paths has to change this
//! test and say why. Counted with `INFO commandstats` (the commands a
//! script makes are counted there one by one), on the scripts driven
//! directly (no agent, no heartbeat in between).

mod support;

use std::collections::BTreeMap;

use redis::Connection;
use support::Server;
use volt_sem_redis::scripts::{Keys, Reply, Scripts, Who};

const LEASE_MS: u64 = 60_000;

fn who<'a>(sid: &'a str, inc: &'a str) -> Who<'a> {
    Who {
        sid,
        inc,
        lease_ms: LEASE_MS,
    }
}

/// The commands Redis ran since the last reset, by name, without the
/// script calls themselves and this test's own `CONFIG`/`INFO`.
fn commands(con: &mut Connection) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let mut out = BTreeMap::new();
    for line in info.lines() {
        let Some(rest) = line.strip_prefix("cmdstat_") else {
            continue;
        };
        let (name, stats) = rest.split_once(':').unwrap();
        if ["eval", "evalsha", "info", "config|resetstat"].contains(&name) {
            continue;
        }
        let calls = stats
            .split(',')
            .find_map(|kv| kv.strip_prefix("calls="))
            .unwrap()
            .parse()
            .unwrap();
        out.insert(name.to_string(), calls);
    }
    out
}

fn reset(con: &mut Connection) {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(con).unwrap();
}

/// `[("time", 1), ...]` as [`commands`] returns it.
fn want(v: &[(&str, u64)]) -> BTreeMap<String, u64> {
    v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

/// A semaphore of `total` with sessions `sids`, registered by the connect
/// script; returns its keys and incarnation.
fn semaphore(
    con: &mut Connection,
    sc: &Scripts,
    name: &str,
    total: u64,
    sids: &[&str],
) -> (Keys, String) {
    let keys = Keys::new("calls", name);
    let mut inc = String::new();
    for sid in sids {
        let r = sc
            .connect(con, &keys, who(sid, &inc), total, "inc-1", "", "", false)
            .unwrap();
        assert_eq!(r.status, "OK");
        inc = r.rest[0].clone();
    }
    (keys, inc)
}

fn ok(r: Reply, status: &str) -> Reply {
    assert_eq!(r.status, status, "{r:?}");
    r
}

/// try_acquire(1) then release(1) with a permit to spare: the release
/// finds permits available, so nobody is queued, and it gives its permit
/// back without looking at the queue (no `ZRANGE`), and leaves the holding
/// at 0 rather than deleting it (no `HDEL`: the field lives as long as the
/// session): 11 commands for the pair (13, then 12 before).
#[test]
fn an_uncontended_acquire_and_release_make_eleven_calls() {
    let s = Server::start();
    let mut con = s.raw();
    let sc = Scripts::new();
    let (keys, inc) = semaphore(&mut con, &sc, "uncontended", 2, &["s1"]);
    reset(&mut con);
    let n = 10;
    for i in 0..n {
        ok(
            sc.acquire(
                &mut con,
                &keys,
                who("s1", &inc),
                &format!("s1:{i}"),
                1,
                false,
            )
            .unwrap(),
            "READY",
        );
        ok(
            sc.release(&mut con, &keys, who("s1", &inc), 1).unwrap(),
            "OK",
        );
    }
    assert_eq!(
        commands(&mut con),
        want(&[
            ("time", 2 * n),
            // One read of the semaphore's hash and one of the session's
            // deadline per script (fast.lua).
            ("hmget", 2 * n),
            ("zscore", 2 * n),
            // acquire: the counters and the holder's inspect record.
            ("hset", 2 * n),
            // acquire: the holding; release: the holding (left at 0),
            // then avail.
            ("hincrby", 3 * n),
        ]),
    );
}

/// A queued acquire reads the semaphore's hash once (fast.lua's read, with
/// the arrival stamp; before, acquire.lua read it a second time), and the
/// release that hands the permit on to it takes the fencing token from
/// that same read instead of a `HGET`: 7 and 16 commands (8 and 16
/// before, then 7 and 17; the releaser's holding is now left at 0, not
/// deleted). The release's two more are the `TYPE`s of the grant records
/// and the inspect records, which a completed hand-off only writes: a key
/// of another type there must fail the script before its first write
/// (head.lua's expect(), tests/wrong_type.rs). The queued acquire checks
/// nothing more: its first write is the queue, and its two records undo it
/// if they fail.
#[test]
fn a_queued_acquire_and_its_hand_off_read_the_counters_once() {
    let s = Server::start();
    let mut con = s.raw();
    let sc = Scripts::new();
    let (keys, inc) = semaphore(&mut con, &sc, "handoff", 1, &["s1", "s2"]);
    ok(
        sc.acquire(&mut con, &keys, who("s1", &inc), "s1:1", 1, false)
            .unwrap(),
        "READY",
    );
    reset(&mut con);
    ok(
        sc.acquire(&mut con, &keys, who("s2", &inc), "s2:1", 1, true)
            .unwrap(),
        "PENDING",
    );
    assert_eq!(
        commands(&mut con),
        want(&[
            ("time", 1),
            ("hmget", 1),
            ("zscore", 1),
            // The counters (avail, seq) and the request's need:got record.
            ("hset", 2),
            // The queue and the session's index of its requests.
            ("zadd", 2),
        ]),
    );
    reset(&mut con);
    let r = ok(
        sc.release(&mut con, &keys, who("s1", &inc), 1).unwrap(),
        "OK",
    );
    // Granted to another session: nothing in the reply for s1 to complete.
    assert!(r.rest.is_empty(), "{r:?}");
    assert_eq!(
        commands(&mut con),
        want(&[
            ("time", 1),
            ("zscore", 1),
            // The grant records and the inspect records, checked before
            // the first write.
            ("type", 2),
            // s1's holding down, s2's up.
            ("hincrby", 2),
            // The request's record (s1's holding is left at 0).
            ("hdel", 1),
            // The counters; the queue's heads (up to eight) and their
            // need:got records (one HMGET), read and checked before the
            // first write (head.lua's garbage()), then used by the hand-off.
            ("hmget", 2),
            ("zrange", 1),
            // s2's holding, checked before the first write: one call more
            // than before that check, so that a value volt-sem never
            // writes there fails the script with nothing changed rather
            // than after the head left the queue (a permit lost).
            ("hget", 1),
            ("zrem", 1),
            // s2's inspect record, the grant record, the token.
            ("hset", 3),
            // s2's notification, and its expiry.
            ("rpush", 1),
            ("pexpire", 1),
        ]),
    );
}
