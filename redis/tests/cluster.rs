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
        let slot: u64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{volt-sem:{name}}}"))
            .query(&mut c.nodes[0].raw())
            .unwrap();
        owners.insert(slot * 3 / 16384);
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
