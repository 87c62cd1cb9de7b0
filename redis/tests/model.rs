//! Randomized model check of the Lua scripts, run on a real redis-server,
//! against a strict-FIFO reference written differently: a pool of free
//! permits and a queue of requests, where the head is granted as soon as the
//! pool covers it (the scripts' partial grants are an implementation detail:
//! `avail + partial grants == pool`). Random operations from several
//! sessions (acquire, try, release, over-release, cancel, heartbeat, close,
//! new sessions, and the expiry of a holder's or a waiter's session
//! mid-sequence) are applied to both, and after each one the replies, the
//! notifications sent, the queue order, the per-session holdings, the pool
//! and the fencing tokens must agree.

mod support;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use redis::Connection;
use support::{Rng, Server};
use volt_sem_redis::scripts::{Keys, Reply, Scripts, Who};

const LEASE_MS: u64 = 60_000;

#[derive(Default)]
struct Reference {
    total: u64,
    pool: u64,
    closed: bool,
    /// (eid, session, need), FIFO.
    queue: VecDeque<(String, String, u64)>,
    held: BTreeMap<String, u64>,
    live: BTreeSet<String>,
    /// eids granted (or closed) since the last check: the expected notifications.
    notes: BTreeMap<String, BTreeSet<String>>,
    /// Uncollected grant records: eid -> closed?
    grants: BTreeMap<String, bool>,
}

impl Reference {
    fn serve(&mut self) {
        while let Some((eid, sid, need)) = self.queue.front().cloned() {
            if self.pool < need {
                break;
            }
            self.pool -= need;
            self.queue.pop_front();
            *self.held.entry(sid.clone()).or_default() += need;
            self.grants.insert(eid.clone(), false);
            self.notes.entry(sid).or_default().insert(eid);
        }
    }
    fn drop_session(&mut self, sid: &str) {
        self.live.remove(sid);
        self.pool += self.held.remove(sid).unwrap_or(0);
        self.queue.retain(|(_, s, _)| s != sid);
        self.grants
            .retain(|e, _| !e.starts_with(&format!("{sid}:")));
        self.notes.remove(sid);
        self.serve();
    }
}

struct Harness {
    con: Connection,
    scripts: Scripts,
    keys: Keys,
    inc: String,
    r: Reference,
    last_token: u64,
    ctr: u64,
}

fn who<'a>(sid: &'a str, inc: &'a str) -> Who<'a> {
    Who {
        sid,
        inc,
        lease_ms: LEASE_MS,
    }
}

impl Harness {
    fn call(&mut self, f: impl FnOnce(&Scripts, &mut Connection, &Keys) -> Reply) -> Reply {
        f(&self.scripts, &mut self.con, &self.keys)
    }

    fn token(&mut self, t: u64) {
        assert!(
            t > self.last_token,
            "token {t} not above {}",
            self.last_token
        );
        self.last_token = t;
    }

    /// inspect.lua's snapshot (run right after `check`'s reads, nothing in
    /// between) lists the same holdings, and the queue in the same order,
    /// each under the label its session recorded at connect.
    fn check_inspect(
        &mut self,
        step: usize,
        held: &BTreeMap<String, u64>,
        queue: &[String],
        entries: &BTreeMap<String, String>,
    ) {
        let inc = self.inc.clone();
        let r = self.call(|sc, c, k| sc.inspect(c, k, who("", &inc)).unwrap());
        assert_eq!(r.status, "OK", "inspect, step {step}");
        let label_sid = |info: &str| {
            let label = info.split(' ').nth(1).unwrap();
            label.strip_prefix("label-").unwrap().to_string()
        };
        let n = |i: usize| r.rest[i].parse::<u64>().unwrap();
        assert_eq!(n(0), self.r.total, "inspect total, step {step}");
        let mut at = 4;
        let mut holders = BTreeMap::new();
        for _ in 0..n(3) {
            holders.insert(label_sid(&r.rest[at]), n(at + 1));
            at += 5;
        }
        assert_eq!(&holders, held, "inspect holders, step {step}");
        let waiters = n(at) as usize;
        assert_eq!(waiters, queue.len(), "inspect queue length, step {step}");
        at += 1;
        for eid in queue {
            assert_eq!(
                format!("{}:", label_sid(&r.rest[at])),
                eid[..eid.find(':').unwrap() + 1],
                "inspect queue order, step {step}"
            );
            assert_eq!(
                format!("{}:{}", r.rest[at + 1], r.rest[at + 2]),
                entries[eid],
                "inspect request, step {step}"
            );
            at += 4;
        }
        let sum: u64 = holders.values().sum::<u64>() + n(1);
        let partial: u64 = (0..waiters).map(|i| n(at - 4 * waiters + 4 * i + 2)).sum();
        assert_eq!(
            sum + partial,
            self.r.total,
            "inspect conservation, step {step}"
        );
    }

    /// Compares everything observable with the reference.
    fn check(&mut self, step: usize) {
        let k = self.keys.all().to_vec();
        // One pipeline (a consistent snapshot: nothing else runs meanwhile).
        #[allow(clippy::type_complexity)]
        let (avail, queue, entries, held, grants, sessions): (
            u64,
            Vec<String>,
            BTreeMap<String, String>,
            BTreeMap<String, u64>,
            BTreeMap<String, String>,
            BTreeSet<String>,
        ) = redis::pipe()
            .cmd("HGET")
            .arg(&k[0])
            .arg("avail")
            .cmd("ZRANGE")
            .arg(&k[1])
            .arg(0)
            .arg(-1)
            .cmd("HGETALL")
            .arg(&k[2])
            .cmd("HGETALL")
            .arg(&k[4])
            .cmd("HGETALL")
            .arg(&k[5])
            .cmd("ZRANGE")
            .arg(&k[3])
            .arg(0)
            .arg(-1)
            .query(&mut self.con)
            .unwrap();
        // A live session's holding stays at 0 when it holds nothing (the
        // field lives as long as the session: release_fast.lua); compared
        // as the holdings above 0.
        assert!(
            held.keys().all(|sid| sessions.contains(sid)),
            "a holding of a session that is gone, step {step}"
        );
        let held: BTreeMap<String, u64> = held.into_iter().filter(|(_, v)| *v > 0).collect();
        let rq: Vec<String> = self.r.queue.iter().map(|q| q.0.clone()).collect();
        assert_eq!(queue, rq, "queue order, step {step}");
        let mut partial = 0;
        for (i, eid) in queue.iter().enumerate() {
            let (need, got) = entries[eid].split_once(':').unwrap();
            let (need, got): (u64, u64) = (need.parse().unwrap(), got.parse().unwrap());
            assert_eq!(need, self.r.queue[i].2, "request size, step {step}");
            assert!(got < need, "a complete request left queued, step {step}");
            assert!(
                i == 0 || got == 0,
                "a partial grant behind the head, step {step}"
            );
            partial += got;
        }
        assert_eq!(entries.len(), queue.len(), "stray entries, step {step}");
        assert!(
            queue.is_empty() || avail == 0,
            "floating permits while queued, step {step}"
        );
        assert_eq!(avail + partial, self.r.pool, "pool, step {step}");
        let rheld: BTreeMap<String, u64> = self
            .r
            .held
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        assert_eq!(held, rheld, "holdings, step {step}");
        assert_eq!(
            avail + partial + held.values().sum::<u64>(),
            self.r.total,
            "conservation, step {step}"
        );
        assert_eq!(sessions, self.r.live, "sessions, step {step}");
        self.check_inspect(step, &held, &queue, &entries);
        let gk: BTreeSet<&String> = grants.keys().collect();
        let rk: BTreeSet<&String> = self.r.grants.keys().collect();
        assert_eq!(gk, rk, "grant records, step {step}");
        // Notifications: exactly the requests completed, each once, with
        // the recorded token, tokens increasing in grant order.
        let notes = std::mem::take(&mut self.r.notes);
        // Grants of one step may go to several sessions: tokens are checked
        // in grant (= token) order across all of them.
        let mut tokens = Vec::new();
        let mut all_sids: BTreeSet<String> = self.r.live.clone();
        all_sids.extend(notes.keys().cloned());
        for sid in all_sids {
            let key = self.keys.note(&sid);
            let (got, _): (Vec<String>, u64) = redis::pipe()
                .cmd("LRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .cmd("DEL")
                .arg(&key)
                .query(&mut self.con)
                .unwrap();
            let mut eids = BTreeSet::new();
            for m in got {
                let (eid, tok) = m.split_once(' ').unwrap();
                let tok: u64 = tok.parse().unwrap();
                if tok != 0 {
                    tokens.push(tok);
                    assert_eq!(grants[eid], tok.to_string(), "grant record, step {step}");
                }
                assert!(eids.insert(eid.to_string()), "notified twice, step {step}");
            }
            let want = notes.get(&sid).cloned().unwrap_or_default();
            assert_eq!(eids, want, "notifications of {sid}, step {step}");
        }
        tokens.sort_unstable();
        for t in tokens {
            self.token(t);
        }
    }
}

fn run(seed: u64, total: u64, steps: usize) {
    let s = Server::start();
    let mut rng = Rng::new(seed);
    let keys = Keys::new("model", &format!("m{seed}"));
    let mut h = Harness {
        con: s.raw(),
        scripts: Scripts::new(),
        keys,
        inc: String::new(),
        r: Reference {
            total,
            pool: total,
            ..Default::default()
        },
        last_token: 0,
        ctr: 0,
    };
    let mut sids: Vec<String> = Vec::new();
    let mut next_sid = 0;
    let new_session = |h: &mut Harness, next_sid: &mut u64, sids: &mut Vec<String>| {
        *next_sid += 1;
        let sid = format!("s{:04}", *next_sid);
        let inc = h.inc.clone();
        let r = h.call(|sc, c, k| {
            sc.connect(
                c,
                k,
                who(&sid, &inc),
                total,
                "inc-1",
                &format!("7 label-{sid} model host"),
                "",
                false,
            )
            .unwrap()
        });
        assert_eq!(r.status, "OK");
        h.inc = r.rest[0].clone();
        h.r.live.insert(sid.clone());
        sids.push(sid);
    };
    for _ in 0..3 {
        new_session(&mut h, &mut next_sid, &mut sids);
    }
    for step in 0..steps {
        let sid = sids[rng.below(sids.len() as u64) as usize].clone();
        let alive = h.r.live.contains(&sid);
        let inc = h.inc.clone();
        let op = rng.below(100);
        match op {
            // acquire (queue) or try
            0..=39 => {
                let queue = op < 30;
                let n = 1 + rng.below(total + 1); // sometimes total + 1
                h.ctr += 1;
                let eid = format!("{sid}:{}", h.ctr);
                let r =
                    h.call(|sc, c, k| sc.acquire(c, k, who(&sid, &inc), &eid, n, queue).unwrap());
                let want = if !alive {
                    "EXPIRED"
                } else if h.r.closed {
                    "CLOSED"
                } else if n > total {
                    "TOOMANY"
                } else if h.r.queue.is_empty() && h.r.pool >= n {
                    "READY"
                } else if queue {
                    "PENDING"
                } else {
                    "NOPERMITS"
                };
                assert_eq!(r.status, want, "acquire {n} step {step}");
                match want {
                    "READY" => {
                        h.r.pool -= n;
                        *h.r.held.entry(sid.clone()).or_default() += n;
                        let t = r.int(0).unwrap();
                        h.token(t);
                    }
                    "PENDING" => h.r.queue.push_back((eid, sid.clone(), n)),
                    _ => {}
                }
            }
            // release (sometimes more than held)
            40..=64 => {
                let held = h.r.held.get(&sid).copied().unwrap_or(0);
                let n = if held == 0 || rng.below(8) == 0 {
                    held + 1
                } else {
                    1 + rng.below(held)
                };
                let r = h.call(|sc, c, k| sc.release(c, k, who(&sid, &inc), n).unwrap());
                if !alive {
                    assert_eq!(r.status, "EXPIRED", "step {step}");
                } else if n > held {
                    assert_eq!(
                        (r.status.as_str(), r.int(0).unwrap()),
                        ("NOTHELD", held),
                        "step {step}"
                    );
                } else {
                    assert_eq!(r.status, "OK", "step {step}");
                    *h.r.held.get_mut(&sid).unwrap() -= n;
                    h.r.pool += n;
                    h.r.serve();
                }
            }
            // cancel one of this session's queued requests (or a granted one)
            65..=79 => {
                let mine: Vec<String> =
                    h.r.queue
                        .iter()
                        .filter(|q| q.1 == sid)
                        .map(|q| q.0.clone())
                        .chain(
                            h.r.grants
                                .keys()
                                .filter(|e| e.starts_with(&format!("{sid}:")))
                                .cloned(),
                        )
                        .collect();
                let Some(eid) =
                    (!mine.is_empty()).then(|| mine[rng.below(mine.len() as u64) as usize].clone())
                else {
                    continue;
                };
                let head_pool = h.r.pool;
                let pos = h.r.queue.iter().position(|q| q.0 == eid);
                let r = h.call(|sc, c, k| sc.cancel(c, k, who(&sid, &inc), &eid).unwrap());
                match pos {
                    Some(i) => {
                        assert_eq!(r.status, "CANCELLED", "step {step}");
                        // The whole pool sits at the head as its partial grant.
                        let want = if i == 0 { head_pool } else { 0 };
                        assert_eq!(
                            r.int(0).unwrap(),
                            want,
                            "cancel returns the partial grant, step {step}"
                        );
                        h.r.queue.remove(i);
                        h.r.serve();
                    }
                    None => {
                        let closed = h.r.grants.remove(&eid).unwrap();
                        if closed {
                            assert_eq!(r.status, "CLOSED", "step {step}");
                        } else {
                            // Collected by the cancel: still held (it owns them).
                            assert_eq!(r.status, "GRANTED", "step {step}");
                        }
                    }
                }
            }
            // heartbeat: ack this session's grant records, query its queue entries
            80..=87 => {
                let pre = format!("{sid}:");
                let acked: Vec<String> =
                    h.r.grants
                        .keys()
                        .filter(|e| e.starts_with(&pre))
                        .cloned()
                        .collect();
                let query: Vec<String> =
                    h.r.queue
                        .iter()
                        .filter(|q| q.1 == sid)
                        .map(|q| q.0.clone())
                        .collect();
                let r =
                    h.call(|sc, c, k| sc.heartbeat(c, k, who(&sid, &inc), &acked, &query).unwrap());
                if !alive {
                    assert_eq!(r.status, "EXPIRED");
                } else {
                    assert_eq!(r.status, "OK");
                    assert!(r.rest.iter().all(|x| x == "Q"), "step {step}: {r:?}");
                    assert_eq!(r.rest.len(), query.len());
                    for e in acked {
                        h.r.grants.remove(&e);
                    }
                }
            }
            // expiry of a session mid-sequence (a holder, a waiter or both)
            88..=93 => {
                if !alive {
                    continue;
                }
                let _: () = redis::cmd("ZADD")
                    .arg(&h.keys.all()[3])
                    .arg(1)
                    .arg(&sid)
                    .query(&mut h.con)
                    .unwrap();
                // Reaped by the next script of anyone: here a census.
                let r = h.call(|sc, c, k| sc.census(c, k, who("", &inc)).unwrap());
                assert_eq!(r.status, "OK");
                h.r.drop_session(&sid);
            }
            // a new session
            94..=97 => {
                if h.r.live.len() < 8 {
                    new_session(&mut h, &mut next_sid, &mut sids);
                }
            }
            // close (rare), then a fresh semaphore would be needed: only late
            _ => {
                if step < steps * 9 / 10 || !alive {
                    continue;
                }
                let r = h.call(|sc, c, k| sc.close(c, k, who(&sid, &inc)).unwrap());
                assert_eq!(r.status, "OK");
                h.r.closed = true;
                for (eid, s, _) in std::mem::take(&mut h.r.queue) {
                    h.r.grants.insert(eid.clone(), true);
                    h.r.notes.entry(s).or_default().insert(eid);
                }
            }
        }
        h.check(step);
    }
}

#[test]
fn scripts_match_a_strict_fifo_reference() {
    for (seed, total) in [(1, 1), (2, 3), (3, 4), (4, 7), (5, 10)] {
        run(seed, total, 1000);
    }
}
