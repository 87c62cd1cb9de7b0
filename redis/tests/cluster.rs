//! A 3-node local Redis Cluster: FIFO across processes, for semaphores whose
//! slots live on different nodes (all keys of one semaphore share its hash
//! tag, so every script and `BLPOP` goes to the node that owns it).

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use support::*;
use volt_sem_redis::RedisSemaphore;

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

#[test]
fn fifo_across_processes_on_a_cluster() {
    let c = Cluster::start();
    let url = c.url();
    let o = || opts().cluster(true);
    let mut owners = BTreeSet::new();
    for name in ["alpha", "beta", "gamma", "delta"] {
        // Which node owns this semaphore's slot (the test wants several).
        owners.insert(c.third_of(name));
        let me = RedisSemaphore::connect(&url, name, 3, o()).unwrap();
        let held = me.acquire_blocking(3).unwrap();
        let mut a = Worker::spawn_with(&url, name, 3, 10_000, "cluster");
        let mut b = Worker::spawn_with(&url, name, 3, 10_000, "cluster");
        a.send("acquire 3");
        eventually("a queued", Duration::from_secs(10), || {
            me.census().unwrap().queued == 1
        });
        b.send("acquire 1");
        eventually("b queued", Duration::from_secs(10), || {
            me.census().unwrap().queued == 2
        });
        // inspect on the slot's node: this process holds, a then b wait.
        let i = me.inspect().unwrap();
        assert_eq!(i.available + i.held() + i.granted_to_waiters(), 3, "{i:#?}");
        assert_eq!(i.holders.len(), 1, "{i:#?}");
        assert_eq!(
            (i.holders[0].pid, i.holders[0].permits, i.holders[0].token),
            (std::process::id(), 3, Some(held.token()))
        );
        let waiting: Vec<(u32, usize, usize)> = i
            .waiters
            .iter()
            .map(|w| (w.pid, w.permits, w.position))
            .collect();
        assert_eq!(
            waiting,
            [(a.pid() as u32, 3, 0), (b.pid() as u32, 1, 1)],
            "on {name}"
        );
        drop(held);
        let line = a.line();
        assert!(line.starts_with("granted 3 "), "{line}");
        let cs = assert_conserved(&me);
        assert_eq!(
            (cs.queued, cs.held),
            (1, 3),
            "b's acquire(1) overtook on {name}"
        );
        a.send("release 3");
        assert_eq!(a.line(), "released");
        assert!(b.line().starts_with("granted 1 "));
        b.send("release 1");
        assert_eq!(b.line(), "released");
        assert_eq!(assert_conserved(&me).available, 3);
    }
    assert!(owners.len() >= 2, "all names on one node: {owners:?}");
}

/// Moves `slot` from node `from` to node `to` with the manual sequence of
/// `redis-cli --cluster reshard`: `SETSLOT IMPORTING` on the target,
/// `MIGRATING` on the source, `MIGRATE` one key at a time (with a pause
/// between keys, so that clients run against the half-migrated slot), then
/// `SETSLOT NODE` on every master. Returns how many keys moved.
fn migrate_slot(c: &Cluster, slot: u64, from: usize, to: usize, pause: Duration) -> usize {
    let id = |i: usize| -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut c.nodes[i].raw())
            .unwrap()
    };
    let (src, dst) = (id(from), id(to));
    let mut s = c.nodes[from].raw();
    let mut d = c.nodes[to].raw();
    let setslot = |con: &mut redis::Connection, how: &str, node: &str| {
        let _: () = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(how)
            .arg(node)
            .query(con)
            .unwrap();
    };
    setslot(&mut d, "IMPORTING", &src);
    setslot(&mut s, "MIGRATING", &dst);
    let mut moved = 0;
    loop {
        let keys: Vec<String> = redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(1)
            .query(&mut s)
            .unwrap();
        let Some(key) = keys.first() else { break };
        let r: redis::RedisResult<String> = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(c.nodes[to].port)
            .arg(key)
            .arg(0)
            .arg(5000)
            .query(&mut s);
        // NOKEY: the key went (expired, deleted) between the two commands.
        match r {
            Ok(_) => moved += 1,
            Err(e) => panic!("MIGRATE {key}: {e}"),
        }
        std::thread::sleep(pause);
        assert!(moved < 10_000, "keys keep appearing in slot {slot}");
    }
    setslot(&mut d, "NODE", &dst);
    setslot(&mut s, "NODE", &dst);
    for (i, n) in c.nodes.iter().enumerate() {
        if i != from && i != to {
            setslot(&mut n.raw(), "NODE", &dst);
        }
    }
    moved
}

/// Issue 32, item 1: a slot migrated under load (threads looping
/// acquire/hold/release on a limit of 3) must neither lose a permit nor
/// stop the grants. Before the fix, the scripts ran against the
/// half-migrated slot: a key a script emptied mid-run (its queue, say) is
/// a "non local key" for the rest of that run, so the script stopped half
/// way with an error and permits vanished (census: available 0, held 0,
/// queued n, for ever).
#[test]
fn reshard_under_load_keeps_every_permit() {
    use std::time::Instant;

    let c = Cluster::start();
    let url = c.url();
    let name = "load";
    let slot: u64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(format!("{{volt-sem:{name}}}"))
        .query(&mut c.nodes[0].raw())
        .unwrap();
    // `redis-cli --cluster create` gives each of 3 masters a third of the slots.
    let from = c
        .nodes
        .iter()
        .position(|n| {
            let keys: redis::RedisResult<i64> = redis::cmd("CLUSTER")
                .arg("COUNTKEYSINSLOT")
                .arg(slot)
                .query(&mut n.raw());
            let mine: String = redis::cmd("CLUSTER")
                .arg("NODES")
                .query(&mut n.raw())
                .unwrap();
            keys.is_ok()
                && mine
                    .lines()
                    .find(|l| l.contains("myself"))
                    .is_some_and(|l| {
                        l.split_whitespace().skip(8).any(|r| {
                            let (a, b) = r.split_once('-').unwrap_or((r, r));
                            let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
                            (a..=b).contains(&slot)
                        })
                    })
        })
        .expect("the slot's owner");
    let to = (from + 1) % 3;
    let o = || opts().cluster(true).own_session(true);
    let me = RedisSemaphore::connect(&url, name, 3, o()).unwrap();

    let load = Load::start(&url, name, 6, o, Duration::from_secs(10), |_| true);
    eventually("grants under load", Duration::from_secs(10), || {
        load.grants() > 50
    });
    // Three migrations (there, back, there again), each under load: each
    // waits for grants to resume after the one before (a client that saw
    // TRYAGAIN may sleep through a whole migration otherwise).
    let started = Instant::now();
    let mut moved = Vec::new();
    for (a, b) in [(from, to), (to, from), (from, to)] {
        moved.push(migrate_slot(&c, slot, a, b, Duration::from_millis(20)));
        let after = load.grants();
        eventually("grants after the reshard", Duration::from_secs(15), || {
            load.grants() > after + 20
        });
    }
    let ended = Instant::now();
    assert!(moved.iter().all(|&m| m >= 3), "keys moved: {moved:?}");
    // The longest time without a grant around the migrations (reported
    // for the README, not asserted).
    let pause = load.longest_pause(started, ended);
    eprintln!(
        "reshard: {moved:?} keys moved, all in {:?}; longest pause between grants {pause:?}",
        ended - started
    );
    let errors = load.stop();
    let cs = assert_conserved(&me);
    assert_eq!(cs.available, 3, "permits lost: {cs:?}");
    assert!(errors.is_empty(), "errors during the reshard: {errors:?}");
}

/// The `cluster` option on a standalone server is refused with the server's
/// own error (a standalone server never redirects, so without the check the
/// option would silently act as a plain connection).
#[test]
fn the_cluster_option_on_a_standalone_server_is_refused() {
    let s = Server::start();
    let e = RedisSemaphore::connect(&s.url(), "standalone", 1, opts().cluster(true)).unwrap_err();
    assert!(
        matches!(&e, volt_sem_redis::Error::Redis(m) if m.contains("cluster support disabled")),
        "{e:?}"
    );
}
