//! A model check of the guarantee behind `Error::WrongType`: a script that
//! fails on a key of another type fails before its first write, or undoes
//! the one write it made first (head.lua's `expect()`), so that Redis holds
//! exactly what it held before the call, byte for byte.
//!
//! `wrong_type.rs` checks each path end to end through the public API
//! (conservation, the handles' counts); a census cannot see every half-made
//! change, though: a queue entry's record left without its queue entry, or
//! a holding left at "0" instead of removed, keeps the sums right. Here the
//! scripts are driven directly, many virtual sessions on one semaphore, in
//! random order (acquires queued or tried, releases, cancels, heartbeats,
//! close, reopen, resizes, ends, reconnects, inspects, and sessions left
//! dead as a crashed client leaves them), with a string planted on one of
//! the semaphore's keys (or a session's notification list) before one call
//! in two. Every call that fails with `WrongType` must leave every key
//! as `DUMP` saw it before the call; no call may fail otherwise; and the
//! census is conserved after every step, once the planted key is gone.
//! The same model runs with Redis out of memory (`maxmemory`) during one
//! call in two instead: a script refused with `OOM` must not have written
//! either (Redis refuses only a script's first write that may grow memory;
//! once a script wrote, it lets it finish).
//!
//! The second test builds the fast paths' states one by one (the random
//! model reaches a fast release that completes a hand-off only now and
//! then) and plants each key in turn.
//!
//! Each of these breaks one of the two tests (checked when they were
//! written): an `expect()` taken out of prelude.lua's `guard()` or of
//! release_handoff.lua, the `HDEL` taken out of the queued acquire's undo
//! (acquire.lua), the fast acquire's undo leaving the holding at "0"
//! instead of removing it (acquire_fast.lua, when a holding that came back
//! to 0 was removed). Since a live session's holding is kept at 0 rather
//! than removed (release_fast.lua), the reverse: that undo removing the
//! holding instead of restoring its 0 (checked: both tests fail).

mod support;

use redis::Connection;
use support::Server;
use volt_sem_redis::scripts::{CallError, Keys, Reply, Scripts, Who};
use volt_sem_redis::Error;

const SIDS: [&str; 4] = ["s1", "s2", "s3", "s4"];
/// The keys a script may write, besides `meta` (which every script reads
/// first, with its type).
const KEYS: [&str; 7] = [
    "queue", "entries", "sessions", "held", "grants", "own", "info",
];

fn who<'a>(sid: &'a str, inc: &'a str) -> Who<'a> {
    Who {
        sid,
        inc,
        lease_ms: 60_000,
    }
}

/// xorshift64: a fixed sequence per seed.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `DUMP` of every key of the semaphore and every session's notification
/// list (`None`: absent).
fn snapshot(con: &mut Connection, keys: &Keys) -> Vec<Option<Vec<u8>>> {
    let mut all: Vec<String> = keys.all().to_vec();
    all.extend(SIDS.iter().map(|s| keys.note(s)));
    all.iter()
        .map(|k| redis::cmd("DUMP").arg(k).query(con).unwrap())
        .collect()
}

/// A string on `key` until dropped (then what was there is back), set
/// through a connection of its own.
struct Planted {
    con: Connection,
    key: String,
    saved: Option<Vec<u8>>,
}

impl Planted {
    fn new(s: &Server, key: String) -> Self {
        let mut con = s.raw();
        let saved: Option<Vec<u8>> = redis::cmd("DUMP").arg(&key).query(&mut con).unwrap();
        let _: () = redis::cmd("DEL").arg(&key).query(&mut con).unwrap();
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg("planted")
            .query(&mut con)
            .unwrap();
        Planted { con, key, saved }
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _: () = redis::cmd("DEL")
            .arg(&self.key)
            .query(&mut self.con)
            .unwrap();
        if let Some(d) = &self.saved {
            let _: () = redis::cmd("RESTORE")
                .arg(&self.key)
                .arg(0)
                .arg(d.as_slice())
                .query(&mut self.con)
                .unwrap();
        }
    }
}

/// One random call of session `sid`.
fn call(
    rng: &mut Rng,
    con: &mut Connection,
    sc: &Scripts,
    keys: &Keys,
    sid: &str,
    inc: &str,
    eids: &mut Vec<String>,
) -> Result<Reply, CallError> {
    let w = who(sid, inc);
    let some_eids = |rng: &mut Rng, eids: &[String]| -> Vec<String> {
        eids.iter().filter(|_| rng.below(3) == 0).cloned().collect()
    };
    match rng.below(15) {
        0..=2 => {
            let eid = format!("{sid}:{}", eids.len() + 1);
            eids.push(eid.clone());
            let n = 1 + rng.below(3) as u64;
            sc.acquire(con, keys, w, &eid, n, rng.below(3) != 0)
        }
        3..=6 => sc.release(con, keys, w, 1 + rng.below(2) as u64),
        7 => {
            let eid = match eids.len() {
                0 => format!("{sid}:0"),
                k => eids[rng.below(k)].clone(),
            };
            sc.cancel(con, keys, w, &eid)
        }
        8 => {
            let acked = some_eids(rng, eids);
            sc.heartbeat(con, keys, w, &acked, eids)
        }
        9 => sc.close(con, keys, w),
        10 => sc.reopen(con, keys, w),
        11 => sc.set_total(con, keys, w, 2 + rng.below(4) as u64),
        12 => sc.end(con, keys, w),
        13 => {
            let mode = if rng.below(2) == 0 { "adopt" } else { "resize" };
            sc.connect(
                con,
                keys,
                w,
                2 + rng.below(4) as u64,
                "inc-1",
                "",
                mode,
                false,
            )
        }
        _ => sc.inspect(con, keys, w),
    }
}

/// `maxmemory` at 1 byte (no eviction) until dropped: Redis then refuses a
/// script's first command that may grow memory (`OOM`), and only that one
/// (once a script wrote, it runs to its end).
struct OutOfMemory(Connection);

impl OutOfMemory {
    fn new(s: &Server) -> Self {
        let mut con = s.raw();
        for (k, v) in [("maxmemory-policy", "noeviction"), ("maxmemory", "1")] {
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg(k)
                .arg(v)
                .query(&mut con)
                .unwrap();
        }
        OutOfMemory(con)
    }
}

impl Drop for OutOfMemory {
    fn drop(&mut self) {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg("0")
            .query(&mut self.0)
            .unwrap();
    }
}

#[test]
fn a_script_failed_by_a_key_of_another_type_leaves_every_key_as_it_was() {
    let checked = model(30, false);
    eprintln!("{checked} calls failed with WrongType, each leaving Redis as it was");
    // The planted keys did reach the scripts.
    assert!(checked > 100, "{checked}");
}

/// The same model with Redis out of memory (`maxmemory`) instead of a key
/// planted, during one call in two: a call refused with `OOM` must leave
/// every key as it was too (Redis refuses only a script's first write).
#[test]
fn a_script_refused_for_memory_leaves_every_key_as_it_was() {
    let checked = model(15, true);
    eprintln!("{checked} calls refused with OOM, each leaving Redis as it was");
    assert!(checked > 100, "{checked}");
}

/// Runs the model for `seeds` seeds, with a key planted (`oom` false) or
/// Redis out of memory (`oom` true) during one call in two; returns how
/// many calls failed for it.
fn model(seeds: u64, oom: bool) -> usize {
    let s = Server::start();
    let mut con = s.raw();
    let sc = Scripts::new();
    let mut checked = 0;
    for seed in 1..=seeds {
        let name = format!("m{seed}");
        let keys = Keys::new("model", &name);
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut inc = String::new();
        for sid in SIDS {
            let r = sc
                .connect(&mut con, &keys, who(sid, &inc), 4, "inc-1", "", "", false)
                .unwrap();
            inc = r.rest[0].clone();
        }
        let mut eids = Vec::new();
        for step in 0..150 {
            let sid = SIDS[rng.below(SIDS.len())];
            if rng.below(20) == 0 {
                // A session whose lease passed, its client gone: the next
                // script to reap finds it (META.reap low, as connect leaves
                // it for a session with an earlier deadline).
                let dead = SIDS[rng.below(SIDS.len())];
                let _: () = redis::cmd("ZADD")
                    .arg(&keys.all()[3])
                    .arg("XX")
                    .arg(1)
                    .arg(dead)
                    .query(&mut con)
                    .unwrap();
                let _: () = redis::cmd("HSET")
                    .arg(&keys.all()[0])
                    .arg("reap")
                    .arg(0)
                    .query(&mut con)
                    .unwrap();
            }
            let target = match rng.below(8) {
                0 => Some(keys.note(SIDS[rng.below(SIDS.len())])),
                1..=3 => Some(format!("{{model:{name}}}:{}", KEYS[rng.below(KEYS.len())])),
                _ => None,
            };
            let (r, changed) = {
                let _planted = target.clone().filter(|_| !oom).map(|k| Planted::new(&s, k));
                let _oom = target
                    .as_ref()
                    .filter(|_| oom)
                    .map(|_| OutOfMemory::new(&s));
                let before = snapshot(&mut con, &keys);
                let r = call(&mut rng, &mut con, &sc, &keys, sid, &inc, &mut eids);
                (r, before != snapshot(&mut con, &keys))
            };
            let at = if oom {
                format!(
                    "seed {seed}, step {step}, out of memory: {}",
                    target.is_some()
                )
            } else {
                format!("seed {seed}, step {step}, {target:?} planted")
            };
            match &r {
                Ok(_) => {}
                Err(CallError::NotRun(Error::WrongType(_))) if !oom => {
                    checked += 1;
                    assert!(!changed, "{at}: the call failed, and changed Redis: {r:?}");
                }
                Err(CallError::NotRun(Error::OutOfMemory(m))) if oom && m.contains("OOM") => {
                    checked += 1;
                    assert!(!changed, "{at}: the call failed, and changed Redis: {r:?}");
                }
                Err(e) => panic!("{at}: {e:?}"),
            }
            let c = sc.census(&mut con, &keys, who(SIDS[0], &inc)).unwrap();
            if c.status == "OK" {
                // total, avail, held, partial, queued, sessions, closed,
                // token, debt: total + debt = avail + held + partial.
                let v: Vec<u64> = c.rest.iter().map(|x| x.parse().unwrap()).collect();
                assert_eq!(v[0] + v[8], v[1] + v[2] + v[3], "{at}: {r:?}, then {c:?}");
            }
        }
    }
    checked
}

/// The fast paths' calls, each from a state built for it (the random model
/// above reaches a release that completes a hand-off on the fast path only
/// now and then): with every key planted in turn, each call either runs as
/// it would without the planted key or fails with `WrongType` and leaves
/// every key as it was. `setup` runs with nothing planted; `last` is the
/// call checked.
#[test]
fn the_fast_paths_leave_every_key_as_it_was_when_they_fail() {
    type Step = fn(&Scripts, &mut Connection, &Keys, &str) -> Result<Reply, CallError>;
    let cases: [(&str, Vec<Step>, Step); 7] = [
        ("an uncontended acquire", vec![], |sc, con, keys, inc| {
            sc.acquire(con, keys, who("s1", inc), "s1:9", 1, true)
        }),
        (
            "a queued acquire",
            vec![|sc, con, keys, inc| sc.acquire(con, keys, who("s1", inc), "s1:1", 2, true)],
            |sc, con, keys, inc| sc.acquire(con, keys, who("s2", inc), "s2:9", 1, true),
        ),
        (
            "a release that completes the head",
            vec![
                |sc, con, keys, inc| sc.acquire(con, keys, who("s1", inc), "s1:1", 2, true),
                |sc, con, keys, inc| sc.acquire(con, keys, who("s2", inc), "s2:1", 1, true),
            ],
            |sc, con, keys, inc| sc.release(con, keys, who("s1", inc), 1),
        ),
        (
            "a release that completes two heads",
            vec![
                |sc, con, keys, inc| sc.acquire(con, keys, who("s1", inc), "s1:1", 2, true),
                |sc, con, keys, inc| sc.acquire(con, keys, who("s2", inc), "s2:1", 1, true),
                |sc, con, keys, inc| sc.acquire(con, keys, who("s3", inc), "s3:1", 1, true),
            ],
            |sc, con, keys, inc| sc.release(con, keys, who("s1", inc), 2),
        ),
        (
            "a release that completes its own session's request",
            vec![
                |sc, con, keys, inc| sc.acquire(con, keys, who("s1", inc), "s1:1", 2, true),
                |sc, con, keys, inc| sc.acquire(con, keys, who("s1", inc), "s1:2", 1, true),
            ],
            |sc, con, keys, inc| sc.release(con, keys, who("s1", inc), 1),
        ),
        (
            "a release that makes a partial grant",
            vec![
                |sc, con, keys, inc| sc.acquire(con, keys, who("s1", inc), "s1:1", 2, true),
                |sc, con, keys, inc| sc.acquire(con, keys, who("s2", inc), "s2:1", 2, true),
            ],
            |sc, con, keys, inc| sc.release(con, keys, who("s1", inc), 1),
        ),
        (
            "a release that pays a debt, then completes the head",
            vec![
                |sc, con, keys, inc| sc.acquire(con, keys, who("s1", inc), "s1:1", 2, true),
                |sc, con, keys, inc| sc.set_total(con, keys, who("s1", inc), 1),
                |sc, con, keys, inc| sc.acquire(con, keys, who("s2", inc), "s2:1", 1, true),
            ],
            |sc, con, keys, inc| sc.release(con, keys, who("s1", inc), 2),
        ),
    ];
    let s = Server::start();
    let mut con = s.raw();
    let sc = Scripts::new();
    let mut failed = 0;
    for (i, (what, setup, last)) in cases.iter().enumerate() {
        let targets = KEYS
            .iter()
            .map(|k| Some(k.to_string()))
            .chain([Some("note".to_string()), None]);
        for (j, target) in targets.enumerate() {
            let name = format!("fast-{i}-{j}");
            let keys = Keys::new("model", &name);
            let mut inc = String::new();
            for sid in &SIDS[..3] {
                let r = sc
                    .connect(&mut con, &keys, who(sid, &inc), 2, "inc-1", "", "", false)
                    .unwrap();
                inc = r.rest[0].clone();
            }
            for step in setup {
                let r = step(&sc, &mut con, &keys, &inc).unwrap();
                assert!(
                    ["READY", "PENDING", "OK"].contains(&r.status.as_str()),
                    "{what}: {r:?}"
                );
            }
            let key = target.as_ref().map(|k| match k.as_str() {
                "note" => keys.note("s2"),
                k => format!("{{model:{name}}}:{k}"),
            });
            let (r, changed) = {
                let _planted = key.clone().map(|k| Planted::new(&s, k));
                let before = snapshot(&mut con, &keys);
                let r = last(&sc, &mut con, &keys, &inc);
                (r, before != snapshot(&mut con, &keys))
            };
            match &r {
                Ok(r) => assert!(
                    ["READY", "PENDING", "OK"].contains(&r.status.as_str()),
                    "{what}, {key:?} planted: {r:?}"
                ),
                Err(CallError::NotRun(Error::WrongType(_))) => {
                    failed += 1;
                    assert!(
                        !changed,
                        "{what}, {key:?} planted: failed, and changed Redis: {r:?}"
                    );
                }
                Err(e) => panic!("{what}, {key:?} planted: {e:?}"),
            }
            if key.is_none() {
                assert!(r.is_ok(), "{what}: {r:?}");
            }
        }
    }
    eprintln!("{failed} fast calls failed with WrongType, each leaving Redis as it was");
}
