//! Issue 32, item 4: a Redis Cluster master failover under load. The
//! master of the semaphore's slot is killed (SIGKILL) while threads loop
//! acquire/hold/release; its replica is promoted and the clients must
//! follow it: grants resume, and every failed call is a typed error (the
//! session survives, or is given up and a new one registered). Twice in a
//! row: the killed master comes back as a replica of the promoted one, which
//! is killed in turn.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{Error, RedisSemaphore};

#[test]
fn grants_resume_after_master_failovers() {
    let mut c = Cluster::start_with_replicas(1);
    // The masters as seeds, as a user would list them (the replicas are
    // learnt from the cluster).
    let url = (0..c.nodes.len())
        .filter(|&i| {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut c.nodes[i].raw())
                .unwrap();
            info.contains("role:master")
        })
        .map(|i| c.nodes[i].url())
        .collect::<Vec<_>>()
        .join(",");
    let name = "fo";
    let slot: u64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(format!("{{volt-sem:{name}}}"))
        .query(&mut c.nodes[0].raw())
        .unwrap();
    let o = || {
        opts()
            .cluster(true)
            .own_session(true)
            .lease(Duration::from_millis(3000))
            .command_timeout(Duration::from_secs(2))
    };
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicU64::new(0));
    let times = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (url, stop, grants, errors, times) = (
                url.clone(),
                stop.clone(),
                grants.clone(),
                errors.clone(),
                times.clone(),
            );
            std::thread::spawn(move || {
                let sem = RedisSemaphore::connect(&url, name, 3, o()).unwrap();
                let typed = |e: &Error| {
                    matches!(
                        e,
                        Error::Connection(_) | Error::LeaseExpired | Error::TimedOut
                    )
                };
                while !stop.load(Ordering::Relaxed) {
                    match sem.acquire_timeout(1, Duration::from_secs(5)) {
                        Ok(p) => {
                            grants.fetch_add(1, Ordering::Relaxed);
                            times.lock().unwrap().push(Instant::now());
                            std::thread::sleep(Duration::from_millis(3));
                            if let Err(e) = p.release() {
                                errors.lock().unwrap().push(format!("release: {e:?}"));
                                assert!(typed(&e), "release: {e:?}");
                            }
                        }
                        Err(e) => {
                            errors.lock().unwrap().push(format!("acquire: {e:?}"));
                            assert!(typed(&e), "acquire: {e:?}");
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            })
        })
        .collect();
    eventually("grants under load", Duration::from_secs(10), || {
        grants.load(Ordering::Relaxed) > 50
    });
    let mut pauses = Vec::new();
    for round in 0..2 {
        let via = (0..c.nodes.len())
            .find(|&i| c.nodes[i].is_running())
            .unwrap();
        let master = c.owner_of(slot, via);
        let replica = c.replica_of(master, via);
        // A replica promoted before it had the semaphore would hold none of
        // it: every client then fails with StateLost, by design (a Redis
        // that lost the state is refused, not trusted).
        eventually(
            "the replica has the semaphore",
            Duration::from_secs(30),
            || {
                let mut r = c.nodes[replica].raw();
                let _: redis::RedisResult<()> = redis::cmd("READONLY").query(&mut r);
                redis::cmd("EXISTS")
                    .arg(format!("{{volt-sem:{name}}}:meta"))
                    .query::<i64>(&mut r)
                    .is_ok_and(|n| n == 1)
            },
        );
        eprintln!("round {round}: killing node {master}, replica {replica}");
        let killed = Instant::now();
        c.nodes[master].stop();
        let before = grants.load(Ordering::Relaxed);
        eventually(
            &format!("grants after failover {round}"),
            Duration::from_secs(30),
            || grants.load(Ordering::Relaxed) > before + 20,
        );
        // The longest time without a grant from the kill until they resumed
        // (reported, not asserted).
        let resumed = Instant::now();
        let mut t: Vec<Instant> = times.lock().unwrap().clone();
        t.sort();
        let pause = t
            .windows(2)
            .filter(|w| w[1] > killed && w[0] < resumed)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or_default();
        pauses.push(pause);
        eprintln!("round {round}: longest pause between grants {pause:?}");
        assert_eq!(
            c.owner_of(slot, replica),
            replica,
            "the replica was promoted"
        );
        // The killed master comes back (same port and nodes.conf, no data)
        // and rejoins as a replica of the promoted one.
        c.nodes[master].restart_empty();
        eventually("the old master in sync", Duration::from_secs(30), || {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query(&mut c.nodes[master].raw())
                .unwrap_or_default();
            info.contains("master_link_status:up")
        });
    }
    eprintln!("stopping");
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let errors = errors.lock().unwrap().clone();
    eprintln!(
        "failovers: longest pauses between grants {pauses:?}; {} errors: {errors:?}",
        errors.len()
    );
    // Every session is gone (ended, or expired with its lease): every
    // permit is back.
    let me = RedisSemaphore::connect(&url, name, 3, o()).unwrap();
    eventually("every permit back", Duration::from_secs(15), || {
        let cs = me.census().unwrap();
        assert!(cs.conserved(), "{cs:?}");
        cs.available == 3 && cs.sessions == 1
    });
}
